// decisions.md, "Order of checks for every request", pairwise: each request below fails two
// checks at once, and the earlier check must answer.
//   1 plain HTTP 301 · 2 method 405 · 3 body 413 · 4 authentication 401/403 · 5 unknown path 404
//   (4 also: the key's own request limit 429, after the key)
//   6 method not offered 422 · 7 scope 403 · 8 Invalid JSON 400 · 9 plan 402
//   10 Idempotency-Key 400/409/422 or a replay · 11 validation
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { capOf } from '../../gateway/request-limits.ts';
import { appBody } from '../apps/helpers.ts';
import { MESSAGES } from '../support/assertions.ts';
import { createKey, type CreatedKey } from '../support/keys.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { nowSeconds } from '../support/wait.ts';
import { assertError, assertGatewayNotFound, rawRequest } from './helpers.ts';

let service: TestService;
let project: TestProject;
let eventReader: CreatedKey;
let keyReader: CreatedKey;
let expired: CreatedKey;
const OVER = 300_000;
const LIMITED = 'Too many requests for this API key. Retry later.';
const MISSING_APP = '/v1/app/detail/mapp_00000000000000000000';

before(async () => {
  service = await TestService.start({ jobWorkers: false });
  project = await service.createProject();
  eventReader = await createKey(service, project.key, { name: 'event reader', scope: ['event:read'] });
  keyReader = await createKey(service, project.key, { name: 'key reader', scope: ['key:read'] });
  expired = await createKey(service, project.key, { name: 'expired', expires_at: nowSeconds() + 3600 });
  await service.db.query("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", [expired.id]);
});
after(() => service.stop());

/** A request declaring a body over the limit, of which nothing is sent. */
function oversized(method: string, path: string, headers: Record<string, string> = {}) {
  return rawRequest(service, { method, path, headers: { ...headers, 'content-type': 'application/json', 'content-length': OVER }, write: () => false });
}
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

describe('1. plain HTTP comes before everything', () => {
  test('301 beats 405', async () => {
    const reply = await service.plainRequest('PUT', '/v1/key', bearer(project.key));
    assertError(reply, 301, MESSAGES.movedPermanently);
  });
  test('301 beats 413 (the body is not read)', async () => {
    const reply = await rawRequest(service, { plain: true, method: 'POST', path: '/v1/key', headers: { 'content-length': OVER }, write: () => false });
    assertError(reply, 301, MESSAGES.movedPermanently);
  });
  test('301 beats 401 and 403', async () => {
    assertError(await service.plainRequest('GET', '/v1/key'), 301, MESSAGES.movedPermanently, 'no key');
    assertError(await service.plainRequest('GET', '/v1/key', bearer('sk-project-nosuchkey')), 301, MESSAGES.movedPermanently, 'unknown key');
  });
  test('301 beats the gateway 404', async () => {
    assertError(await service.plainRequest('GET', '/v1/nothing', bearer(project.key)), 301, MESSAGES.movedPermanently);
  });
});

describe('2. method never accepted', () => {
  test('405 beats 413', async () => {
    assertError(await oversized('PUT', '/v1/key', bearer(project.key)), 405, MESSAGES.methodNotAllowed);
  });
  test('405 beats 401', async () => {
    assertError(await service.request('PUT', '/v1/key'), 405, MESSAGES.methodNotAllowed);
  });
  test('405 beats 403 for an unknown key', async () => {
    assertError(await service.request('TRACE', '/v1/key', { key: 'sk-project-nosuchkey' }), 405, MESSAGES.methodNotAllowed);
  });
  test('405 beats the gateway 404', async () => {
    assertError(await service.request('PUT', '/v1/nothing', { key: project.key }), 405, MESSAGES.methodNotAllowed);
  });
});

