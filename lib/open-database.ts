// Which PostgreSQL a process uses: DATABASE_URL, or the embedded server under DATA_DIR.
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { APP_ROLE } from './app-role.ts';
import type { Config } from './config.ts';
import { ensureDatabase, otherSessions, startEmbedded, stopServerOf, type EmbeddedServer } from './embedded-server.ts';
import { errorFields, type Logger } from './log.ts';
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
  if (config.databaseUrl) {
    await checkDatabase(config, log, config.databaseUrl);
    return { ownerUrl: config.databaseUrl, url: config.databaseUrl, embedded: false, release: async () => {} };
  }
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
const TABLE_RIGHTS = ['SELECT', 'INSERT', 'UPDATE', 'DELETE'];

/**
 * DATABASE_URL is tried before the process says it has started: a role the server refuses
 * (password, CONNECT, no such database) or that lacks the rights the service needs stops it
 * with one line naming what is missing. A server that does not answer stops nothing: the web
 * process answers 503 until it does, the worker fails on its own.
 */
export async function checkDatabase(config: Config, log: Logger, url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: config.dbConnectTimeoutMs, statement_timeout: config.dbStatementTimeoutMs });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    const refused = connectionRefused(err, client);
    if (refused) throw refused;
    log.debug({ err: errorFields(err) }, 'database not checked: it does not answer');
    return;
  }
  try {
    const missing = await missingRights(client);
    if (missing) throw new StartupError(missing);
  } catch (err) {
    if (err instanceof StartupError) throw err;
    log.debug({ err: errorFields(err) }, 'database rights not checked');
  } finally {
    await client.end().catch(() => {});
  }
}

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

interface Rights {
  role: string;
  database: string;
  migrated: boolean;
  appRole: boolean;
  createOnDatabase: boolean;
  schemas: Array<{ name: string; usage: boolean; create: boolean }>;
  /** The service's tables (those owned as schema_migrations is) and the rights on them the role lacks. */
  tables: Array<{ name: string; lacking: string[] }>;
}

/**
 * What the role lacks, as one line, or undefined. A migrated database needs what pms_app is
 * granted (sql/roles/app_grants.sql); one with no tables yet, what release needs to make them.
 * Read from the catalogs, which need no right on the schemas.
 */
async function missingRights(client: pg.Client): Promise<string | undefined> {
  const { rows: [rights] } = await client.query<Rights>(`
    WITH migrations AS (
      SELECT c.relowner FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relname = 'schema_migrations')
    SELECT current_user AS role, current_database() AS database,
      EXISTS (SELECT 1 FROM migrations) AS migrated,
      EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1) AS "appRole",
      has_database_privilege(current_database(), 'CREATE') AS "createOnDatabase",
      (SELECT coalesce(json_agg(json_build_object('name', nspname, 'usage', has_schema_privilege(oid, 'USAGE'),
         'create', has_schema_privilege(oid, 'CREATE')) ORDER BY nspname), '[]')
       FROM pg_namespace WHERE nspname IN ('public', 'pgboss')) AS schemas,
      (SELECT coalesce(json_agg(json_build_object('name', t.name, 'lacking', t.lacking) ORDER BY t.name), '[]') FROM (
         SELECT n.nspname || '.' || c.relname AS name, array_agg(p.privilege ORDER BY p.i) AS lacking
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         CROSS JOIN unnest($2::text[]) WITH ORDINALITY AS p (privilege, i)
         WHERE n.nspname IN ('public', 'pgboss') AND c.relkind IN ('r', 'p')
           AND c.relowner IN (SELECT relowner FROM migrations) AND NOT has_table_privilege(c.oid, p.privilege)
         GROUP BY 1) t) AS tables`, [APP_ROLE, TABLE_RIGHTS]);
  const { role, database, migrated, appRole, createOnDatabase, schemas, tables } = rights!;
  const who = `DATABASE_URL's role "${role}"`;
  const lacking: string[] = [];
  if (migrated) {
    for (const { name, usage } of schemas) if (!usage) lacking.push(`USAGE on schema ${name}`);
    if (tables.length > 0) {
      const privileges = TABLE_RIGHTS.filter((p) => tables.some((t) => t.lacking.includes(p)));
      const names = tables.slice(0, 2).map((t) => t.name).join(', ') + (tables.length > 2 ? ', …' : '');
      lacking.push(`${privileges.join(', ')} on ${tables.length} table${tables.length === 1 ? '' : 's'} (${names})`);
    }
    if (lacking.length === 0) return undefined;
    const fix = appRole
      ? `Make it a member of ${APP_ROLE}, to which release grants them (GRANT ${APP_ROLE} TO ${sqlName(role)}).`
      : `Role ${APP_ROLE} does not exist: run release as a role that may create roles, then GRANT ${APP_ROLE} TO ${sqlName(role)}.`;
    return `${who} lacks rights it needs in database "${database}": ${lacking.join('; ')}. ${fix}`;
  }
  const pub = schemas.find((s) => s.name === 'public');
  if (!pub?.usage) lacking.push('USAGE on schema public');
  if (!pub?.create) lacking.push('CREATE on schema public');
  if (!schemas.some((s) => s.name === 'pgboss') && !createOnDatabase) lacking.push(`CREATE on database "${database}" (for schema pgboss)`);
  if (lacking.length === 0) return undefined;
  return `database "${database}" has no tables yet, and ${who} may not make them: it needs ${lacking.join(', ')}. `
    + 'Run release as the database\'s owner, or grant the role what it lacks.';
}
