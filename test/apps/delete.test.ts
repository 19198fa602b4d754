import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { recordRun } from '../../domain/runs.ts';
import { assertError, assertSuccess } from '../support/assertions.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { APP_NOT_FOUND, createApp, getApp, waitForTotals } from './helpers.ts';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start();
  project = await service.createProject('Delete');
});
after(() => service.stop());

const del = (id: string, key = project.key) => service.request('DELETE', `/v1/app/detail/${id}`, { key });

test('DELETE /v1/app/detail/<id> answers 200 with {deleted: true, id}', async () => {
  const app = await createApp(service, project.key);
  const reply = await del(app.id);
  assert.equal(reply.status, 200);
  assert.deepEqual(reply.body, { code: 200, title: 'OK', response: { deleted: true, id: app.id } });
});

test('a deleted app answers 404 everywhere, also to a second DELETE', async () => {
  const app = await createApp(service, project.key, { name: 'Doomed' });
  const keep = await createApp(service, project.key, { name: 'Kept' });
  assertSuccess(await del(app.id));

  assertError(await service.request('GET', `/v1/app/detail/${app.id}`, { key: project.key }), 404, 'App not found.');
  assertError(await service.request('PATCH', `/v1/app/detail/${app.id}`, { key: project.key, body: { name: 'Back' } }), 404, 'App not found.');
  assertError(await service.request('PATCH', `/v1/app/detail/${app.id}`, { key: project.key, body: { type: 'private' } }), 404, 'App not found.');
  const again = await del(app.id);
  const madeUp = await del('mapp_0123456789abcdef0123');
  assertError(again, 404, 'App not found.');
  assert.equal(again.text, madeUp.text, 'the same answer as for an app that never existed');

  const list = assertSuccess(await service.request('GET', '/v1/app/list', { key: project.key }));
  assert.ok(!list.data.some((e: any) => e.id === app.id));
  assert.ok(list.data.some((e: any) => e.id === keep.id));
  assert.equal((await getApp(service, project.key, keep.id)).name, 'Kept', 'other apps are untouched');
});

test('drafts and public apps can be deleted too', async () => {
  for (const overrides of [{ status: 'draft' }, { type: 'public' }, { status: 'draft', type: 'public' }]) {
    const app = await createApp(service, project.key, overrides);
    assert.deepEqual(assertSuccess(await del(app.id)), { deleted: true, id: app.id });
    assertError(await service.request('GET', `/v1/app/detail/${app.id}`, { key: project.key }), 404, 'App not found.');
  }
});

test('DELETE of a made-up or malformed id answers 404 App not found.', async () => {
  for (const id of ['mapp_0123456789abcdef0123', 'junk', 'mapp_0123456789abcdef012g']) {
    const reply = await del(id);
    assert.equal(reply.status, 404, id);
    assert.deepEqual(reply.body, APP_NOT_FOUND);
  }
});

test('the runs of a deleted app stay in the runs table', async () => {
  const app = await createApp(service, project.key);
  const other = await service.createProject('Other runner');
  const runs = [
    await recordRun(service.services, { app_id: app.id, project_id: project.projectId, status: 'succeeded', tokens: { input: 5, output: 6 } }),
    await recordRun(service.services, { app_id: app.id, project_id: project.projectId, status: 'error', tokens: null }),
    await recordRun(service.services, { app_id: app.id, project_id: other.projectId, status: 'succeeded', tokens: null }),
  ];
  await waitForTotals(service, app.id, project.projectId, 2);
  await waitForTotals(service, app.id, other.projectId, 1);
  assertSuccess(await del(app.id));
  const { rows } = await service.db.query('SELECT id, status FROM runs WHERE app_id = $1 ORDER BY id', [app.id]);
  assert.deepEqual(rows.map((r) => r.id), runs.map((r) => r.run.id).sort());
});

test('DELETE needs app:write', async () => {
  const app = await createApp(service, project.key);
  const reader = assertSuccess(await service.request('POST', '/v1/key', { key: project.key, body: { name: 'reader', scope: ['app:read'] } }), 201);
  assertError(await del(app.id, reader.key), 403, 'The API key is missing the required scope: app:write');
  assert.equal((await getApp(service, project.key, app.id)).id, app.id);
});
