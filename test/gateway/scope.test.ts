// Step 7 of decisions.md and api.md 5.4: a key passes when it holds `*`, `<resource>:*` or the
// exact scope; otherwise 403 naming the wanted scope, before any work or record lookup.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { MESSAGES } from '../support/assertions.ts';
import { createKey, type CreatedKey } from '../support/keys.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { assertError, assertSuccess } from './helpers.ts';

let service: TestService;
let project: TestProject;
const keys: Record<string, CreatedKey> = {};

before(async () => {
  service = await TestService.start({ jobWorkers: false });
  project = await service.createProject();
  for (const scope of ['event:read', 'key:*', 'key:read', 'key:write', 'app:write', 'app:read']) {
    keys[scope] = await createKey(service, project.key, { name: scope, scope: [scope] });
  }
});
after(() => service.stop());

const missing = (scope: string) => MESSAGES.missingScope(scope);

test('event:read calling GET /v1/key: 403 naming key:read', async () => {
  const reply = await service.request('GET', '/v1/key', { key: keys['event:read']!.key });
  assertError(reply, 403, missing('key:read'));
});

test('event:read is refused every key and app endpoint, each naming its scope', async () => {
  const key = keys['event:read']!.key;
  const cases: Array<[string, string, string, unknown?]> = [
    ['GET', '/v1/key', 'key:read'],
    ['GET', '/v1/key/current', 'key:read'],
    ['GET', '/v1/key/papi_00000000000000000000', 'key:read'],
    ['POST', '/v1/key', 'key:write', { name: 'x' }],
    ['DELETE', '/v1/key/papi_00000000000000000000', 'key:write'],
    ['GET', '/v1/app/list', 'app:read'],
    ['GET', '/v1/app/detail/mapp_00000000000000000000', 'app:read'],
    ['POST', '/v1/app/create', 'app:write', {}],
    ['PATCH', '/v1/app/detail/mapp_00000000000000000000', 'app:write', { name: 'x' }],
    ['DELETE', '/v1/app/detail/mapp_00000000000000000000', 'app:write'],
  ];
  for (const [method, path, scope, body] of cases) {
    const reply = await service.request(method, path, { key, body });
    assertError(reply, 403, missing(scope), `${method} ${path}`);
  }
});

test('event:read passes its own endpoints', async () => {
  const key = keys['event:read']!.key;
  assertSuccess(await service.request('GET', '/v1/event', { key }), 200, 'GET /v1/event');
  // A record that does not exist is the endpoint's own 404: the scope check was passed.
  assertError(await service.request('GET', '/v1/event/evnt_00000000000000000000', { key }), 404, 'Event not found.');
});

test('the scope check comes before the record lookup: 403, not 404', async () => {
  const reply = await service.request('GET', '/v1/key/papi_00000000000000000000', { key: keys['app:read']!.key });
  assertError(reply, 403, missing('key:read'));
  const del = await service.request('DELETE', `/v1/key/${keys['event:read']!.id}`, { key: keys['key:read']!.key });
  assertError(del, 403, missing('key:write'));
  const { rows } = await service.db.query('SELECT status FROM api_keys WHERE id = $1', [keys['event:read']!.id]);
  assert.equal(rows[0].status, 'activated', 'nothing was revoked');
});

test('key:* passes key:read and key:write', async () => {
  const key = keys['key:*']!.key;
  const list = await service.request('GET', '/v1/key', { key });
  assertSuccess(list, 200, 'GET /v1/key');
  assertSuccess(await service.request('GET', '/v1/key/current', { key }), 200, 'GET /v1/key/current');
  const created = await service.request('POST', '/v1/key', { key, body: { name: 'made by key:*', scope: ['key:read'] } });
  assertSuccess(created, 201, 'POST /v1/key');
  assert.deepEqual(created.body.response.scope, ['key:read']);
});

test('key:* does not reach other resources', async () => {
  const key = keys['key:*']!.key;
  assertError(await service.request('GET', '/v1/event', { key }), 403, missing('event:read'));
  assertError(await service.request('GET', '/v1/app/list', { key }), 403, missing('app:read'));
  assertError(await service.request('GET', '/v1/run', { key }), 403, missing('run:read'));
});

test('read does not imply write, nor write read', async () => {
  assertSuccess(await service.request('GET', '/v1/key', { key: keys['key:read']!.key }), 200, 'key:read GET');
  assertError(await service.request('POST', '/v1/key', { key: keys['key:read']!.key, body: { name: 'x', scope: ['key:read'] } }),
    403, missing('key:write'), 'key:read POST');
  assertError(await service.request('GET', '/v1/key', { key: keys['key:write']!.key }), 403, missing('key:read'), 'key:write GET');
  assertError(await service.request('GET', '/v1/app/list', { key: keys['app:write']!.key }), 403, missing('app:read'), 'app:write GET');
  assertSuccess(await service.request('GET', '/v1/app/list', { key: keys['app:read']!.key }), 200, 'app:read GET');
  assertError(await service.request('POST', '/v1/app/create', { key: keys['app:read']!.key, body: {} }),
    403, missing('app:write'), 'app:read POST');
});

test('key:write passes POST /v1/key', async () => {
  const reply = await service.request('POST', '/v1/key', { key: keys['key:write']!.key, body: { name: 'by key:write', scope: ['key:write'] } });
  assertSuccess(reply, 201);
});

test('* passes every scope', async () => {
  const key = project.key;
  assertSuccess(await service.request('GET', '/v1/key', { key }), 200, 'key:read');
  assertSuccess(await service.request('POST', '/v1/key', { key, body: { name: 'by star' } }), 201, 'key:write');
  assertSuccess(await service.request('GET', '/v1/event', { key }), 200, 'event:read');
  assertSuccess(await service.request('GET', '/v1/app/list', { key }), 200, 'app:read');
  assertError(await service.request('GET', '/v1/app/detail/mapp_00000000000000000000', { key }), 404, 'App not found.', 'app:read detail');
  assertError(await service.request('DELETE', '/v1/app/detail/mapp_00000000000000000000', { key }), 404, 'App not found.', 'app:write');
  assertError(await service.request('GET', '/v1/run-usage/summary', { key }), 501, MESSAGES.notImplemented, 'usage:read');
  assertError(await service.request('POST', '/v1/feedback', { key }), 501, MESSAGES.notImplemented, 'feedback:write');
});

test('a key with several scopes passes each of them', async () => {
  const both = await createKey(service, project.key, { name: 'two', scope: ['event:read', 'app:read'] });
  assertSuccess(await service.request('GET', '/v1/event', { key: both.key }), 200, 'event:read');
  assertSuccess(await service.request('GET', '/v1/app/list', { key: both.key }), 200, 'app:read');
  assertError(await service.request('GET', '/v1/key', { key: both.key }), 403, missing('key:read'));
});
