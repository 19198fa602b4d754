import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertError, assertSuccess } from '../support/assertions.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { appBody, DATA_TYPES } from './helpers.ts';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start();
  project = await service.createProject('Create validation');
});
after(() => service.stop());

interface Case {
  what: string;
  body: unknown;
  status: number;
  message: string;
}

const NAME = 'name is required.';
const DESCRIPTION = 'description is required.';
const DATA = 'data must be a non-empty array.';
const INSTRUCTION = 'instruction must be a non-empty array.';
const FIELD = 'Each data field needs a type and a name.';
const INSTRUCTION_ENTRY = 'Each instruction needs a type and an instruction.';

const field = (entry: Record<string, unknown>) => ({ data: [entry] });
const instruction = (entry: unknown) => ({ instruction: [entry] });

const CASES: Case[] = [
  { what: 'name absent', body: appBody({ name: undefined }), status: 422, message: NAME },
  { what: 'name null', body: appBody({ name: null }), status: 422, message: NAME },
  { what: 'name empty', body: appBody({ name: '' }), status: 422, message: NAME },
  { what: 'name blank', body: appBody({ name: '   ' }), status: 422, message: NAME },
  { what: 'description absent', body: appBody({ description: undefined }), status: 422, message: DESCRIPTION },
  { what: 'description empty', body: appBody({ description: '' }), status: 422, message: DESCRIPTION },
  { what: 'description blank', body: appBody({ description: ' \t ' }), status: 422, message: DESCRIPTION },

  { what: 'data absent', body: appBody({ data: undefined }), status: 422, message: DATA },
  { what: 'data a string', body: appBody({ data: 'input' }), status: 422, message: DATA },
  { what: 'data an object', body: appBody({ data: { type: 'input', name: 'topic', required: true } }), status: 422, message: DATA },
  { what: 'data empty', body: appBody({ data: [] }), status: 422, message: DATA },
  { what: 'instruction absent', body: appBody({ instruction: undefined }), status: 422, message: INSTRUCTION },
  { what: 'instruction a string', body: appBody({ instruction: 'Be brief.' }), status: 422, message: INSTRUCTION },
  { what: 'instruction an object', body: appBody({ instruction: { type: 'system', instruction: 'Be brief.' } }), status: 422, message: INSTRUCTION },
  { what: 'instruction empty', body: appBody({ instruction: [] }), status: 422, message: INSTRUCTION },

  { what: 'data entry without type', body: appBody(field({ name: 'topic', required: true })), status: 422, message: FIELD },
  { what: 'data entry with empty type', body: appBody(field({ type: '', name: 'topic', required: true })), status: 422, message: FIELD },
  { what: 'data entry without name', body: appBody(field({ type: 'input', required: true })), status: 422, message: FIELD },
  { what: 'data entry with blank name', body: appBody(field({ type: 'input', name: '  ', required: true })), status: 422, message: FIELD },
  { what: 'data entry not an object', body: appBody({ data: ['input'] }), status: 422, message: FIELD },
  { what: 'instruction entry without type', body: appBody(instruction({ instruction: 'Be brief.' })), status: 422, message: INSTRUCTION_ENTRY },
  { what: 'instruction entry with empty type', body: appBody(instruction({ type: '', instruction: 'Be brief.' })), status: 422, message: INSTRUCTION_ENTRY },
  { what: 'instruction entry without text', body: appBody(instruction({ type: 'system' })), status: 422, message: INSTRUCTION_ENTRY },
  { what: 'instruction entry with empty text', body: appBody(instruction({ type: 'system', instruction: '' })), status: 422, message: INSTRUCTION_ENTRY },
  { what: 'instruction entry with empty prompt', body: appBody(instruction({ type: 'system', prompt: '' })), status: 422, message: INSTRUCTION_ENTRY },
  { what: 'instruction entry not an object', body: appBody(instruction('Be brief.')), status: 422, message: INSTRUCTION_ENTRY },

  { what: 'unknown data type name', body: appBody(field({ type: 'video', name: 'clip', required: true })), status: 404, message: 'The selected data type does not exist.' },
  { what: 'unknown data type identifier', body: appBody(field({ type: 'mdti_00000000000000000000', name: 'x', required: true })), status: 404, message: 'The selected data type does not exist.' },
  { what: 'unknown instruction type', body: appBody(instruction({ type: 'user', instruction: 'Hello.' })), status: 404, message: 'The selected instruction type does not exist.' },

  { what: 'unknown category', body: appBody({ category: 'poetry' }), status: 404, message: 'The selected category does not exist.' },
  { what: 'unknown category as task_type', body: appBody({ task_type: 'poetry' }), status: 404, message: 'The selected category does not exist.' },
  { what: 'unknown category as model_task_type', body: appBody({ model_task_type: 'poetry' }), status: 404, message: 'The selected category does not exist.' },

  { what: 'image field in coding', body: appBody({ category: 'coding', data: [{ type: 'image', name: 'screenshot', required: true }] }), status: 422, message: 'The selected category has no model that reads images.' },
  { what: 'image field (identifier) in translation', body: appBody({ task_type: 'translation', data: [{ type: 'input', name: 'text', required: true }, { type: DATA_TYPES.image, name: 'scan' }] }), status: 422, message: 'The selected category has no model that reads images.' },

  { what: 'two fields with one name', body: appBody({ data: [{ type: 'input', name: 'topic', required: true }, { type: 'text area', name: 'topic' }] }), status: 422, message: 'Data field names must be unique.' },
  { what: 'no field required (all omitted)', body: appBody({ data: [{ type: 'input', name: 'a' }, { type: 'email', name: 'b' }] }), status: 422, message: 'At least one data field must be required.' },
  { what: 'no field required (all false)', body: appBody({ data: [{ type: 'input', name: 'a', required: false }] }), status: 422, message: 'At least one data field must be required.' },

  { what: 'status unknown', body: appBody({ status: 'published' }), status: 422, message: "status must be 'draft' or 'activated'." },
  { what: 'status empty', body: appBody({ status: '' }), status: 422, message: "status must be 'draft' or 'activated'." },
  { what: 'type unknown', body: appBody({ type: 'secret' }), status: 422, message: "type must be 'public' or 'private'." },
  { what: 'type in capitals', body: appBody({ type: 'PUBLIC' }), status: 422, message: "type must be 'public' or 'private'." },

  // A category that is not a string is an unknown category, answered after everything else.
  { what: 'category a number, with data refused', body: appBody({ category: 5, data: 'x' }), status: 422, message: DATA },
  { what: 'category a number, with type refused', body: appBody({ category: 5, type: 'secret' }), status: 422, message: "type must be 'public' or 'private'." },
  { what: 'category a number', body: appBody({ category: 5 }), status: 404, message: 'The selected category does not exist.' },
  { what: 'category an object, as task_type', body: appBody({ task_type: { name: 'coding' } }), status: 404, message: 'The selected category does not exist.' },

  { what: 'a JSON array body', body: '[]', status: 400, message: 'Invalid JSON.' },
  { what: 'unparseable JSON', body: '{"name": ', status: 400, message: 'Invalid JSON.' },
];