describe('3. body too large', () => {
  test('413 beats 401 (no key)', async () => {
    assertError(await oversized('POST', '/v1/key'), 413, MESSAGES.tooLarge);
  });
  test('413 beats 403 (unknown key) and 401 (expired key)', async () => {
    assertError(await oversized('POST', '/v1/key', bearer('sk-project-nosuchkey')), 413, MESSAGES.tooLarge, 'unknown key');
    assertError(await oversized('POST', '/v1/key', bearer(expired.key)), 413, MESSAGES.tooLarge, 'expired key');
  });
  test('413 beats the gateway 404, 422 and the scope 403', async () => {
    assertError(await oversized('POST', '/v1/nothing', bearer(project.key)), 413, MESSAGES.tooLarge, 'unknown path');
    assertError(await oversized('PATCH', '/v1/key', bearer(project.key)), 413, MESSAGES.tooLarge, 'method not offered');
    assertError(await oversized('POST', '/v1/key', bearer(eventReader.key)), 413, MESSAGES.tooLarge, 'scope');
  });
});

describe('4. authentication', () => {
  test('401 beats the gateway 404', async () => {
    assertError(await service.request('GET', '/v1/nothing'), 401, MESSAGES.noKey, 'no key');
    assertError(await service.request('GET', '/v1/nothing', { key: expired.key }), 401, MESSAGES.expired, 'expired key');
  });
  test('403 (unknown key) beats the gateway 404', async () => {
    assertError(await service.request('GET', '/v1/nothing', { key: 'sk-project-nosuchkey' }), 403, MESSAGES.refused);
  });
  test('401 beats 422 (method not offered)', async () => {
    assertError(await service.request('DELETE', '/v1/event'), 401, MESSAGES.noKey, 'no key');
    assertError(await service.request('DELETE', '/v1/event', { key: expired.key }), 401, MESSAGES.expired, 'expired key');
  });
  test('an unknown key gets the refusal, not a scope message', async () => {
    assertError(await service.request('GET', '/v1/key', { key: 'sk-project-nosuchkey' }), 403, MESSAGES.refused);
  });
  test('the key\'s own request limit (429 with Retry-After) beats the gateway 404, 422, the scope 403 and 400 Invalid JSON', async () => {
    const limited = await createKey(service, project.key, { name: 'limited', scope: ['key:read'], rate_limit: { limit: 1, window_s: 86_400 } });
    // One process admits the limit and one more (decisions.md: + 1% + 1 per web process).
    for (let n = 0; n < capOf(1, 1); n++) await service.request('GET', '/v1/key/current', { key: limited.key });
    for (const [method, path, body, what] of [
      ['GET', '/v1/nothing', undefined, 'unknown path'],
      ['DELETE', '/v1/event', undefined, 'method not offered'],
      ['GET', '/v1/app/list', undefined, 'scope'],
      ['POST', '/v1/key', '[', 'scope and Invalid JSON'],
      ['GET', '/v1/key?limit=0', undefined, 'validation'],
    ] as const) {
      const reply = await service.request(method, path, { key: limited.key, body });
      assertError(reply, 429, LIMITED, what);
      assert.match(String(reply.headers['retry-after']), /^[1-9][0-9]*$/, what);
    }
  });
  test('401 beats 400 Invalid JSON', async () => {
    assertError(await service.request('POST', '/v1/key', { body: '[' }), 401, MESSAGES.noKey, 'no key');
    assertError(await service.request('POST', '/v1/key', { key: expired.key, body: '[' }), 401, MESSAGES.expired, 'expired key');
  });
});

describe('5. unknown path', () => {
  test('the gateway 404 beats 422: no method combines with an unknown path', async () => {
    for (const method of ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS']) {
      assertGatewayNotFound(await service.request(method, '/v1/key/current/more', { key: project.key }), method);
    }
  });
  test('the gateway 404 beats the scope 403 and 400 Invalid JSON', async () => {
    assertGatewayNotFound(await service.request('POST', '/v1/keys', { key: eventReader.key, body: '[' }));
  });
});

