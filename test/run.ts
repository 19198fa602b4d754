// `npm test`: one PostgreSQL, one migrated template database, a test certificate, then node:test
// over every test file; each file clones the template into a database of its own.
// `npm run test:faults` is the same with `--faults`: the fault suite (test/faults/*.fault.ts),
// one file at a time, ending with the table of figures its files recorded (test/support/figures.ts).
// Every temporary file of the run, this process's and every test process's, is made under one
// directory of the run's own (TMPDIR), removed at the end however the run ended; whatever a test
// left there is named, and fails the run. TEST_KEEP_TMP=1 keeps it all for looking into.
// On a PostgreSQL of one's own (DATABASE_URL) the databases and roles the run made are dropped
// at the end the same way, however it ended (test/support/postgres.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { release } from '../bin/release.ts';
import { selfSigned } from '../gateway/tls.ts';
import { readConfig } from '../lib/config.ts';
import { createLogger } from '../lib/log.ts';
import { connectionRefused } from '../lib/open-database.ts';
import { oneLine, StartupError } from '../lib/startup-error.ts';
import { databaseMade } from './citus/databases.ts';
import { printFigures } from './support/figures.ts';
import {
  checkMayMakeTestObjects, dropTestObjects, newRunPrefix, PREFIX_VARIABLE, startTestPostgres, type TestPostgres,
} from './support/postgres.ts';

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

/**
 * The test runner leads a process group of its own, its test files and what they start in it: a
 * signal reaches all of them, and whatever of it outlives the runner is killed before the run's
 * databases are dropped, so that nothing makes one after.
 */
let tests: ChildProcess | undefined;
let interrupted = false;

function signalTests(signal: NodeJS.Signals): void {
  if (tests?.pid === undefined) return;
  try {
    process.kill(-tests.pid, signal);
  } catch {
    // The group is gone already.
  }
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  // The tests stop; what follows them (the databases dropped, the files removed) still happens.
  process.once(signal, () => {
    interrupted = true;
    console.log(`# ${signal}: stopping the tests`);
    signalTests(signal);
  });
}

/** Drops what the run made on a PostgreSQL of one's own; false when something is left there. */
async function dropWhatTheRunMade(adminUrl: string, prefix: string): Promise<boolean> {
  try {
    const dropped = await dropTestObjects(adminUrl, prefix);
    const roles = dropped.roles > 0 ? ` and ${dropped.roles} test role${dropped.roles === 1 ? '' : 's'}` : '';
    console.log(`# dropped ${dropped.databases} test database${dropped.databases === 1 ? '' : 's'}${roles}`);
    if (dropped.failed.length === 0) return true;
    console.log(`# not ok: not dropped: ${dropped.failed.join('; ')}`);
  } catch (err) {
    console.log(`# not ok: the test databases (${prefix}*) were not dropped: ${oneLine(err)}`);
  }
  return false;
}

/** Set when something the run made on a PostgreSQL of its own could not be dropped: the run fails. */
let leftInDatabase = false;

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
  const prefix = newRunPrefix();
  const templateDb = `${prefix}template`;
  let madeAny = false;
  try {
    const admin = new pg.Client({ connectionString: postgres.adminUrl });
    await admin.connect().catch((err: unknown) => {
      throw connectionRefused(err, admin) ?? new StartupError(`cannot connect to the PostgreSQL of this run (${postgres.kind}): ${oneLine(err)}`);
    });
    let version: string;
    try {
      await checkMayMakeTestObjects(admin);
      version = (await admin.query('SHOW server_version')).rows[0].server_version as string;
      madeAny = true;
      await admin.query(`CREATE DATABASE ${templateDb}`);
      await databaseMade(admin, postgres.adminUrl, templateDb);
    } finally {
      await admin.end();
    }
    await release(readConfig({}), log, withDatabase(postgres.adminUrl, templateDb));
    console.log(`# PostgreSQL for this run: ${postgres.kind} (server ${version})`);

    mkdirSync(ownDir);
    const tls = await selfSigned();
    writeFileSync(path.join(ownDir, 'cert.pem'), tls.cert);
    writeFileSync(path.join(ownDir, 'key.pem'), tls.key);
    // The tests' webhook receivers serve a certificate of their own, trusted as an operator trusts a
    // private CA: through NODE_EXTRA_CA_CERTS, which Node reads once at start. The service's own
    // test certificate stays untrusted unless a client names it.
    const receiverTls = await selfSigned();
    writeFileSync(path.join(ownDir, 'receiver-cert.pem'), receiverTls.cert);
    writeFileSync(path.join(ownDir, 'receiver-key.pem'), receiverTls.key);
    const extraCas = process.env.NODE_EXTRA_CA_CERTS ? `${readFileSync(process.env.NODE_EXTRA_CA_CERTS, 'utf8')}\n` : '';
    writeFileSync(path.join(ownDir, 'extra-cas.pem'), `${extraCas}${receiverTls.cert}`);

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
      detached: true,
      env: {
        ...process.env,
        TEST_PG_ADMIN_URL: postgres.adminUrl,
        TEST_TEMPLATE_DB: templateDb,
        [PREFIX_VARIABLE]: prefix,
        TEST_TLS_CERT_FILE: path.join(ownDir, 'cert.pem'),
        TEST_TLS_KEY_FILE: path.join(ownDir, 'key.pem'),
        TEST_RECEIVER_CERT_FILE: path.join(ownDir, 'receiver-cert.pem'),
        TEST_RECEIVER_KEY_FILE: path.join(ownDir, 'receiver-key.pem'),
        NODE_EXTRA_CA_CERTS: path.join(ownDir, 'extra-cas.pem'),
        TEST_PG_KIND: postgres.kind,
        TEST_FIGURES_FILE: figuresFile,
      },
    });
    const code = await new Promise<number>((resolve) => child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
    signalTests('SIGKILL');
    if (faults) printFigures(figuresFile);
    console.log(`# PostgreSQL for this run: ${postgres.kind} (server ${version})`);
    return code;
  } catch (err) {
    // A PostgreSQL the run cannot use (refused, or a role that may not make databases): one line.
    if (!(err instanceof StartupError)) throw err;
    process.stderr.write(`test: ${err.message}\n`);
    return 1;
  } finally {
    // A throwaway server goes with everything in it; one of one's own keeps only what it had.
    if (madeAny && postgres.kind === 'DATABASE_URL') leftInDatabase = !(await dropWhatTheRunMade(postgres.adminUrl, prefix));
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
  if (leftInDatabase) code = 1;
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
