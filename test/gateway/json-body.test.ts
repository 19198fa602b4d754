// Step 8 of decisions.md: a body that is not a JSON object is 400 `Invalid JSON.`, whatever the
// method; an empty body on POST or PATCH counts as {}.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { MESSAGES } from '../support/assertions.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { assertError, assertSuccess } from './helpers.ts';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start({ jobWorkers: false });
  project = await service.createProject();
});
after(() => service.stop());

async function keyCount(): Promise<number> {
  const { rows } = await service.db.query('SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1', [project.projectId]);
  return rows[0].n;
}

const NOT_OBJECTS: Array<[string, string | Buffer]> = [
  ['malformed', '{"name": "x"'],
  ['trailing garbage', '{"name": "x"} x'],
  ['single quotes', "{'name': 'x'}"],
  ['bare word', 'name=x'],
  ['an array', '[]'],
  ['an array of an object', '[{"name":"x"}]'],
  ['a number', '42'],
  ['a string', '"name"'],
  ['null', 'null'],
  ['true', 'true'],
  ['invalid UTF-8 inside a string', Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')])],
  ['an overlong UTF-8 encoding', Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')])],
  ['a lone surrogate encoded in UTF-8', Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')])],
];

test('POST /v1/key with a body that is not a JSON object: 400 Invalid JSON., nothing created', async () => {
  const before = await keyCount();
  for (const [what, body] of NOT_OBJECTS) {
    const reply = await service.request('POST', '/v1/key', { key: project.key, body });
    assertError(reply, 400, MESSAGES.invalidJson, what);
  }
  assert.equal(await keyCount(), before);
});

test('PATCH /v1/app/detail/<id> with a body that is not a JSON object: 400 before the app is looked up', async () => {
  for (const [what, body] of NOT_OBJECTS) {
    const reply = await service.request('PATCH', '/v1/app/detail/mapp_00000000000000000000', { key: project.key, body });
    assertError(reply, 400, MESSAGES.invalidJson, what);
  }
});

test('DELETE and GET with a body that is not a JSON object: 400 Invalid JSON., nothing revoked; a JSON object is let through', async () => {
  const made = await service.request('POST', '/v1/key', { key: project.key, body: { name: 'kept' } });
  assertSuccess(made, 201);
  const doomed = made.body.response;
  for (const [what, body] of NOT_OBJECTS) {
    assertError(await service.request('DELETE', `/v1/key/${doomed.id}`, { key: project.key, body }), 400, MESSAGES.invalidJson, `DELETE, ${what}`);
    assertError(await service.request('GET', '/v1/key', { key: project.key, body }), 400, MESSAGES.invalidJson, `GET, ${what}`);
  }
  const still = await service.request('GET', `/v1/key/${doomed.id}`, { key: project.key });
  assertSuccess(still, 200);
  assert.equal(still.body.response.status, 'activated', 'nothing was revoked');
  assertSuccess(await service.request('GET', '/v1/key', { key: project.key, body: '{"ignored": true}' }), 200);
  assertSuccess(await service.request('DELETE', `/v1/key/${doomed.id}`, { key: project.key, body: '{}' }), 200);
});

test('POST /v1/app/create with a JSON array: 400', async () => {
  const reply = await service.request('POST', '/v1/app/create', { key: project.key, body: '[]' });
  assertError(reply, 400, MESSAGES.invalidJson);
});

test('the Content-Type does not change the verdict', async () => {
  const reply = await service.request('POST', '/v1/key', { key: project.key, body: 'null', headers: { 'content-type': 'text/plain' } });
  assertError(reply, 400, MESSAGES.invalidJson);
});

test('no body at all counts as {}: POST /v1/key answers 422 name is required.', async () => {
  const reply = await service.request('POST', '/v1/key', { key: project.key });
  assertError(reply, 422, 'name is required.');
});

test('an empty body with Content-Length: 0 counts as {}', async () => {
  const reply = await service.request('POST', '/v1/key', { key: project.key, body: '', headers: { 'content-length': 0 } });
  assertError(reply, 422, 'name is required.');
});

test('an empty JSON object is parsed like the empty body', async () => {
  assertError(await service.request('POST', '/v1/key', { key: project.key, body: {} }), 422, 'name is required.');
});

test('a JSON object with multi-byte UTF-8 is parsed and kept intact', async () => {
  const name = 'Schlüssel ключ 鍵 🔑';
  const reply = await service.request('POST', '/v1/key', { key: project.key, body: Buffer.from(JSON.stringify({ name }), 'utf8') });
  assertSuccess(reply, 201);
  assert.equal(reply.body.response.name, name);
  const { rows } = await service.db.query('SELECT name FROM api_keys WHERE id = $1', [reply.body.response.id]);
  assert.equal(rows[0].name, name);
});

test('a JSON object surrounded by whitespace is accepted', async () => {
  const reply = await service.request('POST', '/v1/key', { key: project.key, body: '\n  {"name": "spaced"}  \n' });
  assertSuccess(reply, 201);
  assert.equal(reply.body.response.name, 'spaced');
});

// Regressions found by the fuzz suite (test/faults/fuzz.fault.ts): each of these answered 500.

test('fault: a body nested thousands deep (copying it to a worker overflowed the stack) is 422, nothing created', async () => {
  const before = await keyCount();
  const deep = `{"name":${'['.repeat(3242)}${']'.repeat(3242)}}`;
  assertError(await service.request('POST', '/v1/key', { key: project.key, body: deep }), 422, 'The JSON body is nested too deeply.');
  const justDeepEnough = `{"name":"ok","extra":${'['.repeat(30)}${']'.repeat(30)}}`;
  assertSuccess(await service.request('POST', '/v1/key', { key: project.key, body: justDeepEnough }), 201);
  assert.equal(await keyCount(), before + 1);
});

test('fault: U+0000 in any text (PostgreSQL cannot store it) is 422, nothing created', async () => {
  const before = await keyCount();
  for (const body of ['{"name":"a\\u0000b"}', '{"name":"x","scope":["key:read"],"\\u0000":1}']) {
    assertError(await service.request('POST', '/v1/key', { key: project.key, body }), 422, 'Text must be valid Unicode without NUL characters.');
  }
  assert.equal(await keyCount(), before);
});

test('fault: a lone UTF-16 surrogate escape (not Unicode; the event details could not hold it) is 422, nothing created', async () => {
  const before = await keyCount();
  for (const name of ['\\ud800', '\\udfff\\ud800', 'x\\udc00y']) {
    assertError(await service.request('POST', '/v1/key', { key: project.key, body: `{"name":"${name}"}` }), 422, 'Text must be valid Unicode without NUL characters.');
  }
  assertSuccess(await service.request('POST', '/v1/key', { key: project.key, body: '{"name":"\\ud83d\\ude00 paired"}' }), 201);
  assert.equal(await keyCount(), before + 1);
});
