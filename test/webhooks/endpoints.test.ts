// The webhook endpoints' API (decisions.md, "Webhooks"): exact shapes of every answer, the
// validation messages in order, the scopes, another project's endpoints answering as unknown
// ones, and the event each change records (never with a secret).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { REPLAYS_CHANNEL } from '../../domain/audit.ts';
import { WEBHOOK_LISTENER } from '../../domain/webhook-delivery.ts';
import { sealingKeyOf, unseal } from '../../domain/sealing.ts';
import { assertError, assertSuccess, MESSAGES } from '../support/assertions.ts';
import { createKey } from '../support/keys.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { nowSeconds, waitFor } from '../support/wait.ts';
import { createEndpoint } from './helpers.ts';

const NOT_FOUND = 'Webhook endpoint not found.';
const FIELDS = ['id', 'object', 'url', 'description', 'types', 'status', 'disabled_reason', 'created_at', 'updated_at'];
const ENDPOINT_ID = /^whep_[0-9a-f]{20}$/;
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  project = await service.createProject('Webhook endpoints');
});
after(() => service.stop());

async function eventsOf(endpointId: string): Promise<Array<{ type: string; origin: string; actor: string | null; details: any; related_table: string }>> {
  await service.waitForJobsDrained();
  const { rows } = await service.db.query(
    `SELECT t.name AS type, e.origin, e.actor_id AS actor, e.details, e.related_table FROM events e JOIN event_types t ON t.id = e.type_id
     WHERE e.related_id = $1 ORDER BY e.sequence`, [endpointId]);
  return rows;
}

test('POST /v1/webhook: 201, the endpoint object with its secret once, no-store; webhook.created without the secret', async () => {
  const before = nowSeconds();
  const reply = await service.request('POST', '/v1/webhook', {
    key: project.key, body: { url: 'https://127.0.0.1:9/hook', description: 'Billing', types: ['key.created', 'app.created', 'key.created'] },
  });
  const made = assertSuccess(reply, 201);
  assert.deepEqual(Object.keys(made), [...FIELDS, 'secret']);
  assert.match(made.id, ENDPOINT_ID);
  assert.equal(made.object, 'webhook_endpoint');
  assert.equal(made.url, 'https://127.0.0.1:9/hook');
  assert.equal(made.description, 'Billing');
  assert.deepEqual(made.types, ['key.created', 'app.created'], 'duplicates dropped, the order kept');
  assert.equal(made.status, 'enabled');
  assert.equal(made.disabled_reason, null);
  assert.ok(made.created_at >= before && made.created_at <= nowSeconds());
  assert.equal(made.updated_at, made.created_at);
  assert.match(made.secret, SECRET);
  assert.equal(Buffer.from(made.secret.slice('whsec_'.length), 'base64').length, 32);
  assert.equal(reply.headers['cache-control'], 'no-store');

  const events = await eventsOf(made.id);
  assert.deepEqual(events, [{
    type: 'webhook.created', origin: 'api', actor: project.keyId, related_table: 'webhook',
    details: { url: 'https://127.0.0.1:9/hook', description: 'Billing', types: ['key.created', 'app.created'] },
  }]);
  const { rows: [stored] } = await service.db.query('SELECT secret FROM webhook_endpoints WHERE id = $1', [made.id]);
  assert.ok(!stored.secret.includes(made.secret.slice('whsec_'.length)), 'not kept as it is');
  assert.equal(unseal(sealingKeyOf(service.config), stored.secret, made.id), made.secret, 'kept sealed, usable for signing');
  assert.throws(() => unseal(sealingKeyOf(service.config), stored.secret, 'whep_00000000000000000000'), 'bound to its endpoint');
  assert.throws(() => unseal(Buffer.alloc(32), stored.secret, made.id), 'opened by its key alone');
  assert.ok(!service.logText().includes(made.secret), 'the secret is never logged');

  const read = assertSuccess(await service.request('GET', `/v1/webhook/${made.id}`, { key: project.key }));
  const { secret: _secret, ...withoutSecret } = made;
  assert.deepEqual(read, withoutSecret, 'a read never shows the secret');
});

test('POST /v1/webhook: description and types default to "" and [] (every type)', async () => {
  for (const body of [{ url: 'https://127.0.0.1:9/a' }, { url: 'https://127.0.0.1:9/b', description: null, types: null }]) {
    const made = await createEndpoint(service, project.key, body);
    assert.equal(made.description, '');
    assert.deepEqual(made.types, []);
  }
});

