// The database host: Debian's PostgreSQL 15 (a throwaway cluster, run as postgres) and PgBouncer in
// front of it, both in the db namespace. The test process reaches both through their Unix
// sockets, which no network cut touches.
import { chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { HOSTS, run } from './hosts.ts';
import { PROGRAMS } from './packages.ts';
import { HostProcess } from './processes.ts';

export const PG_PORT = 5432;
export const PGBOUNCER_PORT = 6432;
export const DATABASE = 'pms';
export const ROLES = { owner: 'pms_owner', web: 'pms_web', admin: 'pgbouncer_admin' } as const;
const READY_MS = 30_000;

/**
 * What the fleet's PostgreSQL runs with beyond a throwaway cluster's flags (docs/deploy.md). The
 * keepalives end the sessions of a client host gone silent, and with them its locks.
 */
export const SERVER_SETTINGS: Record<string, string> = {
  max_connections: '200',
  tcp_keepalives_idle: '5',
  tcp_keepalives_interval: '2',
  tcp_keepalives_count: '3',
  tcp_user_timeout: '10000',
};
const THROWAWAY: Record<string, string> = { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' };

/** A configuration template with its ${NAME} placeholders filled in. */
export function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\$\{(\w+)\}/g, (_whole, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`template value ${name} not given`);
    return value;
  });
}

function postgresIds(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('no user postgres (Debian\'s postgresql-common makes it)');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

export class DatabaseHost {
  readonly dir: string;
  readonly passwords: { owner: string; web: string; admin: string };
  readonly pgSocketDir: string;
  readonly bouncerSocketDir: string;
  postgres: HostProcess | undefined;
  pgbouncer: HostProcess | undefined;
  readonly #ids = postgresIds();

  constructor(dir: string, passwords: { owner: string; web: string; admin: string }) {
    this.dir = dir;
    this.passwords = passwords;
    this.pgSocketDir = path.join(dir, 'pg-socket');
    this.bouncerSocketDir = path.join(dir, 'pgbouncer-socket');
  }

  #ownedDir(dir: string, mode: number): string {
    mkdirSync(dir, { recursive: true, mode });
    chownSync(dir, this.#ids.uid, this.#ids.gid);
    return dir;
  }

  get dataDir(): string {
    return path.join(this.dir, 'pg-data');
  }

  /** The service's URL of a role: to PostgreSQL itself, or through PgBouncer. */
  url(role: 'owner' | 'web', via: 'postgres' | 'pgbouncer' = 'postgres', database = DATABASE): string {
    const port = via === 'postgres' ? PG_PORT : PGBOUNCER_PORT;
    return `postgres://${ROLES[role]}:${this.passwords[role]}@${HOSTS.db}:${port}/${database}`;
  }

  /** The superuser, through the Unix socket (the test's own checks). */
  adminConfig(database = DATABASE): pg.PoolConfig {
    return { host: this.pgSocketDir, port: PG_PORT, user: 'postgres', database };
  }

  /** A role through PgBouncer's Unix socket (the test's probes of what pooling keeps). */
  bouncerConfig(database: string, role: 'web' | 'admin' = 'web'): pg.ClientConfig {
    return { host: this.bouncerSocketDir, port: PGBOUNCER_PORT, user: ROLES[role], password: this.passwords[role], database };
  }

  async start(): Promise<void> {
    this.#ownedDir(this.dataDir, 0o700);
    this.#ownedDir(this.pgSocketDir, 0o755);
    const asPostgres = [PROGRAMS.setpriv, '--reuid=postgres', '--regid=postgres', '--init-groups', '--'];
    await run(asPostgres[0]!, [...asPostgres.slice(1), PROGRAMS.initdb, '-D', this.dataDir, '-U', 'postgres', '-E', 'UTF8', '--locale=C',
      '--auth-local=trust', '--auth-host=scram-sha-256'], { timeoutMs: 120_000 });
    writeFileSync(path.join(this.dataDir, 'pg_hba.conf'), [
      'local all all trust',
      'host all all 10.77.0.0/24 scram-sha-256',
      '',
    ].join('\n'));
    const settings = { ...THROWAWAY, ...SERVER_SETTINGS, listen_addresses: HOSTS.db, port: String(PG_PORT), unix_socket_directories: this.pgSocketDir };
    this.postgres = new HostProcess('postgres', 'db', [PROGRAMS.postgres, '-D', this.dataDir,
      ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`])], path.join(this.dir, 'postgres.log'), { user: 'postgres' });
    await this.postgres.waitUntil('readiness', () => this.postgres!.output().includes('ready to accept connections'), READY_MS);

    const admin = new pg.Client(this.adminConfig('postgres'));
    await admin.connect();
    try {
      const literal = (text: string) => admin.escapeLiteral(text);
      await admin.query(`CREATE ROLE ${ROLES.owner} LOGIN PASSWORD ${literal(this.passwords.owner)}`);
      await admin.query('CREATE ROLE pms_app NOLOGIN');
      await admin.query(`CREATE ROLE ${ROLES.web} LOGIN PASSWORD ${literal(this.passwords.web)} IN ROLE pms_app`);
      // Through PgBouncer the startup parameter is dropped: the role's own setting is what holds.
      await admin.query(`ALTER ROLE ${ROLES.web} SET statement_timeout = '5s'`);
      await admin.query(`CREATE DATABASE ${DATABASE} OWNER ${ROLES.owner}`);
    } finally {
      await admin.end();
    }
  }

  async startPgBouncer(): Promise<void> {
    const confDir = this.#ownedDir(path.join(this.dir, 'pgbouncer'), 0o700);
    this.#ownedDir(this.bouncerSocketDir, 0o755);
    const userlist = path.join(confDir, 'userlist.txt');
    writeFileSync(userlist, [
      `"${ROLES.web}" "${this.passwords.web}"`,
      `"${ROLES.admin}" "${this.passwords.admin}"`,
      '',
    ].join('\n'), { mode: 0o600 });
    const ini = path.join(confDir, 'pgbouncer.ini');
    writeFileSync(ini, fill(readFileSync(path.join(import.meta.dirname, 'pgbouncer.ini'), 'utf8'), {
      PG_SOCKET_DIR: this.pgSocketDir, LISTEN_ADDR: HOSTS.db, SOCKET_DIR: this.bouncerSocketDir, USERLIST: userlist,
    }));
    for (const file of [userlist, ini]) chownSync(file, this.#ids.uid, this.#ids.gid);
    this.pgbouncer = new HostProcess('pgbouncer', 'db', [PROGRAMS.pgbouncer, ini], path.join(this.dir, 'pgbouncer.log'), { user: 'postgres' });
    await this.pgbouncer.waitUntil('its listening line', () => /listening on .*6432/.test(this.pgbouncer!.output()), READY_MS);
  }

  async stop(): Promise<void> {
    await this.pgbouncer?.stop('SIGINT', 5000);
    // SIGINT: PostgreSQL's fast shutdown.
    await this.postgres?.stop('SIGINT', 10_000);
  }
}
