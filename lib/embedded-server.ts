// The embedded PostgreSQL (an npm package's binaries, run by lib/embedded-programs.ts), used when no
// DATABASE_URL is given. Whoever finds it not running starts it; others connect to the one
// running: the one on the port that accepts this checkout's password. The service's processes
// share it, and the last one to leave stops it (lib/open-database.ts).
// Every reason it cannot start is a StartupError: one line naming the cause and what to do.
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { APP_ROLE, ensureAppLogin } from './app-role.ts';
import {
  ServerExit, causeIn, initdb, orDatabaseUrl, prepareRunner, reasonOf, startServer, startupError,
  type Runner, type RunnerOptions, type ServerProcess,
} from './embedded-programs.ts';
import type { Logger } from './log.ts';
import { SQLSTATE } from './sqlstate.ts';

export interface EmbeddedServer {
  /** Connection string of the given database on the server, as its superuser. */
  url(database: string): string;
  /** The same as pms_app, the role web and worker use (lib/app-role.ts). */
  appUrl(database: string): string;
  /** Stops the server if this process started it. */
  stop(): Promise<void>;
  /** This process started the server (else it found it running). */
  started: boolean;
}

/** The settings a person changes to get past a failure, named in its message (null: none applies). */
export interface EmbeddedSettings {
  dir: string | null;
  port: string | null;
}

export interface EmbeddedOptions {
  dir: string;
  port: number;
  log: Logger;
  /** Extra `postgres` flags, e.g. durability off for throwaway test clusters. */
  flags?: string[];
  /** Leave the data in place on stop (false: delete it). */
  persistent?: boolean;
  /** Default: DATA_DIR and EMBEDDED_PG_PORT, the service's own. */
  settings?: EmbeddedSettings;
  /** Where the binaries come from (tests). */
  binaries?: RunnerOptions;
}

const SUPERUSER = 'postgres';
const SERVER_FLAGS = ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=400'];
const CONNECT_PROBE_MS = 1000;
/** A server of this checkout still starting (or recovering) is waited for this long. */
const STARTING_WAIT_MS = 60_000;
/** Starts lost to another process of this checkout starting the same server at the same moment. */
const START_ATTEMPTS = 3;
const UNIQUE = (code?: string) => code === 'EEXIST' || code === 'ENOTEMPTY';

type Probe =
  | { state: 'ready' }
  | { state: 'free' }
  | { state: 'starting' }
  | { state: 'foreign'; reason: string }
  | { state: 'alien' };

/** What answers on the port: this checkout's server, nothing, or something else. */
async function probe(url: string): Promise<Probe> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: CONNECT_PROBE_MS });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return { state: 'ready' };
  } catch (err) {
    const { code, severity, message } = err as { code?: string; severity?: string; message?: string };
    if (code === 'ECONNREFUSED') return { state: 'free' };
    // Starting up, recovering, or shutting down.
    if (code === SQLSTATE.cannotConnectNow) return { state: 'starting' };
    // An error from the server itself (a password refused, no such database) or from its SCRAM.
    if (severity || /^SASL/.test(message ?? '')) return { state: 'foreign', reason: reasonOf(err) };
    return { state: 'alien' };
  } finally {
    await client.end().catch(() => {});
  }
}

/** Waits out a server that is starting; 'ready' or 'free', else the port is someone else's. */
async function settle(url: string, port: number, settings: EmbeddedSettings): Promise<'ready' | 'free'> {
  const deadline = Date.now() + STARTING_WAIT_MS;
  const named = settings.port ? ` (${settings.port})` : '';
  const fix = orDatabaseUrl(settings.port ? `Set ${settings.port} to a free port` : 'Try again');
  for (;;) {
    const found = await probe(url);
    if (found.state === 'ready' || found.state === 'free') return found.state;
    if (found.state === 'starting') {
      if (Date.now() < deadline) {
        await sleep(250);
        continue;
      }
      throw startupError(`port ${port}${named} has answered "the database system is starting up" for ${STARTING_WAIT_MS / 1000} s`, fix);
    }
    if (found.state === 'foreign') {
      throw startupError(`port ${port}${named} is taken by another PostgreSQL, which refuses this checkout's password (${found.reason})`, fix);
    }
    throw startupError(`port ${port}${named} is taken by another program that does not answer as PostgreSQL`, fix);
  }
}

