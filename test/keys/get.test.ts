// GET /v1/key/<key_id>: one key of the calling project; everything else is the same 404.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertError, assertSuccess, MESSAGES } from '../support/assertions.ts';
import { createKey } from '../support/keys.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { nowSeconds } from '../support/wait.ts';
import { KEY_FIELDS } from './helpers.ts';

let service: TestService;
let project: TestProject;
let other: TestProject;

before(async () => {
  service = await TestService.start();
  project = await service.createProject();
  other = await service.createProject();
});
after(() => service.stop());

test('GET /v1/key/<id> answers one of the project\'s keys, without its secret', async () => {
  const future = nowSeconds() + 86_400;
  const made = await createKey(service, project.key, { name: 'Reader', scope: ['key:read', 'app:read'], expires_at: future });
  const reply = await service.request('GET', `/v1/key/${made.id}`, { key: project.key });
  const key = assertSuccess(reply);
  assert.deepEqual(Object.keys(key).sort(), KEY_FIELDS);
  const { key: _secret, ...created } = made.object;
  assert.deepEqual(key, created);
  assert.equal(key.id, made.id);
  assert.equal(key.object, 'api_key');
  assert.equal(key.name, 'Reader');
  assert.equal(key.key_preview, `sk-project-...${made.key.slice(-4)}`);
  assert.deepEqual(key.scope, ['key:read', 'app:read']);
  assert.equal(key.status, 'activated');
  assert.equal(key.expires_at, future);
  assert.equal(key.last_used_at, null);
  assert.equal(key.created_by, project.consumerId);
  assert.equal(typeof key.created_at, 'number');
  assert.equal(typeof key.updated_at, 'number');
  assert.ok(!reply.text.includes(made.key));
});

test('GET /v1/key/<own id> answers the calling key, the same as `current`', async () => {
  const byId = assertSuccess(await service.request('GET', `/v1/key/${project.keyId}`, { key: project.key }));
  assert.equal(byId.id, project.keyId);
  assert.equal(byId.name, 'Default key');
  assert.deepEqual(byId.scope, ['*']);
  const current = assertSuccess(await service.request('GET', '/v1/key/current', { key: project.key }));
  assert.equal(current.id, project.keyId);
  assert.deepEqual(Object.keys(current).sort(), KEY_FIELDS);
  // last_used_at may be written between the two reads; everything else is the same record.
  const { last_used_at: _a, ...a } = byId;
  const { last_used_at: _b, ...b } = current;
  assert.deepEqual(a, b);
});

test('`current` resolves to the calling key, not the project\'s first key', async () => {
  const made = await createKey(service, project.key, { name: 'Second', scope: ['key:read'] });
  const current = assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));
  assert.equal(current.id, made.id);
  assert.equal(current.name, 'Second');
  assert.deepEqual(current.scope, ['key:read']);
  assert.ok(!('key' in current));
});

test('another project\'s key, a made-up id and a malformed id all give the identical 404', async () => {
  const theirs = await createKey(service, other.key, { name: 'theirs' });
  const candidates = [
    theirs.id,
    other.keyId,
    'papi_0123456789abcdef0123',
    'papi_ffffffffffffffffffff',
    'papi_xyz',
    'papi_0123456789ABCDEF0123',
    'not-a-key',
    'mapp_0123456789abcdef0123',
    'currentx',
  ];
  for (const id of candidates) {
    const reply = await service.request('GET', `/v1/key/${id}`, { key: project.key });
    assertError(reply, 404, MESSAGES.keyNotFound);
  }
  // The other project still reads its own key.
  assert.equal(assertSuccess(await service.request('GET', `/v1/key/${theirs.id}`, { key: other.key })).id, theirs.id);
});

test('a revoked key answers 404 `API key not found.`', async () => {
  const made = await createKey(service, project.key, { name: 'to revoke' });
  assert.equal(assertSuccess(await service.request('GET', `/v1/key/${made.id}`, { key: project.key })).status, 'activated');
  assertSuccess(await service.request('DELETE', `/v1/key/${made.id}`, { key: project.key }));
  assertError(await service.request('GET', `/v1/key/${made.id}`, { key: project.key }), 404, MESSAGES.keyNotFound);
});

test('an expired key reads with status `expired`', async () => {
  const made = await createKey(service, project.key, { name: 'expiring', expires_at: nowSeconds() + 3600 });
  await service.db.query("UPDATE api_keys SET expires_at = now() - interval '1 minute' WHERE id = $1", [made.id]);
  const key = assertSuccess(await service.request('GET', `/v1/key/${made.id}`, { key: project.key }));
  assert.equal(key.status, 'expired');
});

test('reading a key needs key:read', async () => {
  const made = await createKey(service, project.key, { name: 'apps only', scope: ['app:*'] });
  assertError(await service.request('GET', `/v1/key/${project.keyId}`, { key: made.key }), 403,
    'The API key is missing the required scope: key:read');
  assertError(await service.request('GET', '/v1/key/current', { key: made.key }), 403,
    'The API key is missing the required scope: key:read');
  const reader = await createKey(service, project.key, { name: 'key:*', scope: ['key:*'] });
  assert.equal(assertSuccess(await service.request('GET', `/v1/key/${project.keyId}`, { key: reader.key })).id, project.keyId);
});
