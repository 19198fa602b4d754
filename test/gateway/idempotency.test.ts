// Idempotent retries: the first answer under a key's Idempotency-Key is kept with its change and
// replayed for the same request; another request under it is 422, one still running 409; answers of
// earlier steps and failures of the service are not kept; kept answers are sealed and last 24 hours.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { purgeIdempotentRequests } from '../../domain/idempotency.ts';
import { appBody } from '../apps/helpers.ts';
import { assertError, assertSuccess, MESSAGES } from '../support/assertions.ts';
import { createKey } from '../support/keys.ts';
import { TestService, type TestProject } from '../support/service.ts';

const INVALID = 'Idempotency-Key must be 1 to 255 visible ASCII characters.';
const MISMATCH = 'Idempotency-Key was already used with a different request.';
const IN_PROGRESS = 'A request with this Idempotency-Key is in progress.';

let service: TestService;
let p: TestProject;
let counter = 0;
before(async () => {
  service = await TestService.start();
  p = await service.createProject('Idempotent');
});
after(() => service.stop());

const fresh = () => `retry-${process.pid}-${++counter}`;
const send = (method: string, path: string, value: string | undefined, body?: unknown, key = p.key) =>
  service.request(method, path, { key, body, headers: value === undefined ? {} : { 'Idempotency-Key': value } });

async function count(sql: string, ...values: unknown[]): Promise<number> {
  const { rows } = await service.db.query(sql, values);
  return rows[0].n;
}

test('a key creation retried with its value answers the same key and secret once more, with no second key or event', async () => {
  const value = fresh();
  const body = { name: 'made once', scope: ['key:read'] };
  const first = await send('POST', '/v1/key', value, body);
  const made = assertSuccess(first, 201);
  assert.equal(first.headers['idempotent-replayed'], undefined);
  const again = await send('POST', '/v1/key', value, body);
  assert.deepEqual(assertSuccess(again, 201), made);
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.equal(made.key.startsWith('sk-project-'), true);
  assert.equal(await count("SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1 AND name = 'made once'", p.projectId), 1);
  await service.waitForJobsDrained();
  assert.equal(await count("SELECT count(*)::int AS n FROM events WHERE related_id = $1 AND project_id = $2", made.id, p.projectId), 1);
  const [{ sealed }] = (await service.db.query('SELECT sealed_response AS sealed FROM idempotent_requests WHERE idempotency_key = $1', [value])).rows;
  assert.equal(sealed.includes(made.key), false, 'the secret is kept sealed');
  assert.equal(service.logText().includes(made.key), false, 'never in the log');
});

test('the body is compared as parsed JSON: the same members in another order and spacing replay', async () => {
  const value = fresh();
  const made = assertSuccess(await send('POST', '/v1/key', value, '{"name":"parsed","scope":["key:read"]}'), 201);
  const again = await send('POST', '/v1/key', value, '{ "scope" : [ "key:read" ], "name" : "parsed" }');
  assert.deepEqual(assertSuccess(again, 201), made);
  assert.equal(again.headers['idempotent-replayed'], 'true');
});

test('another body, path or method under a used value is 422', async () => {
  const value = fresh();
  assertSuccess(await send('POST', '/v1/key', value, { name: 'first' }), 201);
  assertError(await send('POST', '/v1/key', value, { name: 'second' }), 422, MISMATCH);
  assertError(await send('POST', '/v1/app/create', value, appBody()), 422, MISMATCH);
  assertError(await send('DELETE', '/v1/key/papi_00000000000000000000', value), 422, MISMATCH);
});

test('the value belongs to the calling key: another key may use the same value for its own request', async () => {
  const value = fresh();
  const other = await createKey(service, p.key, { name: 'another caller', scope: ['key:*'] });
  const mine = assertSuccess(await send('POST', '/v1/key', value, { name: 'mine', scope: ['key:read'] }), 201);
  const theirs = await send('POST', '/v1/key', value, { name: 'theirs', scope: ['key:read'] }, other.key);
  assert.notEqual(assertSuccess(theirs, 201).id, mine.id);
  assert.equal(theirs.headers['idempotent-replayed'], undefined);
});

test('app creation, edit and deletion replay their answers without a second change', async () => {
  const create = fresh();
  const app = assertSuccess(await send('POST', '/v1/app/create', create, appBody({ name: 'Once' })));
  assert.deepEqual(assertSuccess(await send('POST', '/v1/app/create', create, appBody({ name: 'Once' }))), app);
  assert.equal(await count("SELECT count(*)::int AS n FROM apps WHERE project_id = $1 AND name = 'Once'", p.projectId), 1);

  const edit = fresh();
  const edited = assertSuccess(await send('PATCH', `/v1/app/detail/${app.id}`, edit, { name: 'Twice' }));
  assertSuccess(await send('PATCH', `/v1/app/detail/${app.id}`, fresh(), { name: 'Thrice' }));
  const replayed = await send('PATCH', `/v1/app/detail/${app.id}`, edit, { name: 'Twice' });
  assert.deepEqual(assertSuccess(replayed), edited, 'the kept answer, though the app moved on');
  assert.equal(replayed.headers['idempotent-replayed'], 'true');

  const remove = fresh();
  const deleted = assertSuccess(await send('DELETE', `/v1/app/detail/${app.id}`, remove));
  assert.deepEqual(assertSuccess(await send('DELETE', `/v1/app/detail/${app.id}`, remove)), deleted, 'not 404: the kept answer');
  assertError(await send('DELETE', `/v1/app/detail/${app.id}`, fresh()), 404, MESSAGES.appNotFound);
  await service.waitForJobsDrained();
  assert.equal(await count("SELECT count(*)::int AS n FROM events WHERE related_id = $1 AND type_id = (SELECT id FROM event_types WHERE name = 'app.deleted')", app.id), 1);
});

