// The gateway's lanes (lib/lanes.ts): its statements pipelined on a few connections. A statement
// that waits (here on a table held by a test's transaction) holds back only what was sent behind
// it on its lane: later requests take the pool's connections and are answered; and what queued
// behind it fails as unavailable (503) once the lane has held it past the statement timeout and
// the silence bound, not one statement timeout after another.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { isDatabaseUnavailable } from '../../domain/errors.ts';
import { readConfig } from '../../lib/config.ts';
import { LANE_STALL_MS, openLanedDatabase, type LanedDatabase } from '../../lib/lanes.ts';
import { createLogger } from '../../lib/log.ts';
import { queryFile, SILENCE_BEYOND_STATEMENT_TIMEOUT_MS, type Statement } from '../../lib/pool.ts';
import { queryNames, queryText, ridesLane } from '../../lib/sql-files.ts';
import { MESSAGES } from '../support/assertions.ts';
import { createTestDatabase, TestService } from '../support/service.ts';
import { sleep, waitFor } from '../support/wait.ts';
import { assertError, assertSuccess } from '../gateway/helpers.ts';

/** Holds `table` in a transaction of the test's own until the returned release is called. */
async function hold(service: TestService, table: string): Promise<() => Promise<void>> {
  const locker = new pg.Client({ connectionString: service.databaseUrl });
  await locker.connect();
  await locker.query('BEGIN');
  await locker.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  return () => locker.query('ROLLBACK').finally(() => locker.end()).then(() => undefined);
}

