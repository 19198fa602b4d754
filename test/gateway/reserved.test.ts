// decisions.md, Reserved endpoints (api.md 4.4): /v1/run, /v1/file, /v1/team, /v1/feedback,
// /v1/catalog (each also /<id>) and GET /v1/run-usage/summary are known paths: authentication
// and scope apply, then 501 `This endpoint is not implemented yet.`
import { after, before, test } from 'node:test';
import { MESSAGES } from '../support/assertions.ts';
import { createKey } from '../support/keys.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { assertError, assertGatewayNotFound } from './helpers.ts';

let service: TestService;
let project: TestProject;

const RESOURCES = ['run', 'file', 'team', 'feedback', 'catalog'];
const ID = { run: 'run_00000000000000000000', file: 'file_00000000000000000000', team: 'abc', feedback: '123', catalog: 'mapp_00000000000000000000' } as Record<string, string>;
const METHODS = [['GET', 'read'], ['POST', 'write'], ['PATCH', 'write'], ['DELETE', 'write']] as const;

function pathsOf(resource: string): string[] {
  return [`/v1/${resource}`, `/v1/${resource}/${ID[resource]}`];
}

before(async () => {
  service = await TestService.start({ jobWorkers: false });
  project = await service.createProject();
});
after(() => service.stop());

test('with a * key every reserved endpoint answers 501', async () => {
  for (const resource of RESOURCES) {
    for (const path of pathsOf(resource)) {
      for (const [method] of METHODS) {
        const body = method === 'POST' || method === 'PATCH' ? { anything: true } : undefined;
        assertError(await service.request(method, path, { key: project.key, body }), 501, MESSAGES.notImplemented, `${method} ${path}`);
      }
    }
  }
  assertError(await service.request('GET', '/v1/run-usage/summary', { key: project.key }), 501, MESSAGES.notImplemented, 'usage summary');
});

test('without a key every reserved endpoint answers 401; with an unknown key 403', async () => {
  for (const resource of RESOURCES) {
    for (const path of pathsOf(resource)) {
      for (const [method] of METHODS) {
        assertError(await service.request(method, path), 401, MESSAGES.noKey, `${method} ${path}`);
        assertError(await service.request(method, path, { key: 'sk-project-nosuchkey' }), 403, MESSAGES.refused, `${method} ${path}`);
      }
    }
  }
  assertError(await service.request('GET', '/v1/run-usage/summary'), 401, MESSAGES.noKey, 'usage summary');
  assertError(await service.request('GET', '/v1/run-usage/summary', { key: 'sk-project-nosuchkey' }), 403, MESSAGES.refused, 'usage summary');
});

test('GET needs <resource>:read, POST, PATCH and DELETE need <resource>:write', async () => {
  for (const resource of RESOURCES) {
    const reader = await createKey(service, project.key, { name: `${resource} reader`, scope: [`${resource}:read`] });
    const writer = await createKey(service, project.key, { name: `${resource} writer`, scope: [`${resource}:write`] });
    const all = await createKey(service, project.key, { name: `${resource} all`, scope: [`${resource}:*`] });
    for (const path of pathsOf(resource)) {
      for (const [method, action] of METHODS) {
        const what = `${method} ${path}`;
        const needed = `${resource}:${action}`;
        const other = `${resource}:${action === 'read' ? 'write' : 'read'}`;
        const holder = action === 'read' ? reader : writer;
        const lacking = action === 'read' ? writer : reader;
        assertError(await service.request(method, path, { key: holder.key }), 501, MESSAGES.notImplemented, `${what} with ${needed}`);
        assertError(await service.request(method, path, { key: lacking.key }), 403, MESSAGES.missingScope(needed), `${what} with ${other}`);
        assertError(await service.request(method, path, { key: all.key }), 501, MESSAGES.notImplemented, `${what} with ${resource}:*`);
      }
    }
  }
});

test('another resource\'s scope does not open a reserved endpoint', async () => {
  const keyOnly = await createKey(service, project.key, { name: 'key only', scope: ['key:*', 'app:*', 'event:read'] });
  for (const resource of RESOURCES) {
    for (const path of pathsOf(resource)) {
      assertError(await service.request('GET', path, { key: keyOnly.key }), 403, MESSAGES.missingScope(`${resource}:read`), `GET ${path}`);
      assertError(await service.request('DELETE', path, { key: keyOnly.key }), 403, MESSAGES.missingScope(`${resource}:write`), `DELETE ${path}`);
    }
  }
});

test('GET /v1/run-usage/summary needs usage:read', async () => {
  const usage = await createKey(service, project.key, { name: 'usage', scope: ['usage:read'] });
  const usageAll = await createKey(service, project.key, { name: 'usage all', scope: ['usage:*'] });
  const runAll = await createKey(service, project.key, { name: 'run all', scope: ['run:*'] });
  const usageWrite = await createKey(service, project.key, { name: 'usage write', scope: ['usage:write'] });
  assertError(await service.request('GET', '/v1/run-usage/summary', { key: usage.key }), 501, MESSAGES.notImplemented, 'usage:read');
  assertError(await service.request('GET', '/v1/run-usage/summary', { key: usageAll.key }), 501, MESSAGES.notImplemented, 'usage:*');
  assertError(await service.request('GET', '/v1/run-usage/summary', { key: runAll.key }), 403, MESSAGES.missingScope('usage:read'), 'run:*');
  assertError(await service.request('GET', '/v1/run-usage/summary', { key: usageWrite.key }), 403, MESSAGES.missingScope('usage:read'), 'usage:write');
});

test('the usage summary offers GET alone: other methods are 422', async () => {
  for (const method of ['POST', 'PATCH', 'DELETE']) {
    assertError(await service.request(method, '/v1/run-usage/summary', { key: project.key }), 422, MESSAGES.unprocessable, method);
  }
});

test('a reserved resource one level deeper is an unknown path', async () => {
  for (const resource of RESOURCES) {
    const reply = await service.request('GET', `/v1/${resource}/${ID[resource]}/more`, { key: project.key });
    assertGatewayNotFound(reply, `/v1/${resource}/<id>/more`);
  }
});