describe('6. method not offered', () => {
  test('422 beats the scope 403', async () => {
    assertError(await service.request('DELETE', '/v1/event', { key: keyReader.key }), 422, MESSAGES.unprocessable, 'DELETE /v1/event');
    assertError(await service.request('PATCH', '/v1/key', { key: eventReader.key }), 422, MESSAGES.unprocessable, 'PATCH /v1/key');
  });
  test('422 beats 400 Invalid JSON', async () => {
    assertError(await service.request('PATCH', '/v1/key', { key: project.key, body: '[' }), 422, MESSAGES.unprocessable);
  });
});

describe('7. scope', () => {
  test('the scope 403 beats 400 Invalid JSON', async () => {
    assertError(await service.request('POST', '/v1/key', { key: eventReader.key, body: '[' }), 403, MESSAGES.missingScope('key:write'));
    assertError(await service.request('PATCH', MISSING_APP, { key: eventReader.key, body: 'nope' }), 403, MESSAGES.missingScope('app:write'));
  });
  test('the scope 403 beats the record 404', async () => {
    assertError(await service.request('GET', '/v1/key/papi_00000000000000000000', { key: eventReader.key }), 403, MESSAGES.missingScope('key:read'));
    assertError(await service.request('GET', MISSING_APP, { key: eventReader.key }), 403, MESSAGES.missingScope('app:read'));
  });
  test('the scope 403 beats validation', async () => {
    assertError(await service.request('POST', '/v1/key', { key: keyReader.key, body: {} }), 403, MESSAGES.missingScope('key:write'));
  });
});

describe('8. Invalid JSON', () => {
  test('400 beats validation (422)', async () => {
    assertError(await service.request('POST', '/v1/key', { key: project.key, body: '{"name":' }), 400, MESSAGES.invalidJson);
  });
  test('400 beats the record 404', async () => {
    assertError(await service.request('PATCH', MISSING_APP, { key: project.key, body: '[1]' }), 400, MESSAGES.invalidJson);
  });
});

describe('9. plan checks (app creation)', () => {
  let planless: TestProject;

  before(async () => {
    planless = await service.createProject('no custom apps');
    const { rowCount } = await service.db.query('UPDATE plans SET custom_apps = false WHERE project_id = $1', [planless.projectId]);
    assert.equal(rowCount, 1);
  });

  test('400 Invalid JSON beats 402', async () => {
    assertError(await service.request('POST', '/v1/app/create', { key: planless.key, body: '[' }), 400, MESSAGES.invalidJson);
  });
  test('402 beats validation: an empty body is refused for the plan, not for its missing name', async () => {
    assertError(await service.request('POST', '/v1/app/create', { key: planless.key, body: {} }), 402,
      'The current billing plan does not allow custom app creation for this project.');
  });
  test('the scope 403 beats 402', async () => {
    const reader = await createKey(service, planless.key, { name: 'reader', scope: ['app:read'] });
    assertError(await service.request('POST', '/v1/app/create', { key: reader.key, body: {} }), 403, MESSAGES.missingScope('app:write'));
  });
  test('with custom apps allowed, the same empty body reaches validation (422)', async () => {
    assertError(await service.request('POST', '/v1/app/create', { key: project.key, body: {} }), 422, 'name is required.');
  });
});

