// One PostgreSQL for the whole run: DATABASE_URL if given, else Testcontainers where a container
// engine answers, else the embedded server. The run says which one it used. Every database and
// role the run makes there is named with the run's own prefix, by which it drops them at the end.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbedded } from '../../lib/embedded-server.ts';
import type { Logger } from '../../lib/log.ts';
import { sqlName } from '../../lib/open-database.ts';
import { StartupError } from '../../lib/startup-error.ts';
import { dropOnWorkers } from '../citus/databases.ts';
import { freePort } from './ports.ts';

export interface TestPostgres {
  kind: 'DATABASE_URL' | 'Testcontainers' | 'embedded';
  /** A database URL with the rights to create databases. */
  adminUrl: string;
  stop(): Promise<void>;
}

const CONTAINER_PROBE_MS = 5000;
const CONTAINER_IMAGE = 'postgres:17-alpine';
// A throwaway cluster: durability buys nothing and costs every test time. pg_stat_statements lets
// a test count the statements the service ran (a refusal answered without a database lookup).
const THROWAWAY_FLAGS = ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off',
  '-c', 'shared_preload_libraries=pg_stat_statements'];

async function containerEngineAnswers(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    const probe = getContainerRuntimeClient().then(() => true, () => false);
    const timeout = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), CONTAINER_PROBE_MS).unref());
    return await Promise.race([probe, timeout]);
  } catch {
    return false;
  }
}

export async function startTestPostgres(log: Logger): Promise<TestPostgres> {
  if (process.env.DATABASE_URL) {
    return { kind: 'DATABASE_URL', adminUrl: process.env.DATABASE_URL, stop: async () => {} };
  }
  if (await containerEngineAnswers()) {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const container = await new PostgreSqlContainer(CONTAINER_IMAGE).withCommand(['postgres', ...THROWAWAY_FLAGS]).start();
    return { kind: 'Testcontainers', adminUrl: container.getConnectionUri(), stop: async () => { await container.stop(); } };
  }
  // A private directory (0700) is fine: as root the server runs as the user postgres, which needs
  // no path to its data (lib/embedded-programs.ts).
  const parent = mkdtempSync(path.join(tmpdir(), 'pms-test-'));
  const dir = path.join(parent, 'pg');
  const server = await startEmbedded({
    dir, port: await freePort(), log, flags: THROWAWAY_FLAGS, persistent: false,
    // The port is a free one picked here; the directory is under TMPDIR.
    settings: { dir: 'TMPDIR', port: null },
  });
  return {
    kind: 'embedded',
    adminUrl: server.url('postgres'),
    // The data goes with the server (persistent: false); its passwords beside it go here.
    stop: async () => {
      await server.stop();
      rmSync(parent, { recursive: true, force: true });
    },
  };
}

/** The run's prefix (test/run.ts) in the test processes' environment. */
export const PREFIX_VARIABLE = 'TEST_DB_PREFIX';

/** `pms_t_<8 hex>_`: the `pms_t_` of every run, then this run's own. */
export function newRunPrefix(): string {
  return `pms_t_${randomBytes(4).toString('hex')}_`;
}

/** A name for a database or role a test makes, which the run drops at its end if the test did not. */
export function testObjectName(kind = ''): string {
  const prefix = process.env[PREFIX_VARIABLE];
  if (!prefix) throw new Error(`${PREFIX_VARIABLE} is not set: run the tests with \`npm test\` (test/run.ts)`);
  return `${prefix}${kind}${randomBytes(6).toString('hex')}`;
}

/**
 * The run makes a database per test file, and roles: a role that may not (a managed database's
 * own role) stops it at once with one line naming the right it needs.
 */
export async function checkMayMakeTestObjects(admin: pg.ClientBase): Promise<void> {
  const { rows: [role] } = await admin.query(
    'SELECT rolname, rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = current_user');
  if (role.rolsuper) return;
  const lacking = [...(role.rolcreatedb ? [] : ['CREATEDB']), ...(role.rolcreaterole ? [] : ['CREATEROLE'])];
  if (lacking.length === 0) return;
  const what = [...(role.rolcreatedb ? [] : ['databases']), ...(role.rolcreaterole ? [] : ['roles'])].join(' or ');
  throw new StartupError(`DATABASE_URL's role "${role.rolname}" may not create ${what}, which the tests make (and drop at the end): `
    + `it needs ${lacking.join(' and ')} (as a superuser: ALTER ROLE ${sqlName(role.rolname)} ${lacking.join(' ')}).`);
}

/** Whether the tests' role is a superuser; a test that needs one skips on any other. */
export async function isSuperuser(db: pg.Pool | pg.ClientBase): Promise<boolean> {
  const { rows: [row] } = await db.query("SELECT current_setting('is_superuser') = 'on' AS superuser");
  return row.superuser as boolean;
}

/** How long a database that will not drop yet (a session FORCE may not end) is tried again. */
const DROP_PATIENCE_MS = 5000;

export interface Dropped {
  databases: number;
  roles: number;
  /** What could not be dropped, and why. */
  failed: string[];
}

/** Drops every database and role named with `prefix`; FORCE ends the sessions still open. */
export async function dropTestObjects(adminUrl: string, prefix: string): Promise<Dropped> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const dropped: Dropped = { databases: 0, roles: 0, failed: [] };
  const named = async (catalog: 'pg_database' | 'pg_roles', column: 'datname' | 'rolname') =>
    (await admin.query(`SELECT ${column} AS name FROM ${catalog} WHERE starts_with(${column}, $1)`, [prefix])).rows.map((r) => r.name as string);
  try {
    for (const database of await named('pg_database', 'datname')) {
      const failure = await dropDatabase(admin, database);
      if (failure) dropped.failed.push(`database ${database} (${failure})`);
      else dropped.databases += 1;
    }
    for (const role of await named('pg_roles', 'rolname')) {
      await admin.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(role)}`).then(
        () => { dropped.roles += 1; },
        (err: Error) => { dropped.failed.push(`role ${role} (${err.message})`); });
    }
    dropped.failed.push(...await dropOnWorkers(admin, adminUrl, prefix));
  } finally {
    await admin.end();
  }
  return dropped;
}

/** Why the database could not be dropped, or undefined once it is. */
async function dropDatabase(admin: pg.Client, database: string): Promise<string | undefined> {
  for (const deadline = Date.now() + DROP_PATIENCE_MS; ; await new Promise((resolve) => setTimeout(resolve, 200))) {
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`);
      return undefined;
    } catch (err) {
      if (Date.now() >= deadline) return (err as Error).message;
    }
  }
}
