import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setLogo } from '../../domain/apps.ts';
import { recordRun } from '../../domain/runs.ts';
import { assertSuccess } from '../support/assertions.ts';
import { ID } from '../support/ids.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { APP_NOT_FOUND, createApp, DATA_TYPES, getApp, LOGO_BYTES, logoFile, MODELS, waitForTotals } from './helpers.ts';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start();
  project = await service.createProject('Detail');
});
after(() => service.stop());

const DETAIL_MEMBERS = ['id', 'object', 'name', 'description', 'type', 'status', 'logo', 'model', 'model_library', 'data', 'instruction', 'runs', 'tokens', 'created_at', 'updated_at'];
const workspaceActor = { origin: 'workspace' as const, ip: '127.0.0.1' };

test('GET /v1/app/detail/<id> answers the full app object with data and instruction arrays', async () => {
  const created = await createApp(service, project.key, {
    name: 'Photo helper',
    description: 'Answers questions about a photo.',
    data: [
      { type: 'text area', name: 'question', placeholder: 'Ask something', required: true },
      { type: 'image', name: 'photo', placeholder: 'A photo', required: false },
      { type: DATA_TYPES.document, name: 'notes' },
    ],
    instruction: [{ type: 'system', instruction: 'Look at the photo.' }, { type: 'system', prompt: 'Answer briefly.' }],
  });
  const reply = await service.request('GET', `/v1/app/detail/${created.id}`, { key: project.key });
  const app = assertSuccess(reply);
  assert.deepEqual(Object.keys(app).sort(), [...DETAIL_MEMBERS].sort());
  assert.equal(app.id, created.id);
  assert.equal(app.object, 'app');
  assert.equal(app.name, 'Photo helper');
  assert.equal(app.description, 'Answers questions about a photo.');
  assert.equal(app.type, 'private');
  assert.equal(app.status, 'activated');
  assert.equal(app.logo, '', 'no logo: an empty string');
  assert.equal(app.model, MODELS.vision.model);
  assert.equal(app.model_library, MODELS.vision.build);
  assert.deepEqual(app.runs, { private: 0, public: 0 });
  assert.deepEqual(app.tokens, { input: 0, output: 0, total: 0 });
  assert.equal(app.created_at, created.created_at);
  assert.ok(Number.isInteger(app.updated_at) && app.updated_at >= app.created_at);

  const fieldIds = Object.keys(created.data);
  assert.ok(Array.isArray(app.data));
  for (const entry of app.data) assert.deepEqual(Object.keys(entry).sort(), ['id', 'name', 'placeholder', 'required', 'type']);
  assert.deepEqual(app.data, [
    { id: fieldIds[0], name: 'question', type: DATA_TYPES['text area'], placeholder: 'Ask something', required: true },
    { id: fieldIds[1], name: 'photo', type: DATA_TYPES.image, placeholder: 'A photo', required: false },
    { id: fieldIds[2], name: 'notes', type: DATA_TYPES.document, placeholder: '', required: false },
  ]);
  const instructionIds = Object.keys(created.instruction);
  assert.ok(Array.isArray(app.instruction));
  assert.deepEqual(app.instruction, [
    { id: instructionIds[0], type: 'system', instruction: 'Look at the photo.' },
    { id: instructionIds[1], type: 'system', instruction: 'Answer briefly.' },
  ]);
});

test('the owner reads its draft apps and its public apps', async () => {
  const draft = await createApp(service, project.key, { status: 'draft' });
  assert.equal((await getApp(service, project.key, draft.id)).status, 'draft');
  const draftPublic = await createApp(service, project.key, { status: 'draft', type: 'public' });
  const read = await getApp(service, project.key, draftPublic.id);
  assert.deepEqual([read.status, read.type], ['draft', 'public']);
  assert.ok(Array.isArray(read.instruction), 'the owner always sees its instructions');
});

test('logo shows the attached file identifier', async () => {
  const app = await createApp(service, project.key);
  const { file } = await setLogo(service.services, workspaceActor, app.id, logoFile(LOGO_BYTES.png, 'logo.png'));
  const read = await getApp(service, project.key, app.id);
  assert.match(read.logo, ID.file);
  assert.equal(read.logo, file.id);
});

