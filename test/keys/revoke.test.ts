// DELETE /v1/key/<key_id>: revokes at once; never the calling key; other projects' keys are 404.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertError, assertSuccess, MESSAGES } from '../support/assertions.ts';
import { createKey } from '../support/keys.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { keyRow } from './helpers.ts';

const IN_USE = 'Cannot revoke the API key currently in use.';

let service: TestService;
let project: TestProject;
let other: TestProject;

before(async () => {
  service = await TestService.start();
  project = await service.createProject();
  other = await service.createProject();
});
after(() => service.stop());

const revoke = (id: string, key = project.key) => service.request('DELETE', `/v1/key/${id}`, { key });

test('200 with {deleted: true, id}; the revoked key is refused on the very next call', async () => {
  const made = await createKey(service, project.key, { name: 'doomed', scope: ['key:read'] });
  assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));
  const reply = await revoke(made.id);
  assert.deepEqual(assertSuccess(reply), { deleted: true, id: made.id });
  assertError(await service.request('GET', '/v1/key/current', { key: made.key }), 403, MESSAGES.refused);
  assertError(await service.request('GET', '/v1/key', { key: made.key }), 403, MESSAGES.refused);
  // The same answer as a key that never existed.
  const unknown = await service.request('GET', '/v1/key/current', { key: `sk-project-${'A'.repeat(43)}` });
  assert.deepEqual((await service.request('GET', '/v1/key/current', { key: made.key })).body, unknown.body);
});

test('a revoked key with key:write can no longer act', async () => {
  const writer = await createKey(service, project.key, { name: 'writer', scope: ['key:*'] });
  const victim = await createKey(service, project.key, { name: 'victim', scope: ['key:read'] });
  assertSuccess(await revoke(writer.id));
  assertError(await service.request('POST', '/v1/key', { key: writer.key, body: { name: 'n', scope: ['key:read'] } }), 403, MESSAGES.refused);
  assertError(await revoke(victim.id, writer.key), 403, MESSAGES.refused);
  assertSuccess(await service.request('GET', '/v1/key/current', { key: victim.key }));
});

test('the row stays, marked revoked; the key leaves the list and reads as not found', async () => {
  const made = await createKey(service, project.key, { name: 'kept for audit' });
  const before = assertSuccess(await service.request('GET', '/v1/key?limit=100', { key: project.key }));
  assertSuccess(await revoke(made.id));
  const row = await keyRow(service, made.id);
  assert.ok(row, 'the row was deleted');
  assert.equal(row.status, 'revoked');
  const list = assertSuccess(await service.request('GET', '/v1/key?limit=100', { key: project.key }));
  assert.equal(list.total, before.total - 1);
  assert.ok(!list.data.some((k: any) => k.id === made.id));
  assertError(await service.request('GET', `/v1/key/${made.id}`, { key: project.key }), 404, MESSAGES.keyNotFound);
});

test('revoking the calling key, by id or as `current`, gives 422 and the key keeps working', async () => {
  assertError(await revoke(project.keyId), 422, IN_USE);
  assertError(await revoke('current'), 422, IN_USE);
  const made = await createKey(service, project.key, { name: 'self', scope: ['key:*'] });
  assertError(await revoke(made.id, made.key), 422, IN_USE);
  assertError(await revoke('current', made.key), 422, IN_USE);
  assert.equal((await keyRow(service, project.keyId))!.status, 'activated');
  assert.equal((await keyRow(service, made.id))!.status, 'activated');
  assert.equal(assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key })).id, made.id);
  assert.equal(assertSuccess(await service.request('GET', '/v1/key/current', { key: project.key })).id, project.keyId);
});

test('revoking again answers 404 `API key not found.`', async () => {
  const made = await createKey(service, project.key, { name: 'twice' });
  assertSuccess(await revoke(made.id));
  assertError(await revoke(made.id), 404, MESSAGES.keyNotFound);
  assertError(await revoke(made.id), 404, MESSAGES.keyNotFound);
});

test('another project\'s key gives 404 and still works; unknown and malformed ids give the same 404', async () => {
  const theirs = await createKey(service, other.key, { name: 'theirs', scope: ['key:read'] });
  assertError(await revoke(theirs.id), 404, MESSAGES.keyNotFound);
  assertError(await revoke(other.keyId), 404, MESSAGES.keyNotFound);
  assert.equal(assertSuccess(await service.request('GET', '/v1/key/current', { key: theirs.key })).id, theirs.id);
  assert.equal((await keyRow(service, theirs.id))!.status, 'activated');
  for (const id of ['papi_0123456789abcdef0123', 'papi_xyz', 'nonsense']) assertError(await revoke(id), 404, MESSAGES.keyNotFound);
});

test('rotation: the replacement revokes the old key', async () => {
  const old = await createKey(service, project.key, { name: 'old', scope: ['key:*'] });
  const replacement = await createKey(service, old.key, { name: 'new', scope: ['key:*'] });
  assert.deepEqual(assertSuccess(await revoke(old.id, replacement.key)), { deleted: true, id: old.id });
  assertError(await service.request('GET', '/v1/key/current', { key: old.key }), 403, MESSAGES.refused);
  assert.equal(assertSuccess(await service.request('GET', '/v1/key/current', { key: replacement.key })).id, replacement.id);
});

test('revoking needs key:write', async () => {
  const reader = await createKey(service, project.key, { name: 'reader', scope: ['key:read'] });
  const target = await createKey(service, project.key, { name: 'target' });
  assertError(await revoke(target.id, reader.key), 403, 'The API key is missing the required scope: key:write');
  assert.equal((await keyRow(service, target.id))!.status, 'activated');
});

test('revoking records one `key.revoked` event with origin `api`', async () => {
  const made = await createKey(service, project.key, { name: 'audited' });
  assertSuccess(await revoke(made.id));
  await service.waitForJobsDrained();
  const { rows } = await service.db.query(
    `SELECT t.name AS type, e.origin, e.related_table FROM events e JOIN event_types t ON t.id = e.type_id
     WHERE e.related_id = $1 ORDER BY e.created_at, t.name`, [made.id]);
  assert.deepEqual(rows.map((r) => r.type).sort(), ['key.created', 'key.revoked']);
  const revoked = rows.find((r) => r.type === 'key.revoked');
  assert.equal(revoked.origin, 'api');
  assert.equal(revoked.related_table, 'key');
});