for (const c of CASES) {
  test(`POST /v1/app/create refuses: ${c.what} → ${c.status} ${c.message}`, async () => {
    const reply = await service.request('POST', '/v1/app/create', { key: project.key, body: c.body });
    assertError(reply, c.status, c.message);
  });
}

test('an empty body counts as {} and is refused as missing a name', async () => {
  assertError(await service.request('POST', '/v1/app/create', { key: project.key }), 422, NAME);
});

test('a refused creation leaves nothing behind: no app, no field, no instruction, no event', async () => {
  for (const c of CASES) await service.request('POST', '/v1/app/create', { key: project.key, body: c.body });
  const list = assertSuccess(await service.request('GET', '/v1/app/list', { key: project.key }));
  assert.deepEqual(list, { object: 'list', data: [], total: 0 });
  const { rows } = await service.db.query(
    `SELECT (SELECT count(*)::int FROM apps WHERE project_id = $1) AS apps,
            (SELECT count(*)::int FROM app_data_fields) AS fields,
            (SELECT count(*)::int FROM app_instructions) AS instructions`, [project.projectId]);
  assert.deepEqual(rows[0], { apps: 0, fields: 0, instructions: 0 });
  await service.waitForJobsDrained();
  const events = assertSuccess(await service.request('GET', '/v1/event', { key: project.key }));
  assert.ok(!events.data.some((e: any) => e.type.name.startsWith('app.')), 'no app event for a refused creation');
});
