// A process whose DATABASE_URL cannot use its database (no CONNECT, a wrong password, no rights
// on the schemas and tables) stops at start with one line naming what is missing, exit 1; the web
// process before it listens (lib/open-database.ts checkDatabase). The roles and databases are
// made here on the run's PostgreSQL, as a hardened set-up has them. And /readyz logs why it
// answers 503, once per cause (gateway/health.ts).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { readinessLog, READY_LOG_EVERY_MS } from '../../gateway/health.ts';
import { readConfig } from '../../lib/config.ts';
import { createLogger, type Logger } from '../../lib/log.ts';
import { openDatabase } from '../../lib/open-database.ts';
import { StartupError } from '../../lib/startup-error.ts';
import { runNode, serviceEnv } from '../support/cli.ts';
import { testObjectName } from '../support/postgres.ts';
import { createTestDatabase, databaseUrl, TestService } from '../support/service.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';

const PASSWORD = 'rights-test-password';
const log = createLogger('silent', 'database-rights', 2);
const scratch = tempDir('pms-rights-');
let admin: pg.Client;
/** In pms_app, as README "Database roles" has web and worker connect. */
const member = testObjectName('member_');
/** A login role in no group: no rights beyond PUBLIC's. */
const outsider = testObjectName('outsider_');
/** Migrated; CONNECT revoked from PUBLIC and granted to nobody. */
let locked: string;
/** Migrated; USAGE on schema public revoked from PUBLIC (pms_app keeps its own). */
let migrated: string;
/** A database release has not run on. */
const bare = testObjectName('bare_');

function asRole(database: string, role: string, password = PASSWORD): string {
  const url = new URL(databaseUrl(database));
  url.username = role;
  url.password = password;
  return url.toString();
}

const nameOf = (url: string) => new URL(url).pathname.slice(1);