function cannotWrite(err: unknown, fallback: string, settings: EmbeddedSettings) {
  const { path: where = fallback, code, syscall } = err as { path?: string; code?: string; syscall?: string };
  const cause = code === 'EEXIST' && syscall === 'mkdir' ? `${where} is not a directory` : `cannot write ${where} (${reasonOf(err)})`;
  return startupError(cause,
    orDatabaseUrl(settings.dir ? `Set ${settings.dir} to a directory this user can write` : `Let this user write ${path.dirname(fallback)}`));
}

/** A password made once and kept beside the data directory (`<dir>.<kind>`), readable by this user only. */
function passwordFor(dir: string, kind: string, settings: EmbeddedSettings): string {
  const file = path.join(path.dirname(dir), `${path.basename(dir)}.${kind}`);
  // Written whole, then linked into place: two processes starting at once agree on one.
  const partial = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    if (!existsSync(file)) {
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(partial, randomBytes(18).toString('base64url'), { mode: 0o600 });
      try {
        linkSync(partial, file);
      } catch (err) {
        if (!UNIQUE((err as { code?: string }).code)) throw err;
      } finally {
        rmSync(partial, { force: true });
      }
    }
    return readFileSync(file, 'utf8').trim();
  } catch (err) {
    // Named by the directory rather than by a passing file name.
    if ((err as { path?: string }).path === partial) (err as { path?: string }).path = path.dirname(file);
    throw cannotWrite(err, file, settings);
  }
}

/**
 * A new cluster, made in a directory of its own beside `dir` and renamed into place: a process
 * that dies half-way leaves no half-made cluster, and of two processes making it at once, one wins.
 */
async function initialise(runner: Runner, dir: string, password: string, settings: EmbeddedSettings): Promise<void> {
  let fresh: string | undefined;
  let passwordFile: string | undefined;
  try {
    try {
      await fs.mkdir(path.dirname(dir), { recursive: true });
      fresh = await fs.mkdtemp(`${dir}.init-`);
      passwordFile = `${fresh}.pw`;
      await fs.writeFile(passwordFile, `${password}\n`, { mode: 0o600, flag: 'wx' });
      if (runner.user) {
        // As root: the data belongs to the user the server runs as.
        await fs.chown(fresh, runner.user.uid, runner.user.gid);
        await fs.chown(passwordFile, runner.user.uid, runner.user.gid);
      }
    } catch (err) {
      throw cannotWrite(err, dir, settings);
    }
    await initdb(runner, fresh, { user: SUPERUSER, passwordFile, shownAs: dir });
    try {
      await fs.rename(fresh, dir);
    } catch (err) {
      // Another process of this checkout made it a moment ago: that one is used.
      if (existsSync(path.join(dir, 'PG_VERSION'))) return;
      if (UNIQUE((err as { code?: string }).code)) {
        throw startupError(`${dir} is not empty but holds no PostgreSQL cluster`,
          orDatabaseUrl(`Empty or remove it${settings.dir ? `, or set ${settings.dir} to another directory` : ''}`));
      }
      throw cannotWrite(err, dir, settings);
    }
  } finally {
    if (fresh) await fs.rm(fresh, { recursive: true, force: true });
    if (passwordFile) await fs.rm(passwordFile, { force: true });
  }
}

/** Output of a server that lost the start to another process of this checkout, or lost its port. */
const LOST_START = /lock file "postmaster\.pid" already exists|Address already in use|could not create lock file "[^"]*\.s\.PGSQL/;
/** Output of a server whose data directory a running server holds. */
const LOCKED = /lock file "postmaster\.pid" already exists/;

