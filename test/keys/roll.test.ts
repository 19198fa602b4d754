// POST /v1/key/<key_id>/roll (decisions.md, "Key roll"): a new key in the old one's image, its
// secret once; the old key's life cut to grace_s (0: revoked at once), enforced from that second;
// every refusal with its exact envelope and nothing written; key.created and key.rolled recorded.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { Client } from '../../client/node.ts';
import { expireDueKeys } from '../../domain/keys.ts';
import { assertError, assertSuccess, MESSAGES } from '../support/assertions.ts';
import { ID, SECRET } from '../support/ids.ts';
import { holder, lockWaiters } from '../support/locks.ts';
import { createKey, type CreatedKey } from '../support/keys.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { nowSeconds, sleep, waitFor } from '../support/wait.ts';
import { KEY_FIELDS, keyRow } from './helpers.ts';

const DAY = 86_400;
const IN_USE = 'Cannot revoke the API key currently in use.';
const GRACE = 'grace_s must be an integer from 0 to 2592000.';
const EXPIRED = 'An expired API key cannot be rolled.';
const WIDER = 'Cannot create a key with wider scope than the calling key.';
const OUTLIVES = 'Cannot create a key that outlives the calling key.';

let service: TestService;
let project: TestProject;
let other: TestProject;

before(async () => {
  service = await TestService.start();
  project = await service.createProject();
  other = await service.createProject('other');
});
after(() => service.stop());

const roll = (id: string, body?: unknown, key = project.key) => service.request('POST', `/v1/key/${id}/roll`, { key, body });

async function keyCount(projectId = project.projectId): Promise<number> {
  const { rows } = await service.db.query('SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1', [projectId]);
  return rows[0].n;
}

/** Every event of the project about `keyIds`, oldest first, as the feed answers them. */
async function eventsAbout(...keyIds: string[]) {
  await service.waitForJobsDrained();
  const feed = assertSuccess(await service.request('GET', '/v1/event', { key: project.key }));
  return feed.data.filter((e: any) => keyIds.includes(e.related.id)).sort((a: any, b: any) => a.sequence - b.sequence);
}

/** The project's events, stored or still in the outbox. */
async function eventCount(): Promise<number> {
  const { rows } = await service.db.query(
    `SELECT (SELECT count(*) FROM events WHERE project_id = $1) + (SELECT count(*) FROM audit_outbox WHERE project_id = $1) AS n`,
    [project.projectId]);
  return Number(rows[0].n);
}

/** The old key as a roll would change it (its last use is the caller's own, when it is the caller). */
async function rollable(id: string) {
  const { last_used_at: _, ...row } = (await keyRow(service, id))!;
  return row;
}

/** A refusal writes nothing: no key, no change of the old one, no event. */
async function assertNothingWritten(old: CreatedKey, refuse: () => Promise<void>): Promise<void> {
  const [keys, row, events] = [await keyCount(), await rollable(old.id), await eventCount()];
  await refuse();
  assert.equal(await keyCount(), keys, 'a key was made');
  assert.deepEqual(await rollable(old.id), row, 'the old key changed');
  assert.equal(await eventCount(), events, 'an event was recorded');
}

