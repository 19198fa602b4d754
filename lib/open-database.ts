// Which PostgreSQL a process uses: DATABASE_URL, or the embedded server under DATA_DIR.
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Config } from './config.ts';
import { ensureDatabase, otherSessions, startEmbedded, stopServerOf, type EmbeddedServer } from './embedded-server.ts';
import type { Logger } from './log.ts';
import { SQLSTATE } from './sqlstate.ts';
import { StartupError } from './startup-error.ts';

export interface DatabaseHandle {
  /** For `release` only: the role that owns the schema and runs migrations. */
  ownerUrl: string;
  /** For everything else: the role that reads and writes rows and nothing more (lib/app-role.ts). */
  url: string;
  embedded: boolean;
  release(): Promise<void>;
}

const EMBEDDED_DATABASE = 'pms';
/** How long this process's own sessions may take to close once its pools have ended. */
const OWN_SESSIONS_GONE_MS = 1000;

/**
 * With DATABASE_URL both are that URL: a deployment gives `release` the owner's and `web` and
 * `worker` a member of pms_app (README, "Database roles").
 */
export async function openDatabase(config: Config, log: Logger): Promise<DatabaseHandle> {
  if (config.databaseUrl) return { ownerUrl: config.databaseUrl, url: config.databaseUrl, embedded: false, release: async () => {} };
  const dir = path.join(config.dataDir, 'pg');
  const server = await startEmbedded({ dir, port: config.embeddedPgPort, log });
  await ensureDatabase(server.url('postgres'), EMBEDDED_DATABASE);
  return { ownerUrl: server.url(EMBEDDED_DATABASE), url: server.appUrl(EMBEDDED_DATABASE), embedded: true, release: () => leave(server, dir, log) };
}

/**
 * The embedded server is shared by every process of this checkout that finds it running (web,
 * worker, `npm start`, the workspace): the last one to leave stops it, whoever started it. One
 * that leaves while another process still has a session there leaves it running: the workspace
 * command that started it must not take the database from the `npm start` that came up meanwhile,
 * nor a web process restarted alone from its worker. Called once this process's own pools are
 * closed. Two leaving at the same moment may each see the other and both leave it running; the
 * next to start finds it and uses it.
 */
async function leave(server: EmbeddedServer, dir: string, log: Logger): Promise<void> {
  // A pool's end() resolves before its connections are gone: this process's own sessions may
  // still show for a few milliseconds. Another process's stay.
  let others = 0;
  for (const deadline = Date.now() + OWN_SESSIONS_GONE_MS; ; await sleep(50)) {
    others = await otherSessions(server.url('postgres')).catch(() => 0);
    if (others === 0 || Date.now() >= deadline) break;
  }
  if (others > 0) {
    log.info({ sessions: others }, 'embedded PostgreSQL left running: other processes use it');
    return;
  }
  if (server.started) await server.stop();
  else await stopServerOf(dir);
}

/** A connection the server refuses for good (lib/sqlstate.ts has those the service branches on). */
const INVALID_AUTHORIZATION = '28000';
const NO_SUCH_DATABASE = '3D000';

/** An identifier as it is typed in SQL: quoted only where it must be. */
export function sqlName(name: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(name) ? name : pg.escapeIdentifier(name);
}

/** Why the server refused the connection for good, as one line; undefined for a server that does not answer. */
export function connectionRefused(err: unknown, client: pg.Client): StartupError | undefined {
  const { code, message } = err as { code?: string; message?: string };
  const role = client.user ?? '';
  const database = client.database ?? role;
  const server = `${client.host}:${client.port}`;
  switch (code) {
    case SQLSTATE.invalidPassword:
      return new StartupError(`DATABASE_URL's role "${role}" cannot log in to ${server}: the server refused its password (or has no such role). Correct the user or the password in DATABASE_URL.`);
    case INVALID_AUTHORIZATION:
      return new StartupError(`DATABASE_URL cannot log in to ${server}: ${message}.`);
    case SQLSTATE.insufficientPrivilege:
      return new StartupError(`DATABASE_URL's role "${role}" may not connect to database "${database}": it needs CONNECT on it (GRANT CONNECT ON DATABASE ${sqlName(database)} TO ${sqlName(role)}).`);
    case NO_SUCH_DATABASE:
      return new StartupError(`DATABASE_URL names database "${database}", which does not exist on ${server}: create it (CREATE DATABASE ${sqlName(database)} OWNER ${sqlName(role)}) or correct DATABASE_URL.`);
    default:
      return undefined;
  }
}