before(async () => {
  admin = new pg.Client({ connectionString: process.env.TEST_PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE ROLE ${member} LOGIN PASSWORD '${PASSWORD}' IN ROLE pms_app`);
  await admin.query(`CREATE ROLE ${outsider} LOGIN PASSWORD '${PASSWORD}'`);
  [locked, migrated] = (await Promise.all([createTestDatabase(), createTestDatabase()])).map(nameOf) as [string, string];
  await admin.query(`REVOKE CONNECT ON DATABASE ${locked} FROM PUBLIC`);
  await admin.query(`CREATE DATABASE ${bare}`);
  for (const [database, sql] of [[migrated, 'REVOKE USAGE ON SCHEMA public FROM PUBLIC'], [bare, 'REVOKE CREATE ON SCHEMA public FROM PUBLIC']]) {
    const owner = new pg.Client({ connectionString: databaseUrl(database!) });
    await owner.connect();
    await owner.query(sql!).finally(() => owner.end());
  }
});

after(async () => {
  // The databases first: a role with rights in one cannot be dropped. The run drops what is left.
  for (const database of [locked, migrated, bare]) if (database) await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin.query(`DROP ROLE IF EXISTS ${member}`);
  await admin.query(`DROP ROLE IF EXISTS ${outsider}`);
  await admin.end();
});

/** Starts web, worker and release with this DATABASE_URL: each must exit 1 with exactly `${name}: ${line}`. */
async function assertEveryProcessStops(url: string, line: string): Promise<void> {
  await Promise.all(['web', 'worker', 'release'].map(async (name) => {
    const logFile = path.join(tempDir(`pms-rights-${name}-`), `${name}.log`);
    const outcome = await runNode([`bin/${name}.ts`], {
      env: serviceEnv({ DATABASE_URL: url, LOG_FILE: logFile, LOG_LEVEL: 'info', HOST: '127.0.0.1', PORT: '0', HTTP_PORT: '0', DATA_DIR: path.join(scratch, 'data') }),
      timeoutMs: 30_000,
    });
    assert.equal(outcome.signal, null, `${name}: killed (${outcome.stderr})`);
    assert.equal(outcome.stderr, `${name}: ${line}\n`, `${name}: stderr`);
    assert.equal(outcome.code, 1, `${name}: exit code`);
    const logged = existsSync(logFile) ? readFileSync(logFile, 'utf8') : '';
    assert.doesNotMatch(logged, /gateway listening|job workers started/, `${name}: never said it started`);
  }));
}

/** What openDatabase says for this DATABASE_URL. */
async function refusal(url: string): Promise<string> {
  const error = await openDatabase(readConfig({ DATABASE_URL: url }), log).then(() => undefined, (err: unknown) => err);
  assert.ok(error instanceof StartupError, `a StartupError, got ${error}`);
  return error.message;
}

test('no CONNECT on the database: web, worker and release each stop with one line naming it', async () => {
  await assertEveryProcessStops(asRole(locked, member),
    `DATABASE_URL's role "${member}" may not connect to database "${locked}": it needs CONNECT on it (GRANT CONNECT ON DATABASE ${locked} TO ${member}).`);
});

test('a wrong password: each process stops with one line saying the server refused it', async (t) => {
  const probe = new pg.Client({ connectionString: asRole(migrated, member, 'not-the-password') });
  if (await probe.connect().then(() => true, () => false)) {
    await probe.end();
    return t.skip('the run\'s PostgreSQL lets a wrong password in');
  }
  const { hostname, port } = new URL(databaseUrl(migrated));
  await assertEveryProcessStops(asRole(migrated, member, 'not-the-password'),
    `DATABASE_URL's role "${member}" cannot log in to ${hostname}:${port || 5432}: the server refused its password (or has no such role). Correct the user or the password in DATABASE_URL.`);
});

test('no rights on the schemas and tables: each process stops with one line naming them and pms_app', async () => {
  const line = await refusal(asRole(migrated, outsider));
  assert.match(line, new RegExp(`^DATABASE_URL's role "${outsider}" lacks rights it needs in database "${migrated}": `
    + 'USAGE on schema pgboss; USAGE on schema public; SELECT, INSERT, UPDATE, DELETE on [1-9][0-9]* tables \\(pgboss\\.[a-z_]+, pgboss\\.[a-z_]+, …\\)\\. '
    + `Make it a member of pms_app, to which release grants them \\(GRANT pms_app TO ${outsider}\\)\\.$`));
  await assertEveryProcessStops(asRole(migrated, outsider), line);
});

test('a member of pms_app passes, USAGE on public coming from pms_app rather than PUBLIC', async () => {
  const database = await openDatabase(readConfig({ DATABASE_URL: asRole(migrated, member) }), log);
  await database.release();
});

test('a database with no tables yet and a role that may not make them: one line naming the rights release needs', async () => {
  assert.equal(await refusal(asRole(bare, outsider)),
    `database "${bare}" has no tables yet, and DATABASE_URL's role "${outsider}" may not make them: it needs CREATE on schema public, `
    + `CREATE on database "${bare}" (for schema pgboss). Run release as the database's owner, or grant the role what it lacks.`);
});

test('a database that does not exist: one line naming it', async () => {
  const missing = testObjectName('missing_');
  const { hostname, port } = new URL(databaseUrl(missing));
  assert.equal(await refusal(asRole(missing, outsider)),
    `DATABASE_URL names database "${missing}", which does not exist on ${hostname}:${port || 5432}: create it (CREATE DATABASE ${missing} OWNER ${outsider}) or correct DATABASE_URL.`);
});

test('a server that does not answer is no reason to stop: the web serves 503 until it does', async () => {
  const database = await openDatabase(readConfig({ DATABASE_URL: 'postgres://x:y@127.0.0.1:1/none' }), log);
  await database.release();
});

test('/readyz logs why it answers 503 once, not per probe, and when it answers 200 again', async () => {
  const service = await TestService.start({ jobWorkers: false, databaseUrl: asRole(locked, member) });
  try {
    for (let i = 0; i < 5; i += 1) assert.equal((await service.request('GET', '/readyz')).status, 503);
    const lines = () => service.logText().split('\n').filter((line) => line.includes('/readyz answers')).map((line) => JSON.parse(line));
    await waitFor('the 503 line', async () => lines().length >= 1 || undefined);
    await admin.query(`GRANT CONNECT ON DATABASE ${locked} TO ${member}`);
    assert.equal((await service.request('GET', '/readyz')).status, 200);
    await waitFor('the 200 line', async () => lines().length >= 2 || undefined);
    const [notReady, ready, ...more] = lines();
    assert.deepEqual(more, []);
    assert.equal(notReady.msg, '/readyz answers 503');
    assert.equal(notReady.code, '42501');
    assert.equal(notReady.reason, `permission denied for database "${locked}"`);
    assert.equal(ready.msg, '/readyz answers 200 again');
  } finally {
    await admin.query(`REVOKE CONNECT ON DATABASE ${locked} FROM ${member}`);
    await service.stop();
  }
});

test('/readyz: the same cause is logged again after READY_LOG_EVERY_MS with the 503s since; a new cause at once', (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 0 });
  const logged: Array<[Record<string, unknown>, string]> = [];
  const fake = { warn: (fields: Record<string, unknown>, msg: string) => logged.push([fields, msg]), info: () => {} } as unknown as Logger;
  const readiness = readinessLog();
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  for (let i = 0; i < 10; i += 1) {
    readiness.notReady(fake, refused);
    t.mock.timers.tick(1000);
  }
  assert.equal(logged.length, 1);
  t.mock.timers.tick(READY_LOG_EVERY_MS);
  readiness.notReady(fake, refused);
  assert.equal(logged.length, 2);
  assert.deepEqual(logged[1]![0], { reason: 'connect ECONNREFUSED 127.0.0.1:5432', code: 'ECONNREFUSED', probes: 10, forMs: READY_LOG_EVERY_MS + 10_000 });
  readiness.notReady(fake, Object.assign(new Error('too many connections'), { code: '53300' }));
  assert.equal(logged.length, 3);
  assert.deepEqual(logged[2]![0], { reason: 'too many connections', code: '53300', probes: 1, forMs: 0 });
});