test('a made-up id and malformed ids all answer the identical 404', async () => {
  const ids = [
    'mapp_0123456789abcdef0123', // well-formed, never existed
    'abc',
    'mapp_',
    'mapp_0123456789abcdef012', // one character short
    'mapp_0123456789abcdef01234', // one character long
    'mapp_0123456789ABCDEF0123', // upper-case hex
    'papi_0123456789abcdef0123', // another resource's prefix
    encodeURIComponent("mapp_' OR '1'='1"),
  ];
  const texts = new Set<string>();
  for (const id of ids) {
    const reply = await service.request('GET', `/v1/app/detail/${id}`, { key: project.key });
    assert.equal(reply.status, 404, id);
    assert.deepEqual(reply.body, APP_NOT_FOUND, id);
    texts.add(reply.text);
  }
  assert.equal(texts.size, 1, 'byte-identical answers');
});

test('a deleted app answers the same 404 as a made-up id', async () => {
  const deleted = await createApp(service, project.key);
  assertSuccess(await service.request('DELETE', `/v1/app/detail/${deleted.id}`, { key: project.key }));
  const reply = await service.request('GET', `/v1/app/detail/${deleted.id}`, { key: project.key });
  const madeUp = await service.request('GET', '/v1/app/detail/mapp_0123456789abcdef0123', { key: project.key });
  assert.equal(reply.status, 404);
  assert.deepEqual(reply.body, APP_NOT_FOUND);
  assert.equal(reply.text, madeUp.text);
});

test('another project\'s private app, and its draft public app, answer the same 404', async () => {
  const other = await service.createProject('Other');
  const privateApp = await createApp(service, other.key);
  const draftPublic = await createApp(service, other.key, { status: 'draft', type: 'public' });
  const madeUp = await service.request('GET', '/v1/app/detail/mapp_ffffffffffffffffffff', { key: project.key });
  for (const id of [privateApp.id, draftPublic.id]) {
    const reply = await service.request('GET', `/v1/app/detail/${id}`, { key: project.key });
    assert.equal(reply.status, 404);
    assert.deepEqual(reply.body, APP_NOT_FOUND);
    assert.equal(reply.text, madeUp.text);
  }
  // The owner still reads both.
  await getApp(service, other.key, privateApp.id);
  await getApp(service, other.key, draftPublic.id);
});

test('another project\'s activated public app is readable, with instruction null and runs.private 0', async () => {
  const owner = await service.createProject('Publisher');
  const app = await createApp(service, owner.key, { name: 'Shared', description: 'For everyone.' });
  await setLogo(service.services, workspaceActor, app.id, logoFile(LOGO_BYTES.png, 'logo.png'));
  assertSuccess(await service.request('PATCH', `/v1/app/detail/${app.id}`, { key: owner.key, body: { type: 'public' } }));
  // Launches by the owner (private) and by the reader (public), so that the hiding is observable.
  const report = (projectId: string, tokens: { input: number; output: number }) =>
    recordRun(service.services, { app_id: app.id, project_id: projectId, status: 'succeeded', tokens });
  await report(owner.projectId, { input: 10, output: 5 });
  await report(owner.projectId, { input: 1, output: 1 });
  await report(project.projectId, { input: 3, output: 4 });
  await waitForTotals(service, app.id, owner.projectId, 2);
  await waitForTotals(service, app.id, project.projectId, 1);
  const own = await getApp(service, owner.key, app.id);
  assert.deepEqual(own.runs, { private: 2, public: 1 });
  assert.deepEqual(own.tokens, { input: 11, output: 6, total: 17 });

  const seen = await getApp(service, project.key, app.id);
  assert.deepEqual(Object.keys(seen).sort(), [...DETAIL_MEMBERS].sort());
  assert.equal(seen.id, app.id);
  assert.equal(seen.name, 'Shared');
  assert.equal(seen.type, 'public');
  assert.equal(seen.status, 'activated');
  assert.match(seen.logo, ID.file);
  assert.equal(seen.instruction, null);
  assert.deepEqual(seen.runs, { private: 0, public: 1 });
  assert.deepEqual(seen.tokens, { input: 3, output: 4, total: 7 }, "the reader's own spend");
  assert.deepEqual(seen.data, (await getApp(service, owner.key, app.id)).data, 'the input schema is shown');
});