test('POST /v1/webhook: validation messages, in order', async () => {
  const cases: Array<[unknown, string]> = [
    [{}, 'url is required.'],
    [{ url: null }, 'url is required.'],
    [{ url: '   ' }, 'url is required.'],
    [{ url: 42 }, 'url must be an https URL.'],
    [{ url: 'http://example.invalid/hook' }, 'url must be an https URL.'],
    [{ url: 'not a url' }, 'url must be an https URL.'],
    [{ url: 'ftp://example.invalid/' }, 'url must be an https URL.'],
    [{ url: `https://127.0.0.1:9/${'a'.repeat(2000)}` }, 'url must be an https URL.'],
    [{ url: 'https://127.0.0.1:9/', description: 5 }, 'description must be a string.'],
    [{ url: 'https://127.0.0.1:9/', description: 'd'.repeat(201) }, 'description must be at most 200 characters.'],
    [{ url: 'https://127.0.0.1:9/', types: 'key.created' }, 'types must be an array of event type names.'],
    [{ url: 'https://127.0.0.1:9/', types: ['key.created', 'key.renamed'] }, 'Unknown event type: key.renamed.'],
    [{ url: 'https://127.0.0.1:9/', types: [7] }, 'Unknown event type: 7.'],
  ];
  for (const [body, message] of cases) {
    assertError(await service.request('POST', '/v1/webhook', { key: project.key, body }), 422, message, JSON.stringify(body).slice(0, 80));
  }
  // 200 characters, an emoji counting as one, pass.
  const made = await createEndpoint(service, project.key, { url: 'https://127.0.0.1:9/', description: '😀'.repeat(200) });
  assert.equal([...made.description].length, 200);
});

test('GET /v1/webhook: newest first, limit/offset as for keys, total of the project\'s endpoints', async () => {
  const owner = await service.createProject('Listing');
  const made = [];
  for (let i = 0; i < 3; i++) made.push((await createEndpoint(service, owner.key, { url: `https://127.0.0.1:9/${i}` })).id);
  const list = assertSuccess(await service.request('GET', '/v1/webhook', { key: owner.key }));
  assert.deepEqual(Object.keys(list), ['object', 'data', 'total']);
  assert.equal(list.object, 'list');
  assert.equal(list.total, 3);
  assert.deepEqual(list.data.map((w: any) => w.id), [...made].reverse());
  for (const endpoint of list.data) assert.deepEqual(Object.keys(endpoint), FIELDS);
  const page = assertSuccess(await service.request('GET', '/v1/webhook?limit=1&offset=1', { key: owner.key }));
  assert.deepEqual(page.data.map((w: any) => w.id), [made[1]]);
  assert.equal(page.total, 3);
  const past = assertSuccess(await service.request('GET', '/v1/webhook?offset=10', { key: owner.key }));
  assert.deepEqual(past, { object: 'list', data: [], total: 3 });
  assertError(await service.request('GET', '/v1/webhook?limit=0', { key: owner.key }), 422, 'limit must be an integer from 1 to 100.');
  assertError(await service.request('GET', '/v1/webhook?offset=-1', { key: owner.key }), 422, 'offset must be a non-negative integer.');
});

test('PATCH /v1/webhook/<id>: what changed is recorded; disabling is `manual`, enabling clears it; an empty edit records nothing', async () => {
  const made = await createEndpoint(service, project.key, { url: 'https://127.0.0.1:9/patch' });
  const edited = assertSuccess(await service.request('PATCH', `/v1/webhook/${made.id}`, {
    key: project.key, body: { url: 'https://127.0.0.1:9/patched', description: 'Now described', types: ['app.deleted'] },
  }));
  assert.deepEqual(Object.keys(edited), FIELDS);
  assert.deepEqual({ url: edited.url, description: edited.description, types: edited.types }, { url: 'https://127.0.0.1:9/patched', description: 'Now described', types: ['app.deleted'] });
  const disabled = assertSuccess(await service.request('PATCH', `/v1/webhook/${made.id}`, { key: project.key, body: { status: 'disabled' } }));
  assert.deepEqual([disabled.status, disabled.disabled_reason], ['disabled', 'manual']);
  const enabled = assertSuccess(await service.request('PATCH', `/v1/webhook/${made.id}`, { key: project.key, body: { status: 'enabled' } }));
  assert.deepEqual([enabled.status, enabled.disabled_reason], ['enabled', null]);
  const same = assertSuccess(await service.request('PATCH', `/v1/webhook/${made.id}`, { key: project.key, body: { description: 'Now described' } }));
  assert.deepEqual(same, enabled, 'nothing changed');
  const events = await eventsOf(made.id);
  assert.deepEqual(events.map((e) => [e.type, e.details]), [
    ['webhook.created', { url: 'https://127.0.0.1:9/patch', description: '', types: [] }],
    ['webhook.updated', { changes: {
      url: { from: 'https://127.0.0.1:9/patch', to: 'https://127.0.0.1:9/patched' },
      description: { from: '', to: 'Now described' },
      types: { from: [], to: ['app.deleted'] },
    } }],
    ['webhook.updated', { changes: { status: { from: 'enabled', to: 'disabled' } } }],
    ['webhook.updated', { changes: { status: { from: 'disabled', to: 'enabled' } } }],
  ]);
});