test('201 with a key object shaped as POST /v1/key answers: the old name, scope and expires_at, a new id and secret', async () => {
  const expiresAt = nowSeconds() + 10 * DAY;
  const old = await createKey(service, project.key, { name: 'to roll', scope: ['key:read', 'app:*'], expires_at: expiresAt });
  const before = nowSeconds();
  const made = assertSuccess(await roll(old.id, { grace_s: 3600 }), 201);
  const after = nowSeconds();
  assert.deepEqual(Object.keys(made), Object.keys(old.object), 'members, in the order POST /v1/key answers them');
  assert.deepEqual(Object.keys(made).sort(), [...KEY_FIELDS, 'key'].sort());
  assert.match(made.id, ID.key);
  assert.notEqual(made.id, old.id);
  assert.match(made.key, SECRET);
  assert.notEqual(made.key, old.key);
  assert.equal(made.key_preview, `sk-project-...${made.key.slice(-4)}`);
  assert.equal(made.object, 'api_key');
  assert.equal(made.name, 'to roll');
  assert.deepEqual(made.scope, ['key:read', 'app:*']);
  assert.equal(made.expires_at, expiresAt);
  assert.equal(made.status, 'activated');
  assert.equal(made.last_used_at, null);
  assert.equal(made.created_by, project.consumerId);
  assert.ok(made.created_at >= before && made.created_at <= after && made.updated_at === made.created_at, `created_at ${made.created_at}`);

  // The new key works, reads as its answer said, and its secret is shown nowhere again.
  const current = assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));
  assert.equal(current.id, made.id);
  const { key: _secret, ...read } = made;
  assert.deepEqual({ ...assertSuccess(await service.request('GET', `/v1/key/${made.id}`, { key: project.key })), last_used_at: null }, read);

  // The old key's expiry: the earlier of its own and now + grace_s.
  const oldNow = assertSuccess(await service.request('GET', `/v1/key/${old.id}`, { key: project.key }));
  assert.ok(oldNow.expires_at >= before + 3600 && oldNow.expires_at <= after + 3600, `old expires_at ${oldNow.expires_at}`);
  assert.equal(oldNow.status, 'activated');
  assert.ok(oldNow.updated_at >= before);
});

test('grace_s absent, {} or null: a day; a key that expires sooner keeps its own expires_at; 2592000 is taken', async () => {
  for (const body of [undefined, {}, { grace_s: null }, { other: 'ignored' }]) {
    const old = await createKey(service, project.key, { name: 'default grace', scope: ['key:read'] });
    const before = nowSeconds();
    const made = assertSuccess(await roll(old.id, body), 201);
    assert.equal(made.expires_at, null, 'the new key never expires, as the old one did not');
    const expiresAt = (await keyRow(service, old.id))!.expires_at!;
    assert.ok(expiresAt >= before + DAY && expiresAt <= nowSeconds() + DAY, `${JSON.stringify(body)}: ${expiresAt}`);
  }
  const soon = nowSeconds() + 600;
  const short = await createKey(service, project.key, { name: 'short', scope: ['key:read'], expires_at: soon });
  assert.equal(assertSuccess(await roll(short.id), 201).expires_at, soon);
  assert.equal((await keyRow(service, short.id))!.expires_at, soon);

  const longest = await createKey(service, project.key, { name: 'longest', scope: ['key:read'] });
  const before = nowSeconds();
  assertSuccess(await roll(longest.id, { grace_s: 2_592_000 }), 201);
  const expiresAt = (await keyRow(service, longest.id))!.expires_at!;
  assert.ok(expiresAt >= before + 2_592_000 && expiresAt <= nowSeconds() + 2_592_000);
});

test('the old key works until its new expires_at, then answers 401 `The API key has expired.` (known to the process or not)', async () => {
  const old = await createKey(service, project.key, { name: 'graceful', scope: ['key:read'] });
  // Known from memory before the roll: its remembered expiry (none) must not outlast the stored one.
  assertSuccess(await service.request('GET', '/v1/key/current', { key: old.key }));
  const made = assertSuccess(await roll(old.id, { grace_s: 3 }), 201);
  const expiresAt = (await keyRow(service, old.id))!.expires_at!;
  assert.ok(expiresAt > nowSeconds() && expiresAt <= nowSeconds() + 3, `expires_at ${expiresAt}`);
  assert.equal(assertSuccess(await service.request('GET', '/v1/key/current', { key: old.key })).expires_at, expiresAt);
  await sleep(Math.max(0, expiresAt * 1000 - Date.now()));
  for (const [method, path] of [['GET', '/v1/key/current'], ['GET', '/v1/key'], ['POST', '/v1/key'], ['GET', '/v1/nope']] as const) {
    assertError(await service.request(method, path, { key: old.key, body: method === 'POST' ? { name: 'n', scope: ['key:read'] } : undefined }), 401, MESSAGES.expired, path);
  }
  assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));
  // Listed as expired, and the expiry job records it like any other.
  assert.equal(assertSuccess(await service.request('GET', `/v1/key/${old.id}`, { key: project.key })).status, 'expired');
  await expireDueKeys(service.services);
  await waitFor('the old key marked expired', async () => ((await keyRow(service, old.id))!.status === 'expired' ? true : undefined));
  const trail = (await eventsAbout(old.id)).map((e: any) => e.type.name);
  assert.deepEqual(trail, ['key.created', 'key.rolled', 'key.expired']);
});

