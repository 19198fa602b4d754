// POST /v1/key, the subset rule: a new key never holds more than the creating key; a wider
// request is refused (403), never trimmed. The default ["*"] applies no narrowing.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertError } from '../support/assertions.ts';
import { createKey } from '../support/keys.ts';
import { TestService, type TestProject } from '../support/service.ts';

const WIDER = 'Cannot create a key with wider scope than the calling key.';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start();
  project = await service.createProject();
});
after(() => service.stop());

/** A key of the project holding exactly `scope`, made by the `*` key. */
async function keyWith(scope: string[]): Promise<string> {
  return (await createKey(service, project.key, { name: `holds ${scope.join(' ')}`, scope })).key;
}

async function keyCount(): Promise<number> {
  const { rows } = await service.db.query('SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1', [project.projectId]);
  return rows[0].n;
}

async function refused(callerKey: string, body: Record<string, unknown>): Promise<void> {
  const count = await keyCount();
  const reply = await service.request('POST', '/v1/key', { key: callerKey, body });
  assertError(reply, 403, WIDER);
  assert.equal(await keyCount(), count, 'a key was created although the request was refused');
}

async function allowed(callerKey: string, scope: string[], expected = scope): Promise<void> {
  const made = await createKey(service, callerKey, { name: 'allowed', scope });
  assert.deepEqual(made.object.scope, expected);
  // The new key really holds what it shows.
  const { rows } = await service.db.query('SELECT scope FROM api_keys WHERE id = $1', [made.id]);
  assert.deepEqual(rows[0].scope, expected);
}

test('an exact scope does not cover another action on the same resource', async () => {
  // key:write is needed to reach the endpoint at all; key:read is then not within it.
  const caller = await keyWith(['key:write']);
  await refused(caller, { name: 'n', scope: ['key:read'] });
  await refused(caller, { name: 'n', scope: ['key:*'] });
  await refused(caller, { name: 'n', scope: ['*'] });
});

test('key:read (with key:write to reach the endpoint) cannot create key:* or other resources', async () => {
  const caller = await keyWith(['key:read', 'key:write']);
  await refused(caller, { name: 'n', scope: ['key:*'] });
  await refused(caller, { name: 'n', scope: ['app:read'] });
  await refused(caller, { name: 'n', scope: ['key:read', 'event:read'] });
});

test('key:* cannot create *', async () => {
  const caller = await keyWith(['key:*']);
  await refused(caller, { name: 'n', scope: ['*'] });
  await refused(caller, { name: 'n', scope: ['key:read', '*'] });
});

test('key:* cannot create another resource\'s scope', async () => {
  const caller = await keyWith(['key:*']);
  await refused(caller, { name: 'n', scope: ['app:read'] });
  await refused(caller, { name: 'n', scope: ['event:*'] });
});

test('app:read cannot create app:* or app:write', async () => {
  const caller = await keyWith(['key:write', 'app:read']);
  await refused(caller, { name: 'n', scope: ['app:*'] });
  await refused(caller, { name: 'n', scope: ['app:write'] });
});

test('a request partly outside the caller\'s scope is refused whole, never trimmed', async () => {
  const caller = await keyWith(['key:write', 'app:read']);
  await refused(caller, { name: 'n', scope: ['app:read', 'event:read'] });
  await refused(caller, { name: 'n', scope: ['key:write', 'app:read', 'reasoning:*'] });
});

test('a narrow key that omits scope gets 403: the default ["*"] is not narrowed', async () => {
  for (const scope of [['key:write'], ['key:*'], ['key:*', 'app:*', 'event:*']]) {
    const caller = await keyWith(scope);
    await refused(caller, { name: 'default' });
    await refused(caller, { name: 'default', expires_at: 0 });
  }
});

test('`*` creates anything, including `*`', async () => {
  await allowed(project.key, ['*']);
  await allowed(project.key, ['key:read']);
  await allowed(project.key, ['reasoning:*', 'usage:read']);
  const made = await createKey(service, project.key, { name: 'default' });
  assert.deepEqual(made.object.scope, ['*']);
  // A `*` key made by the API may itself create `*`, also by default.
  const child = await createKey(service, made.key, { name: 'grandchild' });
  assert.deepEqual(child.object.scope, ['*']);
});

test('`key:*` creates key:read, key:write and key:*', async () => {
  const caller = await keyWith(['key:*']);
  await allowed(caller, ['key:read']);
  await allowed(caller, ['key:write']);
  await allowed(caller, ['key:read', 'key:write']);
  await allowed(caller, ['key:*']);
});

test('an exact scope creates itself, and any part of the caller\'s scope', async () => {
  const caller = await keyWith(['key:write', 'app:read', 'event:*']);
  await allowed(caller, ['app:read']);
  await allowed(caller, ['key:write']);
  await allowed(caller, ['key:write', 'app:read', 'event:*']);
  await allowed(caller, ['event:read', 'event:*']);
  await allowed(caller, ['app:read', 'app:read'], ['app:read']);
});

test('a created narrow key is itself bound by the rule', async () => {
  const caller = await keyWith(['key:*', 'app:read']);
  const child = await createKey(service, caller, { name: 'child', scope: ['key:write', 'app:read'] });
  await refused(child.key, { name: 'n', scope: ['key:read'] });
  await refused(child.key, { name: 'n', scope: ['key:*'] });
  await allowed(child.key, ['app:read']);
});

test('nor a longer life: a key that expires cannot make one that expires later or never (403, nothing made); at or before its own expiry it can', async () => {
  const OUTLIVES = 'Cannot create a key that outlives the calling key.';
  const expiresAt = Math.floor(Date.now() / 1000) + 3600;
  const shortLived = (await createKey(service, project.key, { name: 'short-lived', scope: ['key:*'], expires_at: expiresAt })).key;
  for (const body of [{ name: 'forever' }, { name: 'forever', expires_at: 0 }, { name: 'forever', expires_at: null }, { name: 'later', expires_at: expiresAt + 1 }]) {
    const count = await keyCount();
    assertError(await service.request('POST', '/v1/key', { key: shortLived, body: { ...body, scope: ['key:read'] } }), 403, OUTLIVES);
    assert.equal(await keyCount(), count, JSON.stringify(body));
  }
  for (const at of [expiresAt, expiresAt - 60]) {
    const made = await createKey(service, shortLived, { name: 'within', scope: ['key:read'], expires_at: at });
    assert.equal(made.object.expires_at, at);
  }
  // A key without expiry makes keys with or without one, as before.
  assert.equal((await createKey(service, project.key, { name: 'forever', scope: ['key:read'] })).object.expires_at, null);
});