test('PATCH status of an endpoint the service disabled: `disabled` keeps its reason and records nothing; `enabled` clears it', async () => {
  for (const reason of ['gone', 'failing']) {
    const made = await createEndpoint(service, project.key, { url: `https://127.0.0.1:9/${reason}` });
    await service.db.query("UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $2 WHERE id = $1", [made.id, reason]);
    const again = assertSuccess(await service.request('PATCH', `/v1/webhook/${made.id}`, { key: project.key, body: { status: 'disabled' } }));
    assert.deepEqual([again.status, again.disabled_reason], ['disabled', reason], 'already disabled: nothing to change');
    const enabled = assertSuccess(await service.request('PATCH', `/v1/webhook/${made.id}`, { key: project.key, body: { status: 'enabled' } }));
    assert.deepEqual([enabled.status, enabled.disabled_reason], ['enabled', null]);
    assert.deepEqual((await eventsOf(made.id)).map((e) => [e.type, e.details]).slice(1), [
      ['webhook.updated', { changes: { status: { from: 'disabled', to: 'enabled' } } }],
    ]);
  }
});

test('PATCH /v1/webhook/<id>: validation messages', async () => {
  const made = await createEndpoint(service, project.key, { url: 'https://127.0.0.1:9/v' });
  const cases: Array<[unknown, string]> = [
    [{}, 'Nothing to update. Provide url, description, types and/or status.'],
    [{ name: 'x' }, 'Nothing to update. Provide url, description, types and/or status.'],
    [{ url: '' }, 'url is required.'],
    [{ url: 'http://example.invalid/' }, 'url must be an https URL.'],
    [{ description: null }, 'description must be a string.'],
    [{ types: null }, 'types must be an array of event type names.'],
    [{ types: ['nope'] }, 'Unknown event type: nope.'],
    [{ status: 'paused' }, "status must be 'enabled' or 'disabled'."],
  ];
  for (const [body, message] of cases) {
    assertError(await service.request('PATCH', `/v1/webhook/${made.id}`, { key: project.key, body }), 422, message, JSON.stringify(body));
  }
});

test('POST /v1/webhook/<id>/secret: a new secret once, webhook.secret_rotated without either secret', async () => {
  const made = await createEndpoint(service, project.key, { url: 'https://127.0.0.1:9/rotate' });
  const reply = await service.request('POST', `/v1/webhook/${made.id}/secret`, { key: project.key });
  const rotated = assertSuccess(reply);
  assert.deepEqual(Object.keys(rotated), [...FIELDS, 'secret']);
  assert.match(rotated.secret, SECRET);
  assert.notEqual(rotated.secret, made.secret);
  assert.equal(reply.headers['cache-control'], 'no-store');
  const events = await eventsOf(made.id);
  assert.equal(events[1]!.type, 'webhook.secret_rotated');
  assert.deepEqual(Object.keys(events[1]!.details), ['previous_secret_expires_at']);
  const until = events[1]!.details.previous_secret_expires_at;
  assert.ok(Math.abs(until - (nowSeconds() + 86_400)) <= 5, `the old secret is signed with for 24 hours: ${until}`);
  const text = JSON.stringify(events);
  assert.ok(!text.includes(made.secret) && !text.includes(rotated.secret), 'no secret in any event');
});