test('a validation failure (step 11) is kept; an earlier step\'s answer (400 Invalid JSON) is not', async () => {
  const value = fresh();
  assertError(await send('POST', '/v1/key', value, { name: '' }), 422, 'name is required.');
  const again = await send('POST', '/v1/key', value, { name: '' });
  assertError(again, 422, 'name is required.');
  assert.equal(again.headers['idempotent-replayed'], 'true');

  const early = fresh();
  assertError(await send('POST', '/v1/key', early, '{not json'), 400, MESSAGES.invalidJson);
  const made = await send('POST', '/v1/key', early, { name: 'after a bad body' });
  assertSuccess(made, 201);
  assert.equal(made.headers['idempotent-replayed'], undefined, 'the 400 was not kept');
});

test('a value that is not 1 to 255 visible ASCII characters is 400, before any work', async () => {
  for (const bad of ['', 'x'.repeat(256), 'has space', 'tab\there', 'é']) {
    const reply = await service.request('POST', '/v1/key', { key: p.key, body: { name: 'never made' }, headers: { 'Idempotency-Key': bad } }).catch((err: Error) => err);
    if (reply instanceof Error) continue; // a header Node itself will not send
    assertError(reply, 400, INVALID, JSON.stringify(bad));
  }
  assertSuccess(await send('POST', '/v1/key', 'x'.repeat(255), { name: 'longest value' }), 201);
  assert.equal(await count("SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1 AND name = 'never made'", p.projectId), 0);
  const get = await service.request('GET', '/v1/key/current', { key: p.key, headers: { 'Idempotency-Key': 'has space' } });
  assertSuccess(get);
});

test('while the first request under a value runs, a second is 409 with Retry-After: 1', async () => {
  const value = fresh();
  const holder = new pg.Client({ connectionString: service.databaseUrl });
  await holder.connect();
  try {
    await holder.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [`${p.keyId}\n${value}`]);
    const busy = await send('POST', '/v1/key', value, { name: 'in progress' });
    assertError(busy, 409, IN_PROGRESS);
    assert.equal(busy.headers['retry-after'], '1');
  } finally {
    await holder.end();
  }
  assertSuccess(await send('POST', '/v1/key', value, { name: 'in progress' }), 201);
});

test('a kept answer older than 24 hours no longer counts, and the purge deletes it', async () => {
  const value = fresh();
  const first = assertSuccess(await send('POST', '/v1/key', value, { name: 'old answer' }), 201);
  await service.db.query("UPDATE idempotent_requests SET created_at = created_at - interval '25 hours' WHERE idempotency_key = $1", [value]);
  const second = await send('POST', '/v1/key', value, { name: 'old answer' });
  assert.notEqual(assertSuccess(second, 201).id, first.id, 'run afresh');
  assert.equal(second.headers['idempotent-replayed'], undefined);
  const older = fresh();
  assertSuccess(await send('POST', '/v1/key', older, { name: 'to purge' }), 201);
  await service.db.query("UPDATE idempotent_requests SET created_at = created_at - interval '25 hours' WHERE idempotency_key = $1", [older]);
  assert.ok(await purgeIdempotentRequests(service.db) >= 1);
  assert.equal(await count('SELECT count(*)::int AS n FROM idempotent_requests WHERE idempotency_key = $1', older), 0);
  assert.equal(await count('SELECT count(*)::int AS n FROM idempotent_requests WHERE idempotency_key = $1', value), 1, 'the fresh answer stays');
});

test('a refused key is not kept: after its refusal the value runs afresh for a key that works', async () => {
  const value = fresh();
  const doomed = await createKey(service, p.key, { name: 'doomed', scope: ['key:*'] });
  assertSuccess(await service.request('DELETE', `/v1/key/${doomed.id}`, { key: p.key }));
  const refused = await send('POST', '/v1/key', value, { name: 'by a revoked key' }, doomed.key);
  assert.equal(refused.status, 403);
  assert.equal(await count('SELECT count(*)::int AS n FROM idempotent_requests WHERE idempotency_key = $1', value), 0);
});

test('a key roll retried with its value answers the same new key and secret, with no second key or event', async () => {
  const old = await createKey(service, p.key, { name: 'rolled once', scope: ['key:read'] });
  const value = fresh();
  const first = await send('POST', `/v1/key/${old.id}/roll`, value, { grace_s: 60 });
  const made = assertSuccess(first, 201);
  const again = await send('POST', `/v1/key/${old.id}/roll`, value, { grace_s: 60 });
  assert.deepEqual(assertSuccess(again, 201), made);
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.match(made.key, /^sk-project-/);
  assertError(await send('POST', `/v1/key/${old.id}/roll`, value, { grace_s: 0 }), 422, MISMATCH);
  assert.equal(await count("SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1 AND name = 'rolled once'", p.projectId), 2);
  await service.waitForJobsDrained();
  assert.equal(await count("SELECT count(*)::int AS n FROM events e JOIN event_types t ON t.id = e.type_id WHERE t.name = 'key.rolled' AND e.related_id = $1", old.id), 1);
  assert.equal(service.logText().includes(made.key), false, 'never in the log');
});
