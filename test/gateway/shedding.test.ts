// Load shedding (MAX_QUEUED_TASKS): a request that would wait for the database deeper than the bound
// is answered 503 at once with Retry-After, on a pool thread or on the gateway's own pool. No lanes
// here (DB_LANES=0), so every feed statement waits for the pool; lanes have their own test.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { MESSAGES } from '../support/assertions.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { sleep, waitFor } from '../support/wait.ts';
import { assertError, assertSuccess } from './helpers.ts';

let service: TestService;
let project: TestProject;

before(async () => {
  // One connection in the gateway's pool, room for one request waiting for it, and no lanes.
  service = await TestService.start({ jobWorkers: false, env: { DB_POOL_SIZE: '1', MAX_QUEUED_TASKS: '1', DB_LANES: '0' } });
  project = await service.createProject();
});
after(() => service?.stop());

test('an inline endpoint past the gateway pool\'s queue bound: 503 with Retry-After at once; those in the queue are answered', async () => {
  // Known from memory: its requests need no lookup, only their own statement, which reads the key.
  assertSuccess(await service.request('GET', '/v1/event', { key: project.key }), 200);
  // Its first use is recorded off the request's path, on the pool: done before the table is held,
  // or the write would wait on the hold with the pool's one connection.
  await waitFor('the key\'s first use recorded', async () => ((await service.db.query(
    'SELECT last_used_at FROM api_keys WHERE id = $1', [project.keyId])).rows[0].last_used_at ? true : undefined));
  const locker = new pg.Client({ connectionString: service.databaseUrl });
  await locker.connect();
  try {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE');
    const waitingOnLock = async () => Number((await service.db.query(
      "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rows[0].n);
    // The first holds the pool's one connection, waiting on the lock; the second waits for the connection.
    const holding = service.request('GET', '/v1/event', { key: project.key });
    await waitFor('the first feed read waiting on the lock', async () => ((await waitingOnLock()) >= 1 ? true : undefined), 10_000);
    const queued = service.request('GET', '/v1/event', { key: project.key });
    // It reaches the gateway's pool within milliseconds; it cannot be seen waiting from outside.
    await sleep(300);
    const shed = await service.request('GET', `/v1/event/evnt_${'0'.repeat(20)}`, { key: project.key });
    assertError(shed, 503, MESSAGES.unavailable, 'one event, past the bound');
    assert.equal(shed.headers['retry-after'], '1');
    const started = Date.now();
    assertError(await service.request('GET', '/v1/event', { key: project.key }), 503, MESSAGES.unavailable, 'the feed, past the bound');
    assert.ok(Date.now() - started < 1000, `shed at once, not after ${Date.now() - started} ms`);
    await locker.query('COMMIT');
    assertSuccess(await holding, 200);
    assertSuccess(await queued, 200);
  } finally {
    await locker.query('ROLLBACK').catch(() => {});
    await locker.end();
  }
});