test('grace_s 0 revokes the old key at once: refused as a revoked key is, gone from reads', async () => {
  const old = await createKey(service, project.key, { name: 'at once', scope: ['key:*'] });
  assertSuccess(await service.request('GET', '/v1/key/current', { key: old.key }));
  const made = assertSuccess(await roll(old.id, { grace_s: 0 }), 201);
  assertError(await service.request('GET', '/v1/key/current', { key: old.key }), 403, MESSAGES.refused);
  assertError(await service.request('POST', '/v1/key', { key: old.key, body: { name: 'n', scope: ['key:read'] } }), 403, MESSAGES.refused);
  assertError(await service.request('GET', `/v1/key/${old.id}`, { key: project.key }), 404, MESSAGES.keyNotFound);
  assertError(await service.request('DELETE', `/v1/key/${old.id}`, { key: project.key }), 404, MESSAGES.keyNotFound);
  const row = (await keyRow(service, old.id))!;
  assert.equal(row.status, 'revoked');
  // decisions.md: the earlier of its own (none here) and now + 0.
  assert.equal(Number(row.expires_at), Number(row.updated_at), 'expires_at cut to the second of the roll');
  assert.ok(Math.abs(Number(row.expires_at) - made.created_at) <= 1);
  assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));
});

test('grace_s 0 on the calling key, by id or as `current`: 422, nothing written, the key keeps working', async () => {
  const caller = await createKey(service, project.key, { name: 'self', scope: ['key:*'] });
  await assertNothingWritten(caller, async () => {
    assertError(await roll(caller.id, { grace_s: 0 }, caller.key), 422, IN_USE);
    assertError(await roll('current', { grace_s: 0 }, caller.key), 422, IN_USE);
  });
  assertSuccess(await service.request('GET', '/v1/key/current', { key: caller.key }));
});

test('`current` rolls the calling key: it keeps working through its grace, and key/current from memory shows its new expiry', async () => {
  const caller = await createKey(service, project.key, { name: 'myself', scope: ['key:*'] });
  assertSuccess(await service.request('GET', '/v1/key/current', { key: caller.key }));
  const made = assertSuccess(await roll('current', { grace_s: 600 }, caller.key), 201);
  assert.equal(made.name, 'myself');
  assert.deepEqual(made.scope, ['key:*']);
  const fromMemory = assertSuccess(await service.request('GET', '/v1/key/current', { key: caller.key }));
  const expiresAt = (await keyRow(service, caller.id))!.expires_at!;
  assert.ok(expiresAt > nowSeconds() + 590, `expires_at ${expiresAt}`);
  assert.equal(fromMemory.expires_at, expiresAt);
  assert.equal(assertSuccess(await service.request('GET', `/v1/key/${caller.id}`, { key: caller.key })).expires_at, expiresAt);
  assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));
});

test('a key whose expiry a roll cut cannot make a key that outlives it, though the process remembers it without one', async () => {
  const caller = await createKey(service, project.key, { name: 'remembered', scope: ['key:*'] });
  assertSuccess(await service.request('GET', '/v1/key/current', { key: caller.key }));
  assertSuccess(await roll(caller.id, { grace_s: 3600 }), 201);
  const before = await keyCount();
  for (const body of [{ name: 'forever', scope: ['key:read'] }, { name: 'later', scope: ['key:read'], expires_at: nowSeconds() + 7200 }]) {
    assertError(await service.request('POST', '/v1/key', { key: caller.key, body }), 403, OUTLIVES, body.name);
  }
  const old = await createKey(service, project.key, { name: 'never expires', scope: ['key:read'] });
  assertError(await roll(old.id, {}, caller.key), 403, OUTLIVES);
  assert.equal(await keyCount(), before + 1);
  assertSuccess(await service.request('POST', '/v1/key', { key: caller.key, body: { name: 'within', scope: ['key:read'], expires_at: nowSeconds() + 1800 } }), 201);
});

