// Steps 5 and 6 of decisions.md: an unknown path is the gateway 404 (its `code` the string "404"),
// after authentication; a known path with a method it does not offer is 422.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { MESSAGES } from '../support/assertions.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { nowSeconds } from '../support/wait.ts';
import { assertError, assertGatewayNotFound } from './helpers.ts';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start({ jobWorkers: false });
  project = await service.createProject();
});
after(() => service.stop());

const UNKNOWN_PATHS = [
  '/',
  '/v1',
  '/v1/',
  '/v2/key',
  '/v1/keys',
  '/v1/nothing-here',
  '/v1/nothing-here?limit=1',
  '/v1/app',
  '/v1/app/detail',
  '/v1/app/create/extra',
  '/v1/key/papi_00000000000000000000/extra',
  '/v1/event/evnt_00000000000000000000/extra',
  '/v1/run-usage',
  '/v1/run-usage/other',
  '/V1/KEY',
  '/healthz/extra',
];

test('an unknown path, authenticated: the gateway 404 with code "404" as a string', async () => {
  for (const path of UNKNOWN_PATHS) {
    for (const method of ['GET', 'POST', 'PATCH', 'DELETE']) {
      const reply = await service.request(method, path, { key: project.key });
      assertGatewayNotFound(reply, `${method} ${path}`);
    }
  }
});

test('the gateway 404 is written with the string code on the wire', async () => {
  const reply = await service.request('GET', '/v1/nothing-here', { key: project.key });
  assert.match(reply.text, /"code":"404"/);
});

test('the record 404 of a known path has a numeric code (the other kind of not-found)', async () => {
  const reply = await service.request('GET', '/v1/key/papi_00000000000000000000', { key: project.key });
  assertError(reply, 404, 'API key not found.');
  assert.equal(typeof reply.body.code, 'number');
});

test('an unknown path without a key is 401: authentication comes first', async () => {
  for (const path of UNKNOWN_PATHS) {
    assertError(await service.request('GET', path), 401, MESSAGES.noKey, path);
  }
});

test('an unknown path with an unknown key is 403, with an expired key 401', async () => {
  assertError(await service.request('GET', '/v1/nothing-here', { key: 'sk-project-nosuchkey' }), 403, MESSAGES.refused);
  const created = await service.request('POST', '/v1/key', {
    key: project.key, body: { name: 'expiring', expires_at: nowSeconds() + 3600 },
  });
  assert.equal(created.status, 201);
  await service.db.query("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", [created.body.response.id]);
  assertError(await service.request('GET', '/v1/nothing-here', { key: created.body.response.key }), 401, MESSAGES.expired);
});

test('a known path with a method it does not offer: 422', async () => {
  const cases: Array<[string, string]> = [
    ['PATCH', '/v1/key'],
    ['DELETE', '/v1/key'],
    ['PATCH', '/v1/key/papi_00000000000000000000'],
    ['POST', '/v1/key/papi_00000000000000000000'],
    ['POST', '/v1/key/current'],
    ['PATCH', '/v1/key/current'],
    ['GET', '/v1/app/create'],
    ['PATCH', '/v1/app/create'],
    ['DELETE', '/v1/app/create'],
    ['POST', '/v1/app/list'],
    ['PATCH', '/v1/app/list'],
    ['DELETE', '/v1/app/list'],
    ['POST', '/v1/app/detail/mapp_00000000000000000000'],
    ['POST', '/v1/event'],
    ['PATCH', '/v1/event'],
    ['DELETE', '/v1/event'],
    ['POST', '/v1/event/evnt_00000000000000000000'],
    ['PATCH', '/v1/event/evnt_00000000000000000000'],
    ['DELETE', '/v1/event/evnt_00000000000000000000'],
    ['POST', '/v1/run-usage/summary'],
    ['PATCH', '/v1/run-usage/summary'],
    ['DELETE', '/v1/run-usage/summary'],
    ['OPTIONS', '/v1/key'],
  ];
  for (const [method, path] of cases) {
    const reply = await service.request(method, path, { key: project.key });
    assertError(reply, 422, MESSAGES.unprocessable, `${method} ${path}`);
  }
});

test('a method not offered is 422 whatever the body: nothing is parsed or done', async () => {
  const reply = await service.request('DELETE', '/v1/event', { key: project.key, body: '{not json' });
  assertError(reply, 422, MESSAGES.unprocessable);
  const patch = await service.request('PATCH', '/v1/key', { key: project.key, body: { name: 'patched' } });
  assertError(patch, 422, MESSAGES.unprocessable);
  const { rows } = await service.db.query("SELECT count(*)::int AS n FROM api_keys WHERE name = 'patched'");
  assert.equal(rows[0].n, 0);
});

test('a known path with a method not offered, without a key: 401 first', async () => {
  assertError(await service.request('PATCH', '/v1/key'), 401, MESSAGES.noKey);
  assertError(await service.request('DELETE', '/v1/event'), 401, MESSAGES.noKey);
});
