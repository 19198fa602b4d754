// Expiry: a key answers 401 from the second its expires_at passes, whatever the job has done;
// the `key.expire` job then marks it `expired` and records one `key.expired` event (origin system).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { expireDueKeys } from '../../domain/keys.ts';
import { assertError, assertSuccess, MESSAGES } from '../support/assertions.ts';
import { createKey } from '../support/keys.ts';
import { TestService } from '../support/service.ts';
import { nowSeconds, sleep, waitFor } from '../support/wait.ts';
import { keyRow } from './helpers.ts';

let service: TestService;

before(async () => {
  service = await TestService.start();
});
after(() => service.stop());

async function keyExpiredEvents(keyId: string): Promise<number> {
  const { rows } = await service.db.query(
    `SELECT count(*)::int AS n FROM events e JOIN event_types t ON t.id = e.type_id
     WHERE t.name = 'key.expired' AND e.related_id = $1`, [keyId]);
  return rows[0].n;
}

test('a key whose expires_at has passed answers 401 at once, before any job ran, and lists as expired', async () => {
  const project = await service.createProject();
  const made = await createKey(service, project.key, { name: 'short-lived', scope: ['key:read'], expires_at: nowSeconds() + 3600 });
  assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));

  // Hold a KEY SHARE lock on the row: the expiry job (FOR UPDATE SKIP LOCKED) cannot take it
  // while we look, yet our own UPDATE of expires_at (a non-key column) is not blocked by it.
  const guard = await service.db.connect();
  try {
    await guard.query('BEGIN');
    const { rowCount } = await guard.query('SELECT 1 FROM api_keys WHERE id = $1 AND project_id = $2 FOR KEY SHARE', [made.id, project.projectId]);
    assert.equal(rowCount, 1);
    await service.db.query("UPDATE api_keys SET expires_at = now() - interval '10 seconds' WHERE id = $1", [made.id]);
    assert.equal((await keyRow(service, made.id))!.status, 'activated', 'the row was already marked expired');

    for (const [method, path] of [['GET', '/v1/key/current'], ['GET', '/v1/key'], ['GET', `/v1/key/${made.id}`], ['POST', '/v1/key'], ['GET', '/v1/app/list'], ['GET', '/v1/nope']]) {
      assertError(await service.request(method!, path!, { key: made.key, body: method === 'POST' ? { name: 'n' } : undefined }), 401, MESSAGES.expired);
    }

    const list = assertSuccess(await service.request('GET', '/v1/key', { key: project.key }));
    assert.equal(list.total, 2);
    const listed = list.data.find((k: any) => k.id === made.id);
    assert.ok(listed, 'the expired key is not listed');
    assert.equal(listed.status, 'expired');
    assert.equal(assertSuccess(await service.request('GET', `/v1/key/${made.id}`, { key: project.key })).status, 'expired');

    // Still no job has touched it.
    assert.equal((await keyRow(service, made.id))!.status, 'activated');
    assert.equal(await keyExpiredEvents(made.id), 0);
  } finally {
    await guard.query('ROLLBACK');
    guard.release();
  }
});

test('a key answers 401 from the second expires_at is reached', async () => {
  const project = await service.createProject();
  const made = await createKey(service, project.key, { name: 'imminent', scope: ['key:read'], expires_at: nowSeconds() + 60 });
  assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));
  // Bring the expiry to this very second instead of waiting for it.
  await service.db.query('UPDATE api_keys SET expires_at = now() WHERE id = $1', [made.id]);
  assertError(await service.request('GET', '/v1/key/current', { key: made.key }), 401, MESSAGES.expired);
});