test('an unknown, revoked or malformed id, or another project\'s key: 404 `API key not found.`, nothing written', async () => {
  const revoked = await createKey(service, project.key, { name: 'revoked', scope: ['key:read'] });
  assertSuccess(await service.request('DELETE', `/v1/key/${revoked.id}`, { key: project.key }));
  const theirs = await createKey(service, other.key, { name: 'theirs', scope: ['key:read'] });
  const before = [await keyCount(), await keyCount(other.projectId)];
  for (const id of [revoked.id, theirs.id, other.keyId, 'papi_0123456789abcdef0123', 'papi_xyz', 'nonsense', 'roll']) {
    assertError(await roll(id), 404, MESSAGES.keyNotFound, id);
    assertError(await roll(id, { grace_s: 0 }), 404, MESSAGES.keyNotFound, id);
  }
  assert.deepEqual([await keyCount(), await keyCount(other.projectId)], before);
  const row = (await keyRow(service, theirs.id))!;
  assert.equal(row.status, 'activated');
  assert.equal(row.expires_at, null);
  assertSuccess(await service.request('GET', '/v1/key/current', { key: theirs.key }));
});

test('a roll waiting on the old key\'s revocation in flight finds it revoked once that commits: 404, nothing made', async () => {
  const old = await createKey(service, project.key, { name: 'raced', scope: ['key:read'] });
  const revoker = await service.db.connect();
  try {
    await revoker.query('BEGIN');
    await revoker.query(`UPDATE api_keys SET status = 'revoked' WHERE id = $1 AND project_id = $2`, [old.id, project.projectId]);
    const held = await holder(revoker);
    const before = await keyCount();
    const rolling = roll(old.id);
    await waitFor('the roll waiting on the revocation', async () => ((await lockWaiters(service.db, held)) > 0 ? true : undefined));
    await revoker.query('COMMIT');
    assertError(await rolling, 404, MESSAGES.keyNotFound);
    assert.equal(await keyCount(), before);
  } finally {
    revoker.release();
  }
});

test('an expired key: 422 `An expired API key cannot be rolled.`, whether or not the expiry job has marked it', async () => {
  const old = await createKey(service, project.key, { name: 'expiring', scope: ['key:read'], expires_at: nowSeconds() + 3600 });
  await service.db.query("UPDATE api_keys SET expires_at = now() - interval '5 seconds' WHERE id = $1", [old.id]);
  await assertNothingWritten(old, async () => {
    assertError(await roll(old.id), 422, EXPIRED);
    assertError(await roll(old.id, { grace_s: 0 }), 422, EXPIRED);
  });
  await expireDueKeys(service.services);
  await waitFor('the key marked expired', async () => ((await keyRow(service, old.id))!.status === 'expired' ? true : undefined));
  assertError(await roll(old.id), 422, EXPIRED);
});

test('a key with scopes wider than the caller\'s: 403 as for creation, nothing written; one within them rolls', async () => {
  const caller = await createKey(service, project.key, { name: 'key admin', scope: ['key:*', 'app:read'] });
  for (const scope of [['*'], ['app:*'], ['key:read', 'event:read']]) {
    const old = await createKey(service, project.key, { name: 'wide', scope });
    await assertNothingWritten(old, async () => assertError(await roll(old.id, {}, caller.key), 403, WIDER, scope.join()));
  }
  const within = await createKey(service, project.key, { name: 'within', scope: ['key:read', 'key:write', 'app:read'] });
  assert.deepEqual(assertSuccess(await roll(within.id, {}, caller.key), 201).scope, ['key:read', 'key:write', 'app:read']);
});

