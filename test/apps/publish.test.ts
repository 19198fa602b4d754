import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { activateApp, setLogo } from '../../domain/apps.ts';
import { assertError, assertSuccess } from '../support/assertions.ts';
import { workspaceOk } from '../support/cli.ts';
import { ID } from '../support/ids.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { APP_NOT_FOUND, createApp, getApp, LOGO_BYTES, logoFile } from './helpers.ts';

let service: TestService;
let owner: TestProject;
let other: TestProject;

before(async () => {
  service = await TestService.start();
  owner = await service.createProject('Publisher');
  other = await service.createProject('Other');
});
after(() => service.stop());

const NEEDS_ACTIVATION = 'The app must be activated before it can be published.';
const NEEDS_LOGO = 'The app needs an image logo before it can be published.';
const workspaceActor = { origin: 'workspace' as const, ip: '127.0.0.1' };
const patch = (id: string, body: unknown) => service.request('PATCH', `/v1/app/detail/${id}`, { key: owner.key, body });
const attach = (id: string, bytes: Buffer, name: string) => setLogo(service.services, workspaceActor, id, logoFile(bytes, name));

async function assertPrivate(id: string) {
  assert.equal((await getApp(service, owner.key, id)).type, 'private');
  assert.deepEqual((await service.request('GET', `/v1/app/detail/${id}`, { key: other.key })).body, APP_NOT_FOUND);
}

test('publishing a draft app is refused, even with an image logo', async () => {
  const app = await createApp(service, owner.key, { status: 'draft' });
  await attach(app.id, LOGO_BYTES.png, 'logo.png');
  assertError(await patch(app.id, { type: 'public' }), 422, NEEDS_ACTIVATION);
  await assertPrivate(app.id);
});

test('publishing an activated app without a logo is refused', async () => {
  const app = await createApp(service, owner.key);
  assertError(await patch(app.id, { type: 'public' }), 422, NEEDS_LOGO);
  await assertPrivate(app.id);
});

test('publishing with a non-image logo (a text file attached with `app logo`) is refused', async () => {
  const app = await createApp(service, owner.key);
  // Named like an image, but the bytes are text: the bytes decide.
  const attached = await workspaceOk(service, ['app', 'logo', app.id, '--file', logoFile(LOGO_BYTES.text, 'logo.png')]);
  assert.ok(attached);
  const read = await getApp(service, owner.key, app.id);
  assert.match(read.logo, ID.file, 'the file is attached as the logo');
  assertError(await patch(app.id, { type: 'public' }), 422, NEEDS_LOGO);
  await assertPrivate(app.id);
});

test('a RIFF file that is not WebP is not an image logo', async () => {
  const app = await createApp(service, owner.key);
  await attach(app.id, LOGO_BYTES.riffNotWebp, 'logo.webp');
  assertError(await patch(app.id, { type: 'public' }), 422, NEEDS_LOGO);
  await assertPrivate(app.id);
});

test('an activated app with a PNG logo (via `app logo`) is published and readable by other projects', async () => {
  const app = await createApp(service, owner.key, { name: 'PNG app' });
  await workspaceOk(service, ['app', 'logo', app.id, '--file', logoFile(LOGO_BYTES.png, 'logo.png')]);
  const updated = assertSuccess(await patch(app.id, { type: 'public' }));
  assert.equal(updated.type, 'public');
  assert.equal(updated.status, 'activated');
  assert.equal((await getApp(service, owner.key, app.id)).type, 'public');
  const seen = await getApp(service, other.key, app.id);
  assert.equal(seen.name, 'PNG app');
  assert.equal(seen.type, 'public');
  assert.equal(seen.instruction, null);
});

test('JPEG and WebP logos are image logos, judged by bytes whatever the file name', async () => {
  for (const [bytes, name] of [[LOGO_BYTES.jpeg, 'logo.jpg'], [LOGO_BYTES.webp, 'logo.webp'], [LOGO_BYTES.png, 'logo.txt'], [LOGO_BYTES.jpeg, 'no-extension']] as const) {
    const app = await createApp(service, owner.key, { name: `Logo ${name}` });
    await attach(app.id, bytes, name);
    assert.equal(assertSuccess(await patch(app.id, { type: 'public' })).type, 'public', name);
    assert.equal((await getApp(service, other.key, app.id)).id, app.id);
  }
});

test('a draft with an image logo can be published once activated', async () => {
  const app = await createApp(service, owner.key, { status: 'draft' });
  await attach(app.id, LOGO_BYTES.png, 'logo.png');
  assertError(await patch(app.id, { type: 'public' }), 422, NEEDS_ACTIVATION);
  await activateApp(service.services, workspaceActor, app.id);
  assert.equal(assertSuccess(await patch(app.id, { type: 'public' })).type, 'public');
});

test('replacing an image logo with a text file makes a private app unpublishable', async () => {
  const app = await createApp(service, owner.key);
  await attach(app.id, LOGO_BYTES.png, 'logo.png');
  await attach(app.id, LOGO_BYTES.text, 'logo.png');
  assertError(await patch(app.id, { type: 'public' }), 422, NEEDS_LOGO);
});

test('unpublishing always succeeds, also for a draft or an app whose logo is no longer an image', async () => {
  const app = await createApp(service, owner.key);
  await attach(app.id, LOGO_BYTES.png, 'logo.png');
  assertSuccess(await patch(app.id, { type: 'public' }));
  await attach(app.id, LOGO_BYTES.text, 'notes.txt');
  const withdrawn = assertSuccess(await patch(app.id, { type: 'private' }));
  assert.equal(withdrawn.type, 'private');
  await assertPrivate(app.id);

  // Created public as a draft (no logo): withdrawing it still succeeds.
  const draft = await createApp(service, owner.key, { status: 'draft', type: 'public' });
  assert.equal(assertSuccess(await patch(draft.id, { type: 'private' })).type, 'private');
});

test('publishing with a name change applies both', async () => {
  const app = await createApp(service, owner.key, { name: 'Old' });
  await attach(app.id, LOGO_BYTES.png, 'logo.png');
  const updated = assertSuccess(await patch(app.id, { name: 'New', type: 'public' }));
  assert.deepEqual([updated.name, updated.type], ['New', 'public']);
  assert.equal((await getApp(service, other.key, app.id)).name, 'New');
});
