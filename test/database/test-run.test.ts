// `npm test` against a PostgreSQL of one's own (DATABASE_URL): test/run.ts drops every database it
// made, the template too, whether the tests pass or are interrupted, and says so in one line; a
// role that may not make databases stops it at once with one line naming the right. Here run.ts
// runs on a small file (run-fixture.ts) with DATABASE_URL pointed at this run's PostgreSQL.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { ROOT, runNode, serviceEnv } from '../support/cli.ts';
import { testObjectName } from '../support/postgres.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';

const FIXTURE = 'test/database/run-fixture.ts';
const ADMIN_URL = process.env.TEST_PG_ADMIN_URL!;
let admin: pg.Client;

before(async () => {
  admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
});
after(() => admin.end());

interface Made {
  pid: number;
  databases: string[];
}

/** The databases whose names start as the inner run's do (`pms_t_<run>_`), still on the server. */
async function leftOf(made: Made): Promise<string[]> {
  const prefix = made.databases[0]!.slice(0, made.databases[0]!.lastIndexOf('_') + 1);
  const { rows } = await admin.query('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [prefix]);
  return rows.map((r) => r.datname as string);
}

function runEnv(out: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return serviceEnv({ DATABASE_URL: ADMIN_URL, RUN_FIXTURE_OUT: out, ...extra });
}

test('a run that passes drops its template and every database its tests made, and says how many', async () => {
  const out = path.join(tempDir('pms-inner-run-'), 'made.json');
  const outcome = await runNode(['test/run.ts', FIXTURE], { env: runEnv(out), timeoutMs: 120_000 });
  assert.equal(outcome.code, 0, `${outcome.stdout}\n${outcome.stderr}`);
  assert.match(outcome.stdout, /^# dropped 3 test databases$/m);
  const made: Made = JSON.parse(readFileSync(out, 'utf8'));
  assert.equal(made.databases.length, 2);
  assert.deepEqual(await leftOf(made), []);
});

test('a run interrupted (SIGINT) while a test holds a session on its database drops them all the same', async () => {
  const out = path.join(tempDir('pms-inner-run-'), 'made.json');
  const child = spawn(process.execPath, ['test/run.ts', FIXTURE], {
    cwd: ROOT, env: runEnv(out, { RUN_FIXTURE_HANG: '1' }), stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk; });
  child.stderr.resume();
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  try {
    await waitFor('the fixture\'s databases', async () => existsSync(out) || undefined, 90_000, 100);
    child.kill('SIGINT');
    assert.equal(await exited, 1, stdout);
  } finally {
    child.kill('SIGKILL');
  }
  assert.match(stdout, /^# SIGINT: stopping the tests$/m);
  assert.match(stdout, /^# dropped 3 test databases$/m);
  const made: Made = JSON.parse(readFileSync(out, 'utf8'));
  assert.deepEqual(await leftOf(made), []);
  // Killed before run.ts dropped the databases; gone once its new parent has reaped it.
  await waitFor('the test file\'s process gone', async () => {
    try {
      process.kill(made.pid, 0);
      return undefined;
    } catch (err) {
      return (err as { code?: string }).code === 'ESRCH' || undefined;
    }
  });
});

test('a role that may not create databases: one line naming CREATEDB, exit 1, nothing made', async () => {
  const role = testObjectName('nocreatedb_');
  await admin.query(`CREATE ROLE ${role} LOGIN CREATEROLE PASSWORD 'run-test-password'`);
  try {
    const url = new URL(ADMIN_URL);
    url.username = role;
    url.password = 'run-test-password';
    const outcome = await runNode(['test/run.ts', FIXTURE], { env: serviceEnv({ DATABASE_URL: url.toString() }), timeoutMs: 60_000 });
    assert.equal(outcome.stderr, `test: DATABASE_URL's role "${role}" may not create databases, which the tests make (and drop at the end): `
      + `it needs CREATEDB (as a superuser: ALTER ROLE ${role} CREATEDB).\n`);
    assert.equal(outcome.code, 1);
    assert.equal(outcome.stdout, '');
  } finally {
    await admin.query(`DROP ROLE ${role}`);
  }
});
