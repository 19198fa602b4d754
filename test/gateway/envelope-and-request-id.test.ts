// Every response, success or failure, is the {code, title, response} envelope and carries
// X-Request-Id (decisions.md, Operations), a fresh one per request.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { MESSAGES } from '../support/assertions.ts';
import { TestService, type Reply, type TestProject } from '../support/service.ts';
import { assertError, assertGatewayNotFound, assertRequestId, assertSuccess, rawRequest } from './helpers.ts';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start({ jobWorkers: false });
  project = await service.createProject();
});
after(() => service.stop());

function assertJson(reply: Reply, what: string): void {
  assert.match(String(reply.headers['content-type']), /^application\/json/, `${what}: Content-Type`);
}

test('successes carry X-Request-Id and the bare envelope', async () => {
  const read = await service.request('GET', '/v1/key/current', { key: project.key });
  assertSuccess(read, 200, 'GET /v1/key/current');
  assertJson(read, 'GET /v1/key/current');

  const created = await service.request('POST', '/v1/key', { key: project.key, body: { name: 'second' } });
  assertSuccess(created, 201, 'POST /v1/key');
  assertJson(created, 'POST /v1/key');

  const list = await service.request('GET', '/v1/key', { key: project.key });
  assertSuccess(list, 200, 'GET /v1/key');
  assert.equal(list.body.response.object, 'list');
});

test('every kind of failure carries X-Request-Id', async () => {
  const replies: Array<[string, Reply]> = [];
  const keep = (what: string, reply: Reply) => { replies.push([what, reply]); return reply; };

  assertError(keep('401', await service.request('GET', '/v1/key')), 401, MESSAGES.noKey, '401');
  assertError(keep('403', await service.request('GET', '/v1/key', { key: 'sk-project-unknown' })), 403, MESSAGES.refused, '403');
  assertError(keep('405', await service.request('PUT', '/v1/key', { key: project.key })), 405, MESSAGES.methodNotAllowed, '405');
  assertError(keep('413', await rawRequest(service, {
    method: 'POST', path: '/v1/key', headers: { 'content-length': 200_001, authorization: `Bearer ${project.key}` }, write: () => false,
  })), 413, MESSAGES.tooLarge, '413');
  assertError(keep('422', await service.request('PATCH', '/v1/key', { key: project.key, body: {} })), 422, MESSAGES.unprocessable, '422');
  assertError(keep('400', await service.request('POST', '/v1/key', { key: project.key, body: '{' })), 400, MESSAGES.invalidJson, '400');
  assertError(keep('record 404', await service.request('GET', '/v1/key/papi_00000000000000000000', { key: project.key })),
    404, 'API key not found.', 'record 404');
  assertGatewayNotFound(keep('gateway 404', await service.request('GET', '/v1/nothing-here', { key: project.key })), 'gateway 404');
  assertError(keep('501', await service.request('GET', '/v1/run', { key: project.key })), 501, MESSAGES.notImplemented, '501');

  for (const [what, reply] of replies) assertJson(reply, what);
});

test('the plain-HTTP 301 carries X-Request-Id', async () => {
  const reply = await service.plainRequest('GET', '/v1/key');
  assertError(reply, 301, MESSAGES.movedPermanently, 'plain HTTP');
  assertJson(reply, 'plain HTTP');
});

test('the health endpoints carry X-Request-Id', async () => {
  assertSuccess(await service.request('GET', '/healthz'), 200, '/healthz');
  assertSuccess(await service.request('GET', '/readyz'), 200, '/readyz');
});

test('each response gets a request id of its own', async () => {
  const ids = new Set<string>();
  for (let i = 0; i < 5; i++) {
    ids.add(assertRequestId(await service.request('GET', '/v1/key/current', { key: project.key })));
    ids.add(assertRequestId(await service.request('GET', '/v1/key')));
    ids.add(assertRequestId(await service.request('GET', '/v1/missing', { key: project.key })));
    ids.add(assertRequestId(await service.plainRequest('GET', '/v1/key')));
  }
  assert.equal(ids.size, 20);
});