test('DELETE /v1/webhook/<id>: 200 {deleted, id}, then 404 everywhere; webhook.deleted', async () => {
  const made = await createEndpoint(service, project.key, { url: 'https://127.0.0.1:9/delete' });
  assert.deepEqual(assertSuccess(await service.request('DELETE', `/v1/webhook/${made.id}`, { key: project.key })), { deleted: true, id: made.id });
  for (const [method, path] of [['GET', ''], ['PATCH', ''], ['DELETE', ''], ['POST', '/secret'], ['GET', '/delivery'], ['POST', '/replay']] as const) {
    const body = method === 'PATCH' ? { description: 'x' } : path === '/replay' ? { after: 0 } : undefined;
    assertError(await service.request(method, `/v1/webhook/${made.id}${path}`, { key: project.key, ...(body ? { body } : {}) }), 404, NOT_FOUND, `${method} ${path}`);
  }
  const list = assertSuccess(await service.request('GET', '/v1/webhook?limit=100', { key: project.key }));
  assert.ok(!list.data.some((w: any) => w.id === made.id));
  assert.deepEqual((await eventsOf(made.id)).map((e) => [e.type, e.details]), [
    ['webhook.created', { url: 'https://127.0.0.1:9/delete', description: '', types: [] }],
    ['webhook.deleted', { url: 'https://127.0.0.1:9/delete' }],
  ]);
});

test('an unknown id, one that cannot be an id, and another project\'s endpoint all answer 404 Webhook endpoint not found.', async () => {
  const other = await service.createProject('Someone else');
  const theirs = await createEndpoint(service, other.key, { url: 'https://127.0.0.1:9/theirs' });
  for (const id of [theirs.id, 'whep_00000000000000000000', 'nope', 'papi_00000000000000000000']) {
    for (const [method, path, body] of [
      ['GET', '', undefined], ['PATCH', '', { description: 'mine now' }], ['DELETE', '', undefined], ['POST', '/secret', undefined],
      ['GET', '/delivery', undefined], ['POST', '/replay', { after: 0 }],
    ] as const) {
      assertError(await service.request(method, `/v1/webhook/${id}${path}`, { key: project.key, ...(body ? { body } : {}) }), 404, NOT_FOUND, `${method} ${id}${path}`);
    }
  }
  const still = assertSuccess(await service.request('GET', `/v1/webhook/${theirs.id}`, { key: other.key }));
  assert.equal(still.description, '', 'untouched');
});

test('GET /v1/webhook/<id>/delivery: an empty log is an empty list; paging is validated', async () => {
  const made = await createEndpoint(service, project.key, { url: 'https://127.0.0.1:9/log' });
  assert.deepEqual(assertSuccess(await service.request('GET', `/v1/webhook/${made.id}/delivery`, { key: project.key })), { object: 'list', data: [], total: 0 });
  assertError(await service.request('GET', `/v1/webhook/${made.id}/delivery?limit=101`, { key: project.key }), 422, 'limit must be an integer from 1 to 100.');
});

test('POST /v1/webhook/<id>/replay: 202 {"queued": n}; after must be a non-negative integer; a disabled endpoint is refused', async () => {
  const owner = await service.createProject('Replays');
  const made = await createEndpoint(service, owner.key, { url: 'https://127.0.0.1:9/replay', types: ['key.created'] });
  await service.waitForJobsDrained();
  // project.created, key.created (the workspace's), webhook.created: one key.created.
  const reply = await service.request('POST', `/v1/webhook/${made.id}/replay`, { key: owner.key, body: { after: 0 } });
  assert.deepEqual(assertSuccess(reply, 202), { queued: 1 });
  assert.deepEqual(assertSuccess(await service.request('POST', `/v1/webhook/${made.id}/replay`, { key: owner.key, body: { after: 2 } }), 202), { queued: 0 });
  for (const body of [{}, { after: -1 }, { after: 1.5 }, { after: '3' }, { after: null }]) {
    assertError(await service.request('POST', `/v1/webhook/${made.id}/replay`, { key: owner.key, body }), 422, 'after must be a non-negative integer.', JSON.stringify(body));
  }
  assertSuccess(await service.request('PATCH', `/v1/webhook/${made.id}`, { key: owner.key, body: { status: 'disabled' } }));
  assertError(await service.request('POST', `/v1/webhook/${made.id}/replay`, { key: owner.key, body: { after: 0 } }), 422, 'The webhook endpoint is disabled.');
});

