import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { assertError, assertSuccess } from '../support/assertions.ts';
import { ID } from '../support/ids.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { nowSeconds } from '../support/wait.ts';
import { appBody, createApp, DATA_TYPES, getApp, MODELS } from './helpers.ts';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start();
  project = await service.createProject('Create');
});
after(() => service.stop());

const CREATE_MEMBERS = ['category', 'created_at', 'data', 'description', 'id', 'instruction', 'model', 'model_library', 'name', 'object', 'status'];

test('POST /v1/app/create answers 200 (not 201) with exactly the creation members', async () => {
  const started = nowSeconds();
  const reply = await service.request('POST', '/v1/app/create', {
    key: project.key,
    body: {
      name: 'Summariser',
      description: 'Summarises a topic.',
      data: [
        { type: 'input', name: 'topic', placeholder: 'A topic', required: true },
        { type: 'number', name: 'words', placeholder: 'How many words', required: false },
      ],
      instruction: [
        { type: 'system', instruction: 'Summarise the topic.' },
        { type: 'system', instruction: 'Use at most the given number of words.' },
      ],
    },
  });
  assert.equal(reply.status, 200);
  assert.deepEqual(Object.keys(reply.body), ['code', 'title', 'response']);
  assert.equal(reply.body.code, 200);
  assert.equal(reply.body.title, 'OK');
  const app = reply.body.response;
  assert.deepEqual(Object.keys(app).sort(), CREATE_MEMBERS);
  assert.match(app.id, ID.app);
  assert.equal(app.object, 'app');
  assert.equal(app.name, 'Summariser');
  assert.equal(app.description, 'Summarises a topic.');
  assert.equal(app.category, 'general', 'the default category is general');
  assert.equal(app.model, MODELS.text.model);
  assert.equal(app.model_library, MODELS.text.build, "the category model's newest build");
  assert.equal(app.status, 'activated', 'status defaults to activated');
  assert.ok(Number.isInteger(app.created_at));
  assert.ok(app.created_at >= started - 2 && app.created_at <= nowSeconds() + 2, `created_at ${app.created_at} is now, in Unix seconds`);

  // data: keyed by new madi_ ids, values {type as sent, value: field name, placeholder, required}.
  assert.equal(typeof app.data, 'object');
  assert.ok(!Array.isArray(app.data));
  const fieldIds = Object.keys(app.data);
  assert.equal(fieldIds.length, 2);
  for (const id of fieldIds) assert.match(id, ID.field);
  assert.notEqual(fieldIds[0], fieldIds[1]);
  assert.deepEqual(Object.values(app.data), [
    { type: 'input', value: 'topic', placeholder: 'A topic', required: true },
    { type: 'number', value: 'words', placeholder: 'How many words', required: false },
  ]);

  // instruction: keyed by new miid_ ids, values {type, instruction}.
  assert.ok(!Array.isArray(app.instruction));
  const instructionIds = Object.keys(app.instruction);
  assert.equal(instructionIds.length, 2);
  for (const id of instructionIds) assert.match(id, ID.instruction);
  assert.deepEqual(Object.values(app.instruction), [
    { type: 'system', instruction: 'Summarise the topic.' },
    { type: 'system', instruction: 'Use at most the given number of words.' },
  ]);

  // The detail endpoint gives the array shape with the same identifiers and the defaults.
  const detail = await getApp(service, project.key, app.id);
  assert.equal(detail.type, 'private', 'type defaults to private');
  assert.equal(detail.status, 'activated');
  assert.equal(detail.logo, '');
  assert.equal(detail.created_at, app.created_at);
  assert.equal(detail.model, app.model);
  assert.equal(detail.model_library, app.model_library);
  assert.deepEqual(detail.data, [
    { id: fieldIds[0], name: 'topic', type: DATA_TYPES.input, placeholder: 'A topic', required: true },
    { id: fieldIds[1], name: 'words', type: DATA_TYPES.number, placeholder: 'How many words', required: false },
  ]);
  assert.deepEqual(detail.instruction, [
    { id: instructionIds[0], type: 'system', instruction: 'Summarise the topic.' },
    { id: instructionIds[1], type: 'system', instruction: 'Use at most the given number of words.' },
  ]);
});

test('data types are accepted by name and by identifier; reads return identifiers', async () => {
  const names = ['input', 'text area', 'number', 'email', 'document'] as const;
  const byName = await createApp(service, project.key, {
    data: names.map((type, i) => ({ type, name: `f${i}`, required: i === 0 })),
  });
  assert.deepEqual(Object.values(byName.data).map((f: any) => f.type), [...names], 'the type as sent (the name)');
  assert.deepEqual((await getApp(service, project.key, byName.id)).data.map((f: any) => f.type), names.map((n) => DATA_TYPES[n]));

  const byId = await createApp(service, project.key, {
    data: names.map((type, i) => ({ type: DATA_TYPES[type], name: `f${i}`, required: i === 0 })),
  });
  assert.deepEqual(Object.values(byId.data).map((f: any) => f.type), names.map((n) => DATA_TYPES[n]), 'the type as sent (the identifier)');
  assert.deepEqual((await getApp(service, project.key, byId.id)).data.map((f: any) => f.type), names.map((n) => DATA_TYPES[n]));
  assert.equal(byId.model, MODELS.text.model, 'no image field: the category model');
});

