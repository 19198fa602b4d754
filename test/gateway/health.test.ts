// decisions.md, Operations: GET /healthz (process alive) and GET /readyz (database reachable) on
// the HTTPS listener, without authentication, outside /v1/.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TestService, type TestProject } from '../support/service.ts';
import { assertGatewayNotFound, assertSuccess } from './helpers.ts';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start({ jobWorkers: false });
  project = await service.createProject();
});
after(() => service.stop());

for (const path of ['/healthz', '/readyz']) {
  test(`GET ${path} answers 200 without a key`, async () => {
    const reply = await service.request('GET', path);
    assertSuccess(reply, 200);
    assert.equal(typeof reply.body.response, 'object');
    assert.notEqual(reply.body.response, null);
  });

  test(`GET ${path} answers 200 with a key too, and with a query string`, async () => {
    assertSuccess(await service.request('GET', path, { key: project.key }), 200, 'with a key');
    assertSuccess(await service.request('GET', `${path}?probe=1`), 200, 'with a query');
  });

  test(`GET ${path} is not reachable over plain HTTP (301 like everything else)`, async () => {
    const reply = await service.plainRequest('GET', path);
    assert.equal(reply.status, 301);
    assert.equal(reply.headers.location, `${service.baseUrl}${path}`);
  });
}

test('the health endpoints live outside /v1/', async () => {
  assertGatewayNotFound(await service.request('GET', '/v1/healthz', { key: project.key }), '/v1/healthz');
  assertGatewayNotFound(await service.request('GET', '/v1/readyz', { key: project.key }), '/v1/readyz');
});