test('a replay that queues events tells the workers at its commit (their sweep would take up to a second); one that queues none, or is refused, does not', async (t) => {
  const owner = await service.createProject('Replay notices');
  const made = await createEndpoint(service, owner.key, { url: 'https://127.0.0.1:9/notice', types: ['key.created'] });
  await service.waitForJobsDrained();
  // The worker's listener hears the channel (its last statement is its LISTENs).
  const database = new URL(service.databaseUrl).pathname.slice(1);
  await waitFor('the worker listening for replays', async () => ((await service.db.query(
    'SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND application_name = $2 AND query LIKE $3', [database, WEBHOOK_LISTENER, `%LISTEN ${REPLAYS_CHANNEL}%`],
  )).rowCount ?? 0) > 0 || undefined);
  const listener = new pg.Client({ connectionString: service.databaseUrl });
  t.after(() => listener.end());
  await listener.connect();
  const notices: string[] = [];
  listener.on('notification', (message) => { if (message.channel === REPLAYS_CHANNEL) notices.push(message.payload ?? ''); });
  await listener.query(`LISTEN ${REPLAYS_CHANNEL}`);
  const replay = (after: number) => service.request('POST', `/v1/webhook/${made.id}/replay`, { key: owner.key, body: { after } });
  const heard = (what: string, count: number) => waitFor(what, async () => notices.length >= count || undefined);
  assert.deepEqual(assertSuccess(await replay(0), 202), { queued: 1 });
  await heard('the first replay\'s notice', 1);
  assert.deepEqual(assertSuccess(await replay(2), 202), { queued: 0 });
  assertSuccess(await service.request('PATCH', `/v1/webhook/${made.id}`, { key: owner.key, body: { status: 'disabled' } }));
  assertError(await replay(0), 422, 'The webhook endpoint is disabled.');
  // Notices arrive in commit order: a notice from either replay above would come before this one.
  await listener.query('SELECT pg_notify($1, $2)', [REPLAYS_CHANNEL, 'marker']);
  await heard('the marker', 2);
  assert.deepEqual(notices, [owner.projectId, 'marker']);
  assertSuccess(await service.request('PATCH', `/v1/webhook/${made.id}`, { key: owner.key, body: { status: 'enabled' } }));
  assert.deepEqual(assertSuccess(await replay(0), 202), { queued: 1 });
  await heard('the last replay\'s notice', 3);
  assert.deepEqual(notices, [owner.projectId, 'marker', owner.projectId]);
});

test('scopes: webhook:read reads, webhook:write changes, webhook:* both; nothing else does', async () => {
  const made = await createEndpoint(service, project.key, { url: 'https://127.0.0.1:9/scopes' });
  const reader = await createKey(service, project.key, { name: 'webhook reader', scope: ['webhook:read'] });
  const writer = await createKey(service, project.key, { name: 'webhook writer', scope: ['webhook:write'] });
  const both = await createKey(service, project.key, { name: 'webhook all', scope: ['webhook:*'] });
  const neither = await createKey(service, project.key, { name: 'events and keys', scope: ['event:read', 'key:write'] });
  const reads: Array<[string, string]> = [['GET', '/v1/webhook'], ['GET', `/v1/webhook/${made.id}`], ['GET', `/v1/webhook/${made.id}/delivery`]];
  const writes: Array<[string, string, unknown]> = [
    ['POST', '/v1/webhook', { url: 'https://127.0.0.1:9/w' }], ['PATCH', `/v1/webhook/${made.id}`, { description: 'w' }],
    ['POST', `/v1/webhook/${made.id}/secret`, undefined], ['POST', `/v1/webhook/${made.id}/replay`, { after: 0 }],
  ];
  for (const [method, path] of reads) {
    assert.equal((await service.request(method, path, { key: reader.key })).status, 200, `${method} ${path} with webhook:read`);
    assert.equal((await service.request(method, path, { key: both.key })).status, 200, `${method} ${path} with webhook:*`);
    assertError(await service.request(method, path, { key: writer.key }), 403, MESSAGES.missingScope('webhook:read'));
    assertError(await service.request(method, path, { key: neither.key }), 403, MESSAGES.missingScope('webhook:read'));
  }
  for (const [method, path, body] of writes) {
    const options = (key: string) => ({ key, ...(body === undefined ? {} : { body }) });
    assert.ok([200, 201, 202].includes((await service.request(method, path, options(writer.key))).status), `${method} ${path} with webhook:write`);
    assert.ok([200, 201, 202].includes((await service.request(method, path, options(both.key))).status), `${method} ${path} with webhook:*`);
    assertError(await service.request(method, path, options(reader.key)), 403, MESSAGES.missingScope('webhook:write'));
  }
  assertError(await service.request('DELETE', `/v1/webhook/${made.id}`, { key: reader.key }), 403, MESSAGES.missingScope('webhook:write'));
  assertSuccess(await service.request('DELETE', `/v1/webhook/${made.id}`, { key: writer.key }));
  // A key may be made with the webhook scopes, and a key without them cannot grant them.
  assertError(await service.request('POST', '/v1/key', { key: neither.key, body: { name: 'wider', scope: ['webhook:read'] } }), 403,
    'Cannot create a key with wider scope than the calling key.');
});
