import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setLogo } from '../../domain/apps.ts';
import { assertSuccess } from '../support/assertions.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { APP_NOT_FOUND, createApp, getApp, LOGO_BYTES, logoFile } from './helpers.ts';

let service: TestService;
let owner: TestProject;
let reader: TestProject;

before(async () => {
  service = await TestService.start();
  owner = await service.createProject('Owner');
  reader = await service.createProject('Reader');
});
after(() => service.stop());

const workspaceActor = { origin: 'workspace' as const, ip: '127.0.0.1' };
const MADE_UP = 'mapp_0123456789abcdef0123';

async function publishedApp(name = 'Shared'): Promise<any> {
  const app = await createApp(service, owner.key, { name, description: 'Shared description' });
  await setLogo(service.services, workspaceActor, app.id, logoFile(LOGO_BYTES.png, 'logo.png'));
  const patched = assertSuccess(await service.request('PATCH', `/v1/app/detail/${app.id}`, { key: owner.key, body: { type: 'public' } }));
  assert.equal(patched.type, 'public');
  return app;
}

function assertSameAsMadeUp(reply: { status: number; body: any; text: string }, madeUp: { text: string }) {
  assert.equal(reply.status, 404);
  assert.deepEqual(reply.body, APP_NOT_FOUND);
  assert.equal(reply.text, madeUp.text);
}

test('PATCH of another project\'s public app answers 404 like a made-up id and changes nothing', async () => {
  const app = await publishedApp('Not yours to edit');
  const before = await getApp(service, owner.key, app.id);
  for (const body of [{ name: 'Hijacked' }, { description: 'Hijacked' }, { type: 'private' }, { type: 'public' }, {}]) {
    const madeUp = await service.request('PATCH', `/v1/app/detail/${MADE_UP}`, { key: reader.key, body });
    const reply = await service.request('PATCH', `/v1/app/detail/${app.id}`, { key: reader.key, body });
    if (Object.keys(body).length > 0) assertSameAsMadeUp(reply, madeUp);
    else assert.equal(reply.text, madeUp.text, 'an empty PATCH answers alike for both');
  }
  assert.deepEqual(await getApp(service, owner.key, app.id), before);
});

test('DELETE of another project\'s public app answers 404 like a made-up id and deletes nothing', async () => {
  const app = await publishedApp('Not yours to delete');
  const madeUp = await service.request('DELETE', `/v1/app/detail/${MADE_UP}`, { key: reader.key });
  assertSameAsMadeUp(madeUp, madeUp);
  assertSameAsMadeUp(await service.request('DELETE', `/v1/app/detail/${app.id}`, { key: reader.key }), madeUp);
  const still = await getApp(service, owner.key, app.id);
  assert.equal(still.type, 'public');
  assert.equal((await getApp(service, reader.key, app.id)).id, app.id, 'still readable by others');
});

test('PATCH and DELETE of another project\'s private app answer 404 like a made-up id', async () => {
  const app = await createApp(service, owner.key, { name: 'Private' });
  const patchMadeUp = await service.request('PATCH', `/v1/app/detail/${MADE_UP}`, { key: reader.key, body: { name: 'x' } });
  assertSameAsMadeUp(await service.request('PATCH', `/v1/app/detail/${app.id}`, { key: reader.key, body: { name: 'x' } }), patchMadeUp);
  const deleteMadeUp = await service.request('DELETE', `/v1/app/detail/${MADE_UP}`, { key: reader.key });
  assertSameAsMadeUp(await service.request('DELETE', `/v1/app/detail/${app.id}`, { key: reader.key }), deleteMadeUp);
  const getMadeUp = await service.request('GET', `/v1/app/detail/${MADE_UP}`, { key: reader.key });
  assertSameAsMadeUp(await service.request('GET', `/v1/app/detail/${app.id}`, { key: reader.key }), getMadeUp);
  assert.equal((await getApp(service, owner.key, app.id)).name, 'Private');
});

test('another project\'s public app is readable but never listed by the reader', async () => {
  const app = await publishedApp('Catalogued');
  const seen = await getApp(service, reader.key, app.id);
  assert.equal(seen.instruction, null);
  const list = assertSuccess(await service.request('GET', '/v1/app/list?limit=100', { key: reader.key }));
  assert.ok(!list.data.some((e: any) => e.id === app.id));
});

test('unpublishing hides the app from other projects again; publishing again shows it', async () => {
  const app = await publishedApp('Comes and goes');
  await getApp(service, reader.key, app.id);
  assertSuccess(await service.request('PATCH', `/v1/app/detail/${app.id}`, { key: owner.key, body: { type: 'private' } }));
  const madeUp = await service.request('GET', `/v1/app/detail/${MADE_UP}`, { key: reader.key });
  assertSameAsMadeUp(await service.request('GET', `/v1/app/detail/${app.id}`, { key: reader.key }), madeUp);
  assertSuccess(await service.request('PATCH', `/v1/app/detail/${app.id}`, { key: owner.key, body: { type: 'public' } }));
  assert.equal((await getApp(service, reader.key, app.id)).type, 'public');
});

test('a public app that is no longer activated is not readable by others', async () => {
  const app = await publishedApp('Deactivated');
  await getApp(service, reader.key, app.id);
  // There is no deactivation command; set the status directly to check the read rule.
  await service.db.query("UPDATE apps SET status = 'draft' WHERE id = $1", [app.id]);
  const madeUp = await service.request('GET', `/v1/app/detail/${MADE_UP}`, { key: reader.key });
  assertSameAsMadeUp(await service.request('GET', `/v1/app/detail/${app.id}`, { key: reader.key }), madeUp);
  assert.equal((await getApp(service, owner.key, app.id)).status, 'draft', 'the owner still reads it');
});

test('a deleted public app is no longer readable by other projects', async () => {
  const app = await publishedApp('Withdrawn by deletion');
  await getApp(service, reader.key, app.id);
  assertSuccess(await service.request('DELETE', `/v1/app/detail/${app.id}`, { key: owner.key }));
  const madeUp = await service.request('GET', `/v1/app/detail/${MADE_UP}`, { key: reader.key });
  assertSameAsMadeUp(await service.request('GET', `/v1/app/detail/${app.id}`, { key: reader.key }), madeUp);
});
