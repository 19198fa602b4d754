// `npm test`: one PostgreSQL, one migrated template database, a test certificate, then node:test
// over every test file; each file clones the template into a database of its own.
// `npm run test:faults` is the same with `--faults`: the fault suite (test/faults/*.fault.ts),
// one file at a time, ending with the table of figures its files recorded (test/support/figures.ts).
// Every temporary file of the run, this process's and every test process's, is made under one
// directory of the run's own (TMPDIR), removed at the end however the run ended; whatever a test
// left there is named, and fails the run. TEST_KEEP_TMP=1 keeps it all for looking into.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { release } from '../bin/release.ts';
import { selfSigned } from '../gateway/tls.ts';
import { readConfig } from '../lib/config.ts';
import { createLogger } from '../lib/log.ts';
import { StartupError } from '../lib/startup-error.ts';
import { printFigures } from './support/figures.ts';
import { startTestPostgres, type TestPostgres } from './support/postgres.ts';

const TEMPLATE_DB = 'pms_test_template';
const log = createLogger(process.env.LOG_LEVEL ?? 'warn', 'test-run', 2);
/**
 * How long the run's PostgreSQL gets to stop. A Ctrl-C reaches an embedded one too, which then
 * stops by itself, and its stop() would wait for an exit that has already happened.
 */
const POSTGRES_STOP_MS = 10_000;
const keep = Boolean(process.env.TEST_KEEP_TMP);

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

async function stopPostgres(postgres: TestPostgres): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => { timer = setTimeout(resolve, POSTGRES_STOP_MS); });
  await Promise.race([postgres.stop().catch((err) => console.log(`# PostgreSQL did not stop cleanly: ${err}`)), timeout]);
  clearTimeout(timer);
}

let tests: ChildProcess | undefined;
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  // The tests stop; what follows them (the database stopped, the files removed) still happens.
  process.once(signal, () => {
    interrupted = true;
    console.log(`# ${signal}: stopping the tests`);
    tests?.kill(signal);
  });
}

async function runTests(runTmp: string): Promise<number> {
  const postgres = await startTestPostgres(log).catch((err: unknown) => {
    // The embedded PostgreSQL could not start: one line naming the cause and the fix, no stack.
    if (!(err instanceof StartupError)) throw err;
    process.stderr.write(`test: ${err.message}\n`);
    return undefined;
  });
  if (!postgres) return 1;
  // The run's own: the test certificate and the figures the fault suite records.
  const ownDir = path.join(runTmp, 'run-tls');
  try {
    const admin = new pg.Client({ connectionString: postgres.adminUrl });
    await admin.connect();
    const version = (await admin.query('SHOW server_version')).rows[0].server_version as string;
    await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB}`);
    await admin.query(`CREATE DATABASE ${TEMPLATE_DB}`);
    await admin.end();
    await release(readConfig({}), log, withDatabase(postgres.adminUrl, TEMPLATE_DB));
    console.log(`# PostgreSQL for this run: ${postgres.kind} (server ${version})`);

    mkdirSync(ownDir);
    const tls = await selfSigned();
    writeFileSync(path.join(ownDir, 'cert.pem'), tls.cert);
    writeFileSync(path.join(ownDir, 'key.pem'), tls.key);

    const faults = process.argv.includes('--faults');
    const files = process.argv.slice(2).filter((arg) => arg !== '--faults');
    const figuresFile = path.join(ownDir, 'figures.jsonl');
    if (interrupted) return 1;
    const child = tests = spawn(process.execPath, [
      '--test',
      // Fault files kill processes, stop databases and load the machine: one at a time.
      `--test-concurrency=${faults ? 1 : (process.env.TEST_CONCURRENCY ?? 3)}`,
      `--test-timeout=${faults ? 900_000 : 120_000}`,
      ...(files.length ? files : [faults ? 'test/faults/*.fault.ts' : 'test/**/*.test.ts']),
    ], {
      stdio: 'inherit',
      env: {
        ...process.env,
        TEST_PG_ADMIN_URL: postgres.adminUrl,
        TEST_TEMPLATE_DB: TEMPLATE_DB,
        TEST_TLS_CERT_FILE: path.join(ownDir, 'cert.pem'),
        TEST_TLS_KEY_FILE: path.join(ownDir, 'key.pem'),
        TEST_PG_KIND: postgres.kind,
        TEST_FIGURES_FILE: figuresFile,
      },
    });
    const code = await new Promise<number>((resolve) => child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
    if (faults) printFigures(figuresFile);
    console.log(`# PostgreSQL for this run: ${postgres.kind} (server ${version})`);
    return code;
  } finally {
    await stopPostgres(postgres);
    if (!keep) rmSync(ownDir, { recursive: true, force: true });
  }
}

const runTmp = mkdtempSync(path.join(tmpdir(), 'pms-run-'));
process.env.TMPDIR = runTmp;
// npm and tsc keep Node's compile cache in the temporary directory; a test run needs none.
process.env.NODE_DISABLE_COMPILE_CACHE = '1';

let code = 1;
try {
  code = await runTests(runTmp);
} finally {
  if (keep) {
    console.log(`# TEST_KEEP_TMP: this run's temporary files are kept in ${runTmp}`);
  } else {
    const leftovers = readdirSync(runTmp);
    rmSync(runTmp, { recursive: true, force: true });
    if (leftovers.length > 0) {
      console.log(`# not ok: left in the temporary directory (removed now): ${leftovers.join(', ')}`);
      code = 1;
    }
  }
}
process.exit(code);