const waitingOnLock = async (service: TestService) => Number((await service.db.query(
  "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rows[0].n);

/** A LanedDatabase of its own on a fresh database, and a client of the test's own there to hold tables with. */
async function withLanes(env: Record<string, string>, test: (db: LanedDatabase, locker: pg.Client) => Promise<void>): Promise<void> {
  const url = await createTestDatabase();
  const db = openLanedDatabase(readConfig(env), createLogger('silent', 'lanes-test', 2), url);
  const locker = new pg.Client({ connectionString: url });
  await locker.connect();
  try {
    await test(db, locker);
  } finally {
    await locker.query('ROLLBACK').catch(() => {});
    await locker.end();
    await db.end();
  }
}

test('exactly these statements ride a lane, each a single read that locks nothing, and queryFile sends them so', async () => {
  const riding = queryNames().filter(ridesLane);
  assert.deepEqual(riding, [
    'app_find_readable', 'event_chain_heads', 'event_find', 'event_list_version',
    'key_authenticate', 'key_caller', 'key_check', 'key_find', 'key_route',
  ]);
  for (const name of riding) {
    const text = queryText(name).replace(/--.*$/gm, '').trim();
    assert.match(text, /^SELECT\b/, `${name} is a read`);
    assert.doesNotMatch(text, /\b(INSERT|UPDATE|DELETE|SHARE)\b|;/i, `${name} writes or locks nothing, and is one statement`);
  }
  const sent: Statement[] = [];
  const recorder = { query: async (config: Statement) => (sent.push(config), { rows: [] } as unknown as pg.QueryResult) };
  await queryFile(recorder, 'key_find', ['papi_x', 'proj_x']);
  await queryFile(recorder, 'key_list', ['proj_x', 20, 0]);
  assert.deepEqual(sent.map(({ name, lane }) => [name, lane]), [['key_find', true], ['key_list', false]]);
});

test('a lane held by a waiting statement takes no more: a later read of a lane is answered on the pool', async () => {
  const service = await TestService.start({ jobWorkers: false, env: { DB_LANES: '1' } });
  let release: (() => Promise<void>) | undefined;
  try {
    const project = await service.createProject();
    assertSuccess(await service.request('GET', '/v1/key/current', { key: project.key }), 200);
    release = await hold(service, 'events');
    // One event's read rides the lane (event_find); it waits on the held table there.
    const event = service.request('GET', `/v1/event/evnt_${'0'.repeat(20)}`, { key: project.key });
    await waitFor('the event\'s read waiting on the held table', async () => ((await waitingOnLock(service)) >= 1 ? true : undefined));
    await sleep(3 * LANE_STALL_MS);
    const started = Date.now();
    const current = await service.request('GET', '/v1/key/current', { key: project.key });
    assertSuccess(current, 200);
    assert.equal((current.body as { response: { id: string } }).response.id, project.keyId);
    assert.ok(Date.now() - started < 2000, `answered while the event's read waits, after ${Date.now() - started} ms`);
    await release();
    release = undefined;
    assertError(await event, 404, MESSAGES.eventNotFound);
  } finally {
    await release?.();
    await service.stop();
  }
});

test('what queued on a lane behind a statement held past the bound fails as unavailable, all within the bound', { timeout: 15_000 }, async () => {
  const statementTimeoutMs = 200;
  await withLanes({ DB_LANES: '1', DB_POOL_SIZE: '1', DB_STATEMENT_TIMEOUT_MS: String(statementTimeoutMs) }, async (db, locker) => {
    await locker.query('CREATE TABLE lane_probe (x int)');
    // Prepared on the lane before the hold: a Parse that waits would fail the statements of its
    // name pipelined behind it another way (retried on the pool, lib/lanes.ts LANE_DAMAGE).
    await db.query({ name: 'lane_probe', text: 'SELECT count(*) FROM lane_probe', lane: true });
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE lane_probe IN ACCESS EXCLUSIVE MODE');
    // Sent in one turn, so all ride the one lane, one behind another: each would otherwise wait
    // its own statement timeout in turn (30 x 200 ms).
    const started = Date.now();
    const settled = await Promise.allSettled(Array.from({ length: 30 }, () => db.query({ name: 'lane_probe', text: 'SELECT count(*) FROM lane_probe', lane: true })));
    const tookMs = Date.now() - started;
    for (const outcome of settled) {
      assert.equal(outcome.status, 'rejected');
      assert.ok(isDatabaseUnavailable((outcome as PromiseRejectedResult).reason), `unavailable (503), not: ${String((outcome as PromiseRejectedResult).reason)}`);
    }
    // The bound, at most one sweep of a second after it, and room for a slow machine.
    const boundMs = statementTimeoutMs + SILENCE_BEYOND_STATEMENT_TIMEOUT_MS + 1000 + 1000;
    assert.ok(tookMs < boundMs, `all failed within ${boundMs} ms: ${tookMs} ms`);
    await locker.query('ROLLBACK');
    // The lane opens again.
    assert.deepEqual((await db.query({ name: 'lane_probe_again', text: 'SELECT count(*)::int AS n FROM lane_probe', lane: true })).rows, [{ n: 0 }]);
  });
});

test('statements pipelined behind a Parse of their name that failed are tried again on the pool, not answered as errors', { timeout: 15_000 }, async () => {
  const statementTimeoutMs = 500;
  await withLanes({ DB_LANES: '1', DB_POOL_SIZE: '4', DB_STATEMENT_TIMEOUT_MS: String(statementTimeoutMs) }, async (db, locker) => {
    await locker.query('CREATE TABLE lane_parse_probe (x int)');
    await db.query({ text: 'SELECT 1', lane: true });
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE lane_parse_probe IN ACCESS EXCLUSIVE MODE');
    // Not yet prepared on the lane: the first sends the Parse, which waits on the held table until
    // its statement timeout; the others, pipelined behind it, were sent without one.
    const sent = Array.from({ length: 5 }, () => db.query({ name: 'lane_parse_probe', text: 'SELECT count(*)::int AS n FROM lane_parse_probe', lane: true }));
    const released = sleep(statementTimeoutMs + 150).then(() => locker.query('ROLLBACK'));
    const settled = await Promise.allSettled(sent);
    await released;
    const [first, ...behind] = settled;
    assert.equal(first!.status, 'rejected');
    assert.ok(isDatabaseUnavailable((first as PromiseRejectedResult).reason), `the Parse's own timeout: unavailable, not ${String((first as PromiseRejectedResult).reason)}`);
    for (const outcome of behind) assert.deepEqual(outcome.status === 'fulfilled' ? outcome.value.rows : String(outcome.reason), [{ n: 0 }]);
  });
});