/** The port in the postmaster.pid of `dir` (its 4th line), if it can be read. */
function portInPidFile(dir: string): number | undefined {
  try {
    const port = Number(readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[3]);
    return Number.isInteger(port) && port > 0 ? port : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The server of `dir` runs on another port (a command run without the service's EMBEDDED_PG_PORT).
 * Its port is the way in: another DATA_DIR would open a second, empty database.
 */
function runningElsewhere(dir: string, port: number, running: number | undefined, settings: EmbeddedSettings) {
  const named = settings.port ? ` (${settings.port})` : '';
  if (running === undefined) {
    return startupError(`the server of ${dir} is already running, on another port than ${port}${named}`, orDatabaseUrl(
      `Run this command with the running service's ${settings.port ?? 'port'} (the 4th line of ${path.join(dir, 'postmaster.pid')})`));
  }
  return startupError(`the server of ${dir} is already running, on port ${running}, not on port ${port}${named}`, orDatabaseUrl(
    `Run this command with ${settings.port ? `${settings.port}=${running}` : `port ${running}`} (the running service's)`));
}

export async function startEmbedded(options: EmbeddedOptions): Promise<EmbeddedServer> {
  const settings = options.settings ?? { dir: 'DATA_DIR', port: 'EMBEDDED_PG_PORT' };
  const password = passwordFor(options.dir, 'password', settings);
  const appPassword = passwordFor(options.dir, 'app-password', settings);
  const url = (database: string) =>
    `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${options.port}/${database}`;
  const appUrl = (database: string) =>
    `postgres://${APP_ROLE}:${encodeURIComponent(appPassword)}@127.0.0.1:${options.port}/${database}`;
  let runner: Runner | undefined;
  let server: ServerProcess | undefined;
  for (let attempt = 1; !server; attempt++) {
    if ((await settle(url('postgres'), options.port, settings)) === 'ready') {
      options.log.info({ port: options.port }, 'embedded PostgreSQL already running; connecting to it');
      await ensureAppLogin(url('postgres'), appPassword);
      return { url, appUrl, stop: async () => {}, started: false };
    }
    runner ??= await prepareRunner(options.binaries);
    if (!existsSync(path.join(options.dir, 'PG_VERSION'))) await initialise(runner, options.dir, password, settings);
    const started = await startServer(runner, options.dir, options.port, [...SERVER_FLAGS, ...(options.flags ?? [])]);
    try {
      await started.ready;
      server = started;
    } catch (err) {
      if (!(err instanceof ServerExit)) throw err;
      const locked = LOCKED.test(err.output);
      const running = locked ? portInPidFile(options.dir) : undefined;
      if (running !== undefined && running !== options.port) throw runningElsewhere(options.dir, options.port, running, settings);
      // Another process of this checkout started it a moment ago, or something took the port
      // meanwhile: look again at what answers there.
      if (attempt < START_ATTEMPTS && LOST_START.test(err.output)) continue;
      if (locked && running === undefined) throw runningElsewhere(options.dir, options.port, undefined, settings);
      throw startupError(`the server of ${options.dir} stopped before accepting connections (${err.how}): ${causeIn(err.output, options.dir)}`,
        orDatabaseUrl(settings.dir ? `Fix that, or set ${settings.dir} to another directory` : 'Fix that'));
    }
  }
  const running = server;
  let stopping = false;
  running.child.once('exit', (code, signal) => {
    if (!stopping) options.log.warn({ code, signal, dir: options.dir }, 'embedded PostgreSQL exited');
  });
  const stop = async () => {
    stopping = true;
    await running.stop();
    if (options.persistent === false) await fs.rm(options.dir, { recursive: true, force: true });
  };
  options.log.info({ port: options.port, dir: options.dir, as: runner?.user ? 'postgres' : undefined }, 'embedded PostgreSQL started');
  try {
    await ensureAppLogin(url('postgres'), appPassword);
  } catch (err) {
    await stop();
    const refused = (err as { code?: string }).code === SQLSTATE.invalidPassword;
    throw startupError(refused
      ? `the server of ${options.dir} refuses the password kept in ${options.dir}.password`
      : `connecting to the server of ${options.dir} failed (${reasonOf(err)})`,
    orDatabaseUrl(refused && settings.dir ? `Put that cluster's password back in that file, or set ${settings.dir} to a new directory` : undefined));
  }
  return { url, appUrl, stop, started: true };
}

/** Sessions on the server other than the asking one's: the processes that still use it. */
export async function otherSessions(adminUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: CONNECT_PROBE_MS });
  client.on('error', () => {});
  try {
    await client.connect();
    const { rows } = await client.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()");
    return rows[0].n as number;
  } finally {
    await client.end().catch(() => {});
  }
}

/** How long a fast shutdown of a server another process started is waited for. */
const STOP_WAIT_MS = 30_000;

/**
 * Stops the server of `dir` that another process started (and has left): a fast shutdown
 * (SIGINT) of the postmaster its postmaster.pid names, waited for until that file is gone.
 */
export async function stopServerOf(dir: string): Promise<void> {
  const file = path.join(dir, 'postmaster.pid');
  const pid = existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : 0;
  if (!(pid > 0)) return;
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return;
  }
  for (const deadline = Date.now() + STOP_WAIT_MS; existsSync(file) && Date.now() < deadline;) await sleep(50);
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
        if (err.code !== SQLSTATE.duplicateDatabase) throw err;
      });
    }
  } finally {
    await client.end();
  }
}
