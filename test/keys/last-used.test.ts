// last_used_at: null until the key is used; written off the request's path, at most once a minute.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertSuccess } from '../support/assertions.ts';
import { createKey } from '../support/keys.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { nowSeconds, sleep, waitFor } from '../support/wait.ts';
import { keyRow } from './helpers.ts';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start();
  project = await service.createProject();
});
after(() => service.stop());

async function lastUsed(id: string): Promise<number | null> {
  return (await keyRow(service, id))!.last_used_at;
}

/** Waits until the key's stored last_used_at is at least `since`; returns it. */
function lastUsedSince(id: string, since: number): Promise<number> {
  return waitFor(`last_used_at of ${id} >= ${since}`, async () => {
    const value = await lastUsed(id);
    return value !== null && value >= since ? value : undefined;
  });
}

/** Sets the stored last_used_at to `secondsAgo` before now, whole seconds. */
async function setLastUsed(id: string, secondsAgo: number): Promise<number> {
  const { rows } = await service.db.query(
    `UPDATE api_keys SET last_used_at = date_trunc('second', now()) - make_interval(secs => $2)
     WHERE id = $1 RETURNING unix_seconds(last_used_at) AS at`, [id, secondsAgo]);
  assert.equal(rows.length, 1);
  return rows[0].at;
}

/**
 * A write that must not happen is awaited against one that must: a fresh key's first use is
 * written through the same path, so once it shows, an unwanted write would have shown too.
 */
async function barrier(): Promise<void> {
  const fresh = await createKey(service, project.key, { name: 'barrier', scope: ['key:read'] });
  const since = nowSeconds() - 1;
  assertSuccess(await service.request('GET', '/v1/key/current', { key: fresh.key }));
  await lastUsedSince(fresh.id, since);
  await sleep(300);
}

test('last_used_at is null until the key is used, then set by an authenticated call', async () => {
  const made = await createKey(service, project.key, { name: 'fresh', scope: ['key:read'] });
  assert.equal(made.object.last_used_at, null);
  assert.equal(assertSuccess(await service.request('GET', `/v1/key/${made.id}`, { key: project.key })).last_used_at, null);
  assert.equal(await lastUsed(made.id), null);

  const before = nowSeconds();
  assertSuccess(await service.request('GET', '/v1/key', { key: made.key }));
  const at = await lastUsedSince(made.id, before - 1);
  assert.ok(at <= nowSeconds(), `last_used_at ${at} is in the future`);

  const read = assertSuccess(await service.request('GET', `/v1/key/${made.id}`, { key: project.key }));
  assert.equal(read.last_used_at, at);
  const listed = assertSuccess(await service.request('GET', '/v1/key?limit=100', { key: project.key }));
  assert.equal(listed.data.find((k: any) => k.id === made.id).last_used_at, at);
});

test('creating or reading a key through another key does not mark it used', async () => {
  const made = await createKey(service, project.key, { name: 'untouched', scope: ['key:read'] });
  assertSuccess(await service.request('GET', `/v1/key/${made.id}`, { key: project.key }));
  await barrier();
  assert.equal(await lastUsed(made.id), null);
});

test('a call within a minute of the last write does not rewrite last_used_at', async () => {
  const made = await createKey(service, project.key, { name: 'busy', scope: ['key:read'] });
  const before = nowSeconds();
  assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));
  await lastUsedSince(made.id, before - 1);

  // Used 30 seconds ago, as far as the table knows; another call now must leave it alone.
  const stored = await setLastUsed(made.id, 30);
  assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));
  assertSuccess(await service.request('GET', '/v1/key', { key: made.key }));
  await barrier();
  assert.equal(await lastUsed(made.id), stored);
  assert.equal(assertSuccess(await service.request('GET', `/v1/key/${made.id}`, { key: project.key })).last_used_at, stored);
});

test('a key last used 30 s ago (by any process) is not rewritten by its next call', async () => {
  // Never used through this gateway: only the stored value can hold the write back.
  const made = await createKey(service, project.key, { name: 'elsewhere', scope: ['key:read'] });
  const stored = await setLastUsed(made.id, 30);
  assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));
  await barrier();
  assert.equal(await lastUsed(made.id), stored);
});

test('a call more than a minute after the last use rewrites last_used_at', async () => {
  const made = await createKey(service, project.key, { name: 'idle', scope: ['key:read'] });
  const stored = await setLastUsed(made.id, 120);
  const before = nowSeconds();
  assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));
  const at = await lastUsedSince(made.id, before - 1);
  assert.ok(at > stored);
  assert.ok(at <= nowSeconds());
});

test('once written, GET /v1/key/current reads last_used_at as stored, or as this call when that is later', async () => {
  const made = await createKey(service, project.key, { name: 'self', scope: ['key:read'] });
  const before = nowSeconds();
  assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));
  const at = await lastUsedSince(made.id, before - 1);
  const callFrom = nowSeconds();
  const answered = assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key })).last_used_at;
  const callTo = nowSeconds();
  // The calling key's own last use is this call (the test below): the stored second, or the call's
  // when it came in a later second than the write.
  assert.ok(answered >= Math.max(at, callFrom) && answered <= Math.max(at, callTo), `${answered}: stored ${at}, call ${callFrom}-${callTo}`);
});

test('a call refused as revoked or expired is no use of the key: last_used_at stays', async () => {
  for (const end of [
    { what: 'revoked', sql: `UPDATE api_keys SET status = 'revoked' WHERE id = $1`, status: 403 },
    { what: 'expired', sql: `UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, status: 401 },
  ]) {
    const made = await createKey(service, project.key, { name: `${end.what} later`, scope: ['key:read'] });
    // Known to the process with a last use just under a minute old, so that its next call is due
    // to record one (gateway/authenticate.ts noteUse).
    await setLastUsed(made.id, 59);
    assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));
    await sleep(1500);
    // Then ended behind the process's back, its last use long ago.
    const before = await setLastUsed(made.id, 300);
    await service.db.query(end.sql, [made.id]);
    assert.equal((await service.request('GET', '/v1/key/current', { key: made.key })).status, end.status, end.what);
    await sleep(300);
    assert.equal(await lastUsed(made.id), before, `${end.what}: last_used_at unchanged`);
  }
});

test('the calling key\'s own last_used_at is this call, on its first use too (the stored value is written after the answer)', async () => {
  const made = await createKey(service, project.key, { name: 'first call', scope: ['key:read'] });
  const before = nowSeconds();
  const current = assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));
  assert.ok(current.last_used_at !== null && current.last_used_at >= before, `key/current on its first use: ${current.last_used_at}`);
  const own = assertSuccess(await service.request('GET', `/v1/key/${made.id}`, { key: made.key }));
  assert.ok(own.last_used_at >= before, 'its own key by id');
  const listed = assertSuccess(await service.request('GET', '/v1/key?limit=100', { key: made.key })).data.find((k: any) => k.id === made.id);
  assert.ok(listed.last_used_at >= before, 'its own key listed');
  // Another key's is what is stored: never used, null.
  const other = await createKey(service, project.key, { name: 'never used', scope: ['key:read'] });
  assert.equal(assertSuccess(await service.request('GET', `/v1/key/${other.id}`, { key: made.key })).last_used_at, null);
});