describe('10. Idempotency-Key', () => {
  const INVALID = 'Idempotency-Key must be 1 to 255 visible ASCII characters.';
  const MISMATCH = 'Idempotency-Key was already used with a different request.';
  const IN_PROGRESS = 'A request with this Idempotency-Key is in progress.';
  let planless: TestProject;
  let counter = 0;
  const fresh = () => `order-${process.pid}-${++counter}`;
  const send = (method: string, path: string, value: string, body?: unknown, key = project.key) =>
    service.request(method, path, { key, body, headers: { 'Idempotency-Key': value } });
  const setCustomApps = (p: TestProject, allowed: boolean) =>
    service.db.query('UPDATE plans SET custom_apps = $2 WHERE project_id = $1', [p.projectId, allowed]);

  before(async () => {
    planless = await service.createProject('no custom apps, idempotent');
    await setCustomApps(planless, false);
  });

  test('400 Invalid JSON beats an invalid Idempotency-Key (400)', async () => {
    assertError(await send('POST', '/v1/key', 'has space', '['), 400, MESSAGES.invalidJson);
  });
  test('the scope 403 beats an invalid or a used Idempotency-Key', async () => {
    assertError(await send('POST', '/v1/key', 'has space', {}, eventReader.key), 403, MESSAGES.missingScope('key:write'));
    const value = fresh();
    assert.equal((await send('POST', '/v1/key', value, { name: 'kept', scope: ['event:read'] })).status, 201);
    assertError(await send('POST', '/v1/key', value, { name: 'other' }, keyReader.key), 403, MESSAGES.missingScope('key:write'));
  });
  test('402 beats an invalid Idempotency-Key', async () => {
    assertError(await send('POST', '/v1/app/create', 'has space', appBody(), planless.key), 402,
      'The current billing plan does not allow custom app creation for this project.');
  });
  test('402 beats a replay and a used value: a creation kept before the plan changed is refused while it refuses', async () => {
    const planned = await service.createProject('plan changes, idempotent');
    const value = fresh();
    const made = await send('POST', '/v1/app/create', value, appBody({ name: 'kept app' }), planned.key);
    assert.equal(made.status, 200);
    await setCustomApps(planned, false);
    const PLAN = 'The current billing plan does not allow custom app creation for this project.';
    assertError(await send('POST', '/v1/app/create', value, appBody({ name: 'kept app' }), planned.key), 402, PLAN, 'replay');
    assertError(await send('POST', '/v1/app/create', value, appBody({ name: 'another' }), planned.key), 402, PLAN, 'another body');
    await setCustomApps(planned, true);
    const replayed = await send('POST', '/v1/app/create', value, appBody({ name: 'kept app' }), planned.key);
    assert.deepEqual(replayed.body, made.body, 'the kept answer, once the plan allows');
    assert.equal(replayed.headers['idempotent-replayed'], 'true');
  });
  test('an invalid Idempotency-Key (400) beats validation and the record 404', async () => {
    assertError(await send('POST', '/v1/key', 'has space', {}), 400, INVALID, 'validation');
    assertError(await send('POST', '/v1/app/create', 'has space', {}), 400, INVALID, 'app validation');
    assertError(await send('DELETE', '/v1/key/papi_00000000000000000000', 'has space'), 400, INVALID, 'record 404');
    assertError(await send('PATCH', MISSING_APP, 'x'.repeat(256), { name: 'x' }), 400, INVALID, 'record 404, too long');
  });
  test('a used value (422) beats validation and the record 404', async () => {
    const value = fresh();
    assert.equal((await send('POST', '/v1/key', value, { name: 'first', scope: ['key:read'] })).status, 201);
    assertError(await send('POST', '/v1/key', value, {}), 422, MISMATCH, 'validation');
    assertError(await send('DELETE', '/v1/key/papi_00000000000000000000', value), 422, MISMATCH, 'record 404');
  });
  test('a value in progress (409 with Retry-After: 1) beats validation and the record 404', async () => {
    const value = fresh();
    const holder = new pg.Client({ connectionString: service.databaseUrl });
    await holder.connect();
    try {
      await holder.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [`${project.keyId}\n${value}`]);
      for (const reply of [await send('POST', '/v1/key', value, {}), await send('DELETE', '/v1/key/papi_00000000000000000000', value)]) {
        assertError(reply, 409, IN_PROGRESS);
        assert.equal(reply.headers['retry-after'], '1');
      }
    } finally {
      await holder.end();
    }
  });
});
