import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TestService, type TestProject } from '../support/service.ts';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start();
  project = await service.createProject();
});
after(() => service.stop());

test('GET /v1/key/current answers the key making the call, without its secret', async () => {
  const reply = await service.request('GET', '/v1/key/current', { key: project.key });
  assert.equal(reply.status, 200);
  assert.equal(reply.body.code, 200);
  assert.equal(reply.body.title, 'OK');
  const key = reply.body.response;
  assert.deepEqual(Object.keys(key), ['id', 'object', 'name', 'key_preview', 'scope', 'status', 'expires_at', 'last_used_at', 'created_by', 'created_at', 'updated_at', 'rate_limit']);
  assert.equal(key.id, project.keyId);
  assert.equal(key.object, 'api_key');
  assert.equal(key.key_preview, `sk-project-...${project.key.slice(-4)}`);
  assert.deepEqual(key.scope, ['*']);
  assert.equal(key.status, 'activated');
  assert.equal(key.created_by, project.consumerId);
  assert.ok(!reply.text.includes(project.key));
});

test('GET /v1/key/current without a usable Authorization header answers 401', async () => {
  const cases: Record<string, string>[] = [{}, { authorization: project.key }, { authorization: `bearer ${project.key}` }, { authorization: `Basic ${project.key}` }];
  for (const headers of cases) {
    const reply = await service.request('GET', '/v1/key/current', { headers });
    assert.equal(reply.status, 401);
    assert.deepEqual(reply.body, { code: 401, title: 'Unauthorized', response: 'No valid API key provided.' });
  }
});

test('GET /v1/key/current with an unknown secret answers 403, like a revoked key', async () => {
  for (const key of [`sk-project-${'x'.repeat(43)}`, `${project.key}x`, project.key.slice(0, -1), 'nonsense']) {
    const reply = await service.request('GET', '/v1/key/current', { key });
    assert.equal(reply.status, 403);
    assert.deepEqual(reply.body, { code: 403, title: 'Forbidden', response: "The API key doesn't have permissions to perform the request." });
  }
});