test('a data field name of any length is kept, one that hardly compresses too (past what one index entry holds)', async () => {
  const names = [randomBytes(6000).toString('base64url'), randomBytes(6000).toString('base64url')];
  const app = await createApp(service, project.key, { data: names.map((name) => ({ type: 'input', name, required: true })) });
  assert.deepEqual(Object.values(app.data).map((f: any) => f.value), names);
  assert.deepEqual((await getApp(service, project.key, app.id)).data.map((f: any) => f.name), names);
  // Unique still: the same long name twice is refused as any repeated name is.
  assertError(await service.request('POST', '/v1/app/create', { key: project.key, body: appBody({ data: [names[0], names[0]].map((name) => ({ type: 'input', name, required: true })) }) }),
    422, 'Data field names must be unique.');
});

test('placeholder defaults to an empty string and required to false', async () => {
  const app = await createApp(service, project.key, {
    data: [{ type: 'input', name: 'topic', required: true }, { type: 'email', name: 'reply_to' }],
  });
  assert.deepEqual(Object.values(app.data), [
    { type: 'input', value: 'topic', placeholder: '', required: true },
    { type: 'email', value: 'reply_to', placeholder: '', required: false },
  ]);
});

test('an image field picks the category\'s image-reading model, by name or by identifier', async () => {
  for (const type of ['image', DATA_TYPES.image]) {
    const app = await createApp(service, project.key, {
      data: [{ type: 'input', name: 'question', required: true }, { type, name: 'photo', required: true }],
    });
    assert.equal(app.category, 'general');
    assert.equal(app.model, MODELS.vision.model, `image field sent as ${type}`);
    assert.equal(app.model_library, MODELS.vision.build);
    assert.deepEqual(Object.values(app.data).map((f: any) => f.type), ['input', type]);
    const detail = await getApp(service, project.key, app.id);
    assert.equal(detail.model, MODELS.vision.model);
    assert.equal(detail.data[1].type, DATA_TYPES.image);
  }
});

test('category is accepted as category, task_type and model_task_type', async () => {
  for (const alias of ['category', 'task_type', 'model_task_type']) {
    const app = await createApp(service, project.key, { [alias]: 'coding' });
    assert.equal(app.category, 'coding', alias);
    assert.equal(app.model, MODELS.code.model, alias);
    assert.equal(app.model_library, MODELS.code.build, alias);
  }
  const vision = await createApp(service, project.key, { category: 'vision' });
  assert.equal(vision.category, 'vision');
  assert.equal(vision.model, MODELS.vision.model);
});

test('`prompt` is accepted in place of `instruction` text', async () => {
  const app = await createApp(service, project.key, {
    instruction: [{ type: 'system', prompt: 'Be brief.' }],
  });
  assert.deepEqual(Object.values(app.instruction), [{ type: 'system', instruction: 'Be brief.' }]);
  const detail = await getApp(service, project.key, app.id);
  assert.equal(detail.instruction.length, 1);
  assert.deepEqual(detail.instruction[0], { id: Object.keys(app.instruction)[0], type: 'system', instruction: 'Be brief.' });
});

test('null for an optional member is its default, as the document says (status, type, category, a field\'s placeholder and required flag, an instruction\'s text beside its prompt)', async () => {
  const app = await createApp(service, project.key, {
    status: null, type: null, category: null,
    data: [{ type: 'input', name: 'topic', placeholder: null, required: true }, { type: 'input', name: 'tone', placeholder: 'calm', required: null }],
    instruction: [{ type: 'system', instruction: null, prompt: 'Be brief.' }],
  });
  assert.equal(app.status, 'activated');
  assert.equal(app.category, 'general');
  assert.deepEqual(Object.values(app.data).map((f: any) => [f.value, f.placeholder, f.required]), [['topic', '', true], ['tone', 'calm', false]]);
  assert.deepEqual(Object.values(app.instruction), [{ type: 'system', instruction: 'Be brief.' }]);
  assert.equal((await getApp(service, project.key, app.id)).type, 'private');
});

test('status draft and type public are kept as sent', async () => {
  const app = await createApp(service, project.key, { status: 'draft', type: 'public' });
  assert.equal(app.status, 'draft');
  const detail = await getApp(service, project.key, app.id);
  assert.equal(detail.status, 'draft');
  assert.equal(detail.type, 'public');

  const activated = await createApp(service, project.key, { status: 'activated', type: 'private' });
  assert.equal(activated.status, 'activated');
  assert.equal((await getApp(service, project.key, activated.id)).type, 'private');
});

test('each creation makes a distinct app listed by the project', async () => {
  const before = assertSuccess(await service.request('GET', '/v1/app/list', { key: project.key })).total;
  const a = await createApp(service, project.key, { name: 'One' });
  const b = await createApp(service, project.key, { name: 'Two' });
  assert.notEqual(a.id, b.id);
  const list = assertSuccess(await service.request('GET', '/v1/app/list?limit=100', { key: project.key }));
  assert.equal(list.total, before + 2);
  const ids = list.data.map((e: any) => e.id);
  assert.ok(ids.includes(a.id) && ids.includes(b.id));
});

test('creation needs app:write; a key holding only app:read gets 403 and nothing is created', async () => {
  const made = assertSuccess(await service.request('POST', '/v1/key', { key: project.key, body: { name: 'reader', scope: ['app:read'] } }), 201);
  const before = assertSuccess(await service.request('GET', '/v1/app/list', { key: project.key })).total;
  const reply = await service.request('POST', '/v1/app/create', { key: made.key, body: appBody() });
  assertError(reply, 403, 'The API key is missing the required scope: app:write');
  assert.equal(assertSuccess(await service.request('GET', '/v1/app/list', { key: project.key })).total, before);
});
