import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertError, assertSuccess } from '../support/assertions.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { nowSeconds } from '../support/wait.ts';
import { APP_NOT_FOUND, backdateApp, createApp, getApp, MODELS } from './helpers.ts';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start();
  project = await service.createProject('Update');
});
after(() => service.stop());

const PATCH_MEMBERS = ['id', 'object', 'name', 'description', 'type', 'status', 'model', 'model_library', 'created_at', 'updated_at'];
const NOTHING = 'Nothing to update. Provide name, description and/or type.';
const patch = (id: string, body?: unknown, key = project.key) => service.request('PATCH', `/v1/app/detail/${id}`, { key, body });

test('PATCH name answers 200 with exactly the summary members and bumps updated_at', async () => {
  const app = await createApp(service, project.key, { name: 'Before', description: 'Kept', category: 'coding' });
  const createdAt = await backdateApp(service, app.id, 3600);
  const reply = await patch(app.id, { name: 'After' });
  const updated = assertSuccess(reply);
  assert.deepEqual(Object.keys(updated).sort(), [...PATCH_MEMBERS].sort());
  assert.equal(updated.id, app.id);
  assert.equal(updated.object, 'app');
  assert.equal(updated.name, 'After');
  assert.equal(updated.description, 'Kept');
  assert.equal(updated.type, 'private');
  assert.equal(updated.status, 'activated');
  assert.equal(updated.model, MODELS.code.model);
  assert.equal(updated.model_library, MODELS.code.build);
  assert.equal(updated.created_at, createdAt, 'created_at does not move');
  assert.ok(updated.updated_at >= nowSeconds() - 5, `updated_at ${updated.updated_at} is the time of the change`);

  const read = await getApp(service, project.key, app.id);
  assert.equal(read.name, 'After');
  assert.equal(read.description, 'Kept');
  assert.equal(read.updated_at, updated.updated_at);
  assert.equal(read.created_at, createdAt);
});

test('PATCH description, and name with description together', async () => {
  const app = await createApp(service, project.key, { name: 'N', description: 'D' });
  assert.equal(assertSuccess(await patch(app.id, { description: 'New description' })).description, 'New description');
  const both = assertSuccess(await patch(app.id, { name: 'New name', description: 'Newer description' }));
  assert.deepEqual([both.name, both.description], ['New name', 'Newer description']);
  const read = await getApp(service, project.key, app.id);
  assert.deepEqual([read.name, read.description], ['New name', 'Newer description']);
});

test('unknown members are ignored beside a recognised one', async () => {
  const app = await createApp(service, project.key, { name: 'Ignore extras' });
  const updated = assertSuccess(await patch(app.id, { name: 'Renamed', status: 'draft', model: 'modi_x', logo: 'file_x' }));
  assert.equal(updated.name, 'Renamed');
  assert.equal(updated.status, 'activated');
  assert.equal(updated.model, MODELS.text.model);
});

test('nothing to update: empty object, empty body, or only unknown members', async () => {
  const app = await createApp(service, project.key);
  assertError(await patch(app.id, {}), 422, NOTHING);
  assertError(await patch(app.id), 422, NOTHING);
  assertError(await patch(app.id, { status: 'draft', foo: 1 }), 422, NOTHING);
});

test('empty name or description is refused', async () => {
  const app = await createApp(service, project.key, { name: 'Keep me', description: 'Keep this' });
  assertError(await patch(app.id, { name: '' }), 422, 'name must not be empty.');
  assertError(await patch(app.id, { name: '   ' }), 422, 'name must not be empty.');
  assertError(await patch(app.id, { description: '' }), 422, 'description must not be empty.');
  assertError(await patch(app.id, { description: '  ' }), 422, 'description must not be empty.');
  const read = await getApp(service, project.key, app.id);
  assert.deepEqual([read.name, read.description], ['Keep me', 'Keep this']);
});

test('type other than public or private is refused', async () => {
  const app = await createApp(service, project.key);
  for (const type of ['secret', '', 'Public', 'PRIVATE', 1, true]) {
    assertError(await patch(app.id, { type }), 422, "type must be 'public' or 'private'.");
  }
  assert.equal((await getApp(service, project.key, app.id)).type, 'private');
});

test('a refused PATCH applies nothing, not even its valid members', async () => {
  const app = await createApp(service, project.key, { name: 'Untouched', description: 'Untouched too' });
  const before = await getApp(service, project.key, app.id);
  assertError(await patch(app.id, { name: 'Half applied', type: 'bogus' }), 422, "type must be 'public' or 'private'.");
  assertError(await patch(app.id, { name: 'Half applied', description: '' }), 422, 'description must not be empty.');
  assertError(await patch(app.id, { name: 'Half applied', type: 'public' }), 422, 'The app needs an image logo before it can be published.');
  assert.deepEqual(await getApp(service, project.key, app.id), before);
});

test('type private on a private app succeeds and leaves it private', async () => {
  const app = await createApp(service, project.key);
  const updated = assertSuccess(await patch(app.id, { type: 'private' }));
  assert.equal(updated.type, 'private');
});

test('PATCH of a made-up or malformed id answers 404 App not found.', async () => {
  for (const id of ['mapp_0123456789abcdef0123', 'not-an-id', 'mapp_XYZ']) {
    const reply = await patch(id, { name: 'x' });
    assert.equal(reply.status, 404, id);
    assert.deepEqual(reply.body, APP_NOT_FOUND);
  }
});

test('PATCH with nothing to update answers 422 for any id, well-formed, made-up or malformed (the body is checked first)', async () => {
  const app = await createApp(service, project.key, { name: 'Untouched' });
  for (const id of [app.id, 'mapp_0123456789abcdef0123', 'not-an-id']) assertError(await patch(id, {}), 422, NOTHING);
  assert.equal((await getApp(service, project.key, app.id)).name, 'Untouched');
});

test('PATCH of a deleted app answers 404 App not found.', async () => {
  const app = await createApp(service, project.key);
  assertSuccess(await service.request('DELETE', `/v1/app/detail/${app.id}`, { key: project.key }));
  assertError(await patch(app.id, { name: 'x' }), 404, 'App not found.');
  assertError(await patch(app.id, { type: 'private' }), 404, 'App not found.');
});

test('PATCH needs app:write', async () => {
  const app = await createApp(service, project.key, { name: 'Scoped' });
  const reader = assertSuccess(await service.request('POST', '/v1/key', { key: project.key, body: { name: 'reader', scope: ['app:read'] } }), 201);
  assertError(await patch(app.id, { name: 'x' }, reader.key), 403, 'The API key is missing the required scope: app:write');
  assert.equal((await getApp(service, project.key, app.id)).name, 'Scoped');
});