test('a caller that expires cannot roll a key into one that outlives it: 403 as for creation', async () => {
  const callerExpires = nowSeconds() + 3600;
  const caller = await createKey(service, project.key, { name: 'short-lived admin', scope: ['key:*'], expires_at: callerExpires });
  for (const expiresAt of [undefined, callerExpires + 1]) {
    const old = await createKey(service, project.key, { name: 'longer', scope: ['key:read'], ...(expiresAt ? { expires_at: expiresAt } : {}) });
    await assertNothingWritten(old, async () => assertError(await roll(old.id, {}, caller.key), 403, OUTLIVES, String(expiresAt)));
  }
  for (const expiresAt of [callerExpires, callerExpires - 60]) {
    const old = await createKey(service, project.key, { name: 'shorter', scope: ['key:read'], expires_at: expiresAt });
    assert.equal(assertSuccess(await roll(old.id, {}, caller.key), 201).expires_at, expiresAt);
  }
  // Its own roll copies its own expiry, which does not outlive it.
  assert.equal(assertSuccess(await roll('current', { grace_s: 60 }, caller.key), 201).expires_at, callerExpires);
});

test('grace_s that is not an integer from 0 to 2592000: 422, before the key is looked at; a body that is not an object: 400', async () => {
  const old = await createKey(service, project.key, { name: 'grace', scope: ['key:read'] });
  await assertNothingWritten(old, async () => {
    for (const grace of [-1, 2_592_001, 1.5, '10', true, false, [], {}, '']) {
      assertError(await roll(old.id, { grace_s: grace }), 422, GRACE, JSON.stringify(grace));
      assertError(await roll('papi_0123456789abcdef0123', { grace_s: grace }), 422, GRACE, 'unknown key');
    }
    for (const body of ['[1]', '"x"', '12', 'null', '{"grace_s":']) {
      assertError(await roll(old.id, Buffer.from(body), project.key), 400, MESSAGES.invalidJson, body);
    }
  });
});

test('rolling needs key:write; another method on the path is 422', async () => {
  const reader = await createKey(service, project.key, { name: 'reader', scope: ['key:read'] });
  const old = await createKey(service, project.key, { name: 'target', scope: ['key:read'] });
  await assertNothingWritten(old, async () => {
    assertError(await roll(old.id, {}, reader.key), 403, MESSAGES.missingScope('key:write'));
    assertError(await service.request('GET', `/v1/key/${old.id}/roll`, { key: project.key }), 422, MESSAGES.unprocessable);
  });
});

test('events: key.created for the new key {rolled_from}, then key.rolled for the old one {replaced_by, grace_s}; grace_s 0 records no more', async () => {
  for (const grace of [120, 0]) {
    const old = await createKey(service, project.key, { name: `audited ${grace}`, scope: ['key:read'] });
    const made = assertSuccess(await roll(old.id, { grace_s: grace }), 201);
    const events = await eventsAbout(old.id, made.id);
    assert.deepEqual(events.map((e: any) => [e.type.name, e.related]), [
      ['key.created', { table: 'key', id: old.id }],
      ['key.created', { table: 'key', id: made.id }],
      ['key.rolled', { table: 'key', id: old.id }],
    ]);
    const [, created, rolled] = events;
    assert.deepEqual(created.details, { rolled_from: old.id });
    assert.deepEqual(rolled.details, { replaced_by: made.id, grace_s: grace });
    assert.equal(rolled.sequence, created.sequence + 1);
    for (const event of [created, rolled]) {
      assert.equal(event.origin, 'api');
      assert.deepEqual(event.actor, { type: 'key', id: project.keyId });
      assert.equal(event.created_at, made.created_at);
      assert.ok(!JSON.stringify(event).includes(made.key.slice('sk-project-'.length)), 'an event holds the secret');
    }
  }
});

test('the typed client rolls a key: keys.roll(keyId, { grace_s })', async () => {
  const client = new Client({ baseUrl: service.baseUrl, apiKey: project.key, ca: readFileSync(service.config.tlsCertFile!) });
  try {
    const old = await createKey(service, project.key, { name: 'by the client', scope: ['key:read'] });
    const made = await client.keys.roll(old.id, { grace_s: 0 });
    assert.equal(made.name, 'by the client');
    assert.match(made.key, SECRET);
    assert.equal((await keyRow(service, old.id))!.status, 'revoked');
    const again = await client.keys.roll(made.id);
    assert.notEqual(again.id, made.id);
    assert.ok((await keyRow(service, made.id))!.expires_at! > nowSeconds() + DAY - 60, 'the default grace: a day');
  } finally {
    client.close();
  }
});