test('the expiry job marks the key `expired` and records exactly one `key.expired` event, origin system', async () => {
  const project = await service.createProject();
  const made = await createKey(service, project.key, { name: 'to expire', scope: ['key:read'], expires_at: nowSeconds() + 3600 });
  const keep = await createKey(service, project.key, { name: 'to keep', scope: ['key:read'], expires_at: nowSeconds() + 3600 });
  const never = await createKey(service, project.key, { name: 'never', scope: ['key:read'] });
  // project.created, key.created x 4.
  await service.waitForEvents(project.projectId, 5);
  const expiresAt = nowSeconds() - 30;
  await service.db.query('UPDATE api_keys SET expires_at = to_timestamp($2) WHERE id = $1', [made.id, expiresAt]);

  // The scheduled worker may get there first, and may still be committing when this runs (SKIP
  // LOCKED passes the key it holds over): either way the key ends expired, with one event.
  await expireDueKeys(service.services);
  const row = await waitFor('the key marked expired', async () => {
    const r = await keyRow(service, made.id);
    return r?.status === 'expired' ? r : undefined;
  });
  assert.equal(row.expires_at, expiresAt);
  assert.equal((await keyRow(service, keep.id))!.status, 'activated');
  assert.equal((await keyRow(service, never.id))!.status, 'activated');
  // Running it again finds nothing more of this key to do.
  await expireDueKeys(service.services);

  await service.waitForEvents(project.projectId, 6);
  await service.waitForJobsDrained();
  assert.equal(await keyExpiredEvents(made.id), 1);

  const feed = assertSuccess(await service.request('GET', '/v1/event', { key: project.key }));
  assert.equal(feed.total, 6);
  const expired = feed.data.filter((e: any) => e.type.name === 'key.expired');
  assert.equal(expired.length, 1);
  const [event] = expired;
  assert.equal(event.object, 'event');
  assert.equal(event.origin, 'system');
  // The change is the expiry, dated when it happened, not when the job came to it.
  assert.equal(event.created_at, expiresAt);
  assert.equal(row.updated_at, expiresAt);
  assert.deepEqual(event.related, { table: 'key', id: made.id });
  assert.ok(!JSON.stringify(event).includes(made.key));

  // Still listed as expired, still 401.
  const list = assertSuccess(await service.request('GET', '/v1/key', { key: project.key }));
  assert.equal(list.data.find((k: any) => k.id === made.id).status, 'expired');
  assert.equal(list.total, 4);
  assertError(await service.request('GET', '/v1/key/current', { key: made.key }), 401, MESSAGES.expired);
  assertSuccess(await service.request('GET', '/v1/key/current', { key: keep.key }));
});

test('the scheduled worker expires due keys on its own', { timeout: 90_000 }, async () => {
  const project = await service.createProject();
  const made = await createKey(service, project.key, { name: 'cron', scope: ['key:read'], expires_at: nowSeconds() + 3600 });
  await service.db.query("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", [made.id]);
  // The job is scheduled every minute; allow one schedule and a bit.
  const deadline = Date.now() + 80_000;
  while ((await keyRow(service, made.id))!.status !== 'expired') {
    assert.ok(Date.now() < deadline, 'the worker did not expire the key within 80 s');
    await sleep(250);
  }
  await service.waitForJobsDrained();
  assert.equal(await keyExpiredEvents(made.id), 1);
});

test('a key without expiry never answers 401 expired', async () => {
  const project = await service.createProject();
  const made = await createKey(service, project.key, { name: 'forever', scope: ['key:read'], expires_at: 0 });
  await expireDueKeys(service.services);
  assert.equal((await keyRow(service, made.id))!.status, 'activated');
  assert.equal(assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key })).status, 'activated');
});

test('a key revoked after its expiry passed, before the job marked it: its expiry is recorded too (dated then), then its revocation', async () => {
  const project = await service.createProject();
  const made = await createKey(service, project.key, { name: 'expired, then revoked', scope: ['key:read'], expires_at: nowSeconds() + 3600 });
  await service.waitForEvents(project.projectId, 3);
  const expiresAt = nowSeconds() - 20;
  // The job must not get there first: a KEY SHARE lock on the row makes it pass the key over
  // (SKIP LOCKED), while the revocation's own UPDATE waits for nothing but this transaction.
  const guard = await service.db.connect();
  await guard.query('BEGIN');
  await guard.query('UPDATE api_keys SET expires_at = to_timestamp($2) WHERE id = $1 AND project_id = $3', [made.id, expiresAt, project.projectId]);
  const revoking = service.request('DELETE', `/v1/key/${made.id}`, { key: project.key });
  await expireDueKeys(service.services);
  await guard.query('COMMIT');
  guard.release();
  assertSuccess(await revoking, 200);
  await expireDueKeys(service.services);
  await service.waitForEvents(project.projectId, 5);
  await service.waitForJobsDrained();
  const feed = assertSuccess(await service.request('GET', '/v1/event', { key: project.key }));
  const trail = feed.data.filter((e: any) => e.related.id === made.id).sort((a: any, b: any) => a.sequence - b.sequence)
    .map((e: any) => [e.type.name, e.origin, e.type.name === 'key.expired' ? e.created_at : undefined]);
  assert.deepEqual(trail, [['key.created', 'api', undefined], ['key.expired', 'system', expiresAt], ['key.revoked', 'api', undefined]]);
  assert.equal((await keyRow(service, made.id))!.status, 'revoked');
});
