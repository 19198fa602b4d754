// `npm run bench:serve`: the benchmark's setting, held open for measuring by hand. A throwaway
// embedded PostgreSQL with pg_stat_statements (planning times too), release, then web and worker
// as the Procfile runs them, and one project. Prints BASE, KEY, DATABASE and the web and worker
// pids as shell assignments, then waits for Ctrl-C. For example:
//   eval "$(npm run -s bench:serve | head -5)"   (in one shell; keep it running)
//   npx autocannon -c 32 -d 10 -H "authorization=Bearer $KEY" "$BASE/v1/key"
//   psql "$DATABASE" -c 'SELECT calls, total_exec_time, total_plan_time, query FROM pg_stat_statements ORDER BY 2 DESC LIMIT 10'
// Extra node flags for the web and worker processes (e.g. --cpu-prof): SERVE_NODE_FLAGS.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbedded } from '../lib/embedded-server.ts';
import { createLogger } from '../lib/log.ts';
import { StartupError } from '../lib/startup-error.ts';
import { procfileArgs, procfileEnv } from '../lib/procfile.ts';
import { Children } from './children.ts';
import { certificateFiles } from './setup.ts';
import { freePort } from '../test/support/ports.ts';

const log = createLogger('warn', 'bench-serve', 2);
const scratch = mkdtempSync(path.join(tmpdir(), 'pms-serve-'));
const server = await startEmbedded({
  dir: path.join(scratch, 'pg'), port: await freePort(), log, persistent: false, settings: { dir: 'TMPDIR', port: null },
  flags: ['-c', 'shared_preload_libraries=pg_stat_statements', '-c', 'pg_stat_statements.track=all', '-c', 'pg_stat_statements.track_planning=on'],
}).catch((err: unknown) => {
  // The embedded PostgreSQL could not start: one line, no stack.
  if (!(err instanceof StartupError)) throw err;
  process.stderr.write(`bench:serve: ${err.message}\n`);
  process.exit(1);
});
const databaseUrl = server.url('postgres');
const admin = new pg.Client({ connectionString: databaseUrl });
await admin.connect();
await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
await admin.end();

const certificate = await certificateFiles(scratch);
const port = await freePort();
const env = {
  DATABASE_URL: databaseUrl, PORT: String(port), HTTP_PORT: String(await freePort()), HOST: '127.0.0.1',
  ...certificate, LOG_LEVEL: process.env.LOG_LEVEL || 'info',
};
const extraFlags = (process.env.SERVE_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const children = new Children();

await children.output(procfileArgs('release'), env);
const web = children.start([...extraFlags, ...procfileArgs('web')], { ...env, ...procfileEnv('web') });
const worker = children.start([...extraFlags, ...procfileArgs('worker')], env);
const made = JSON.parse(await children.output(['bin/workspace.ts', 'project', 'create', '--name', 'bench-serve'], env));
console.log(`BASE=https://127.0.0.1:${port}\nKEY=${made.key.key}\nDATABASE=${databaseUrl}\nWEB_PID=${web.pid}\nWORKER_PID=${worker.pid}`);

async function stop(): Promise<void> {
  await children.stopAll();
  await server.stop();
  rmSync(scratch, { recursive: true, force: true });
  process.exit(0);
}
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
