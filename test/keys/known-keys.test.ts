// A key seen to authenticate is recognised from memory and costs no lookup; its check rides in the
// request's own statement or transaction. A known key revoked behind the process's back, disabled
// with its owner, or expired is still refused on its very next call, before any other answer.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { disableConsumer, disableProject } from '../../domain/projects.ts';
import { hashSecret, newSecret, previewOf } from '../../domain/secrets.ts';
import { assertGatewayNotFound } from '../gateway/helpers.ts';
import { assertError, assertSuccess, MESSAGES } from '../support/assertions.ts';
import { createKey } from '../support/keys.ts';
import { LookupCounter } from '../support/lookups.ts';
import { TestService, type RequestOptions, type TestProject } from '../support/service.ts';
import { sleep, waitFor } from '../support/wait.ts';

const WORKSPACE = { origin: 'workspace' as const, ip: '127.0.0.1' };

let service: TestService;
let project: TestProject;
let lookups: LookupCounter;

before(async () => {
  service = await TestService.start();
  project = await service.createProject();
  lookups = await LookupCounter.open(service.databaseUrl);
});
after(async () => {
  await lookups.close();
  await service.stop();
});

/** A new key of the project, called once so that the process knows it. */
async function knownKey(scope = ['*'], target = project) {
  const made = await createKey(service, target.key, { name: 'known', scope });
  assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));
  return made;
}

const revokeBehindTheProcess = (id: string) => service.db.query(`UPDATE api_keys SET status = 'revoked' WHERE id = $1`, [id]);

test('a known key is answered without a lookup of its own, on the pool, inline and on the gateway', async (t) => {
  if (!lookups.available) return t.skip('this PostgreSQL has no pg_stat_statements');
  const { key } = await knownKey();
  const before = await lookups.count();
  assertSuccess(await service.request('GET', '/v1/key', { key }));
  assertSuccess(await service.request('GET', '/v1/key/current', { key }));
  assertSuccess(await service.request('POST', '/v1/key', { key, body: { name: 'made by a known key', scope: ['key:read'] } }), 201);
  assertGatewayNotFound(await service.request('GET', '/v1/nothing-here', { key }));
  assert.equal(await lookups.count(), before, 'authentication queries run for a known key');
});

// Each answer a call can get, made with a known key that was revoked since: the refusal instead.
const CALLS: Array<{ what: string; method: string; path: string; options?: RequestOptions; scope?: string[] }> = [
  { what: 'an inline read (GET /v1/key/current)', method: 'GET', path: '/v1/key/current' },
  { what: 'a read on the pool (GET /v1/key)', method: 'GET', path: '/v1/key' },
  { what: 'a read that finds nothing (GET /v1/key/<unknown id>)', method: 'GET', path: '/v1/key/papi_00000000000000000000000000' },
  { what: 'a change (POST /v1/key)', method: 'POST', path: '/v1/key', options: { body: { name: 'n', scope: ['key:read'] } } },
  { what: 'a change that fails validation (POST /v1/key without a name)', method: 'POST', path: '/v1/key', options: { body: { scope: ['key:read'] } } },
  { what: 'a body that is not JSON', method: 'POST', path: '/v1/key', options: { body: Buffer.from('{not json') } },
  { what: 'an unknown path', method: 'GET', path: '/v1/nothing-here' },
  { what: 'a method the path does not offer', method: 'PATCH', path: '/v1/key' },
  { what: 'a missing scope', method: 'POST', path: '/v1/app/create', scope: ['key:read'], options: { body: { name: 'a' } } },
  { what: 'a reserved endpoint', method: 'GET', path: '/v1/run-usage/summary' },
  { what: 'the event stream', method: 'GET', path: '/v1/event/stream' },
];

for (const call of CALLS) {
  test(`a known key revoked behind the process is refused on its very next call: ${call.what}`, async () => {
    const made = await knownKey(call.scope);
    await revokeBehindTheProcess(made.id);
    const options = { ...call.options, key: made.key };
    assertError(await service.request(call.method, call.path, options), 403, MESSAGES.refused, 'first call');
    // Forgotten by then: the next call is looked up, and refused alike.
    assertError(await service.request(call.method, call.path, options), 403, MESSAGES.refused, 'second call');
  });
}

test('a known key whose project the workspace disables is refused on its very next call', async () => {
  const other = await service.createProject('to disable');
  const made = await knownKey(['*'], other);
  await disableProject(service.services, WORKSPACE, other.projectId);
  assertError(await service.request('GET', '/v1/key', { key: made.key }), 403, MESSAGES.refused);
  assertError(await service.request('POST', '/v1/app/create', { key: other.key, body: { name: 'a' } }), 403, MESSAGES.refused);
});

test('a known key whose consumer the workspace disables is refused on its very next call', async () => {
  const other = await service.createProject('consumer to disable');
  const made = await knownKey(['*'], other);
  await disableConsumer(service.services, WORKSPACE, other.consumerId);
  assertError(await service.request('GET', '/v1/app/list', { key: made.key }), 403, MESSAGES.refused);
});

test('GET /v1/key/current from memory answers the very bytes the key object is everywhere else', async () => {
  // From memory the key is what the gateway remembers with what can change read now
  // (sql/queries/key_caller.sql): the same bytes as the key read whole, names JSON escapes too.
  for (const body of [
    { name: 'plain', scope: ['key:read'] },
    { name: 'quote " backslash \\ slash / tab \t newline \n bell \u0007 é 漢字 😀', scope: ['*'], expires_at: Math.floor(Date.now() / 1000) + 3600 },
  ]) {
    const made = await createKey(service, project.key, body);
    const first = await service.request('GET', '/v1/key/current', { key: made.key });
    assertSuccess(first);
    // last_used_at, written after the first call, settles before the two answers are compared.
    await waitFor('last_used_at written', async () => (await service.db.query('SELECT last_used_at FROM api_keys WHERE id = $1', [made.id])).rows[0].last_used_at ?? undefined);
    // The caller's own key shows this very call as its last use (domain/keys.ts asSeenBy): the
    // current second. A pair is compared only if its two answers came within one second (a CI
    // run's pair straddled one: ...710, then ...711).
    const second = () => Math.floor(Date.now() / 1000);
    for (let attempt = 1; ; attempt += 1) {
      const started = second();
      const fromMemory = await service.request('GET', '/v1/key/current', { key: made.key });
      const byId = await service.request('GET', `/v1/key/${made.id}`, { key: made.key });
      if (second() !== started && attempt < 3) continue;
      assertSuccess(fromMemory);
      assert.equal(fromMemory.text, byId.text);
      assert.equal(fromMemory.body.response.name, body.name);
      break;
    }
  }
});

/** A key row written by SQL in a transaction of the caller's, as a key creation writes it. */
async function insertKey(client: pg.Pool | pg.Client, target: TestProject): Promise<string> {
  const secret = newSecret(target.projectId);
  await client.query(
    `INSERT INTO api_keys (id, project_id, created_by, name, secret_hash, key_preview, scope) VALUES ($1, $2, $3, 'raced', $4, $5, '{*}')`,
    [`papi_${randomBytes(10).toString('hex')}`, target.projectId, target.consumerId, hashSecret(secret), previewOf(secret)],
  );
  return secret;
}

test('a key created while the workspace disables its project or consumer is refused once both commit', async () => {
  for (const [what, disable] of [
    ['project', (target: TestProject) => disableProject(service.services, WORKSPACE, target.projectId)],
    ['consumer', (target: TestProject) => disableConsumer(service.services, WORKSPACE, target.consumerId)],
  ] as const) {
    const target = await service.createProject(`raced ${what}`);
    const creating = new pg.Client({ connectionString: service.databaseUrl });
    await creating.connect();
    try {
      await creating.query('BEGIN');
      const secret = await insertKey(creating, target);
      // The disable runs while the key's insert is not committed; it must not miss the key.
      const disabling = disable(target);
      await sleep(300);
      await creating.query('COMMIT');
      await disabling;
      assertError(await service.request('GET', '/v1/key/current', { key: secret }), 403, MESSAGES.refused, what);
    } finally {
      await creating.end();
    }
  }
});

test('a key written for a project or consumer already disabled never authenticates', async () => {
  const byProject = await service.createProject('disabled before its key');
  await disableProject(service.services, WORKSPACE, byProject.projectId);
  const byConsumer = await service.createProject('consumer disabled before its key');
  await disableConsumer(service.services, WORKSPACE, byConsumer.consumerId);
  for (const target of [byProject, byConsumer]) {
    const secret = await insertKey(service.db, target);
    assertError(await service.request('GET', '/v1/key/current', { key: secret }), 403, MESSAGES.refused);
  }
});

test('a known key whose expires_at passes answers 401 from that moment, on every kind of call', async () => {
  for (const call of CALLS.filter((c) => !c.scope)) {
    const made = await knownKey();
    await service.db.query(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, [made.id]);
    assertError(await service.request(call.method, call.path, { ...call.options, key: made.key }), 401, MESSAGES.expired, call.what);
  }
});

test('a change by a known key refused by its check leaves nothing behind', async () => {
  const made = await knownKey();
  await revokeBehindTheProcess(made.id);
  const { rows: [before] } = await service.db.query('SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1', [project.projectId]);
  assertError(await service.request('POST', '/v1/key', { key: made.key, body: { name: 'never', scope: ['key:read'] } }), 403, MESSAGES.refused);
  const { rows: [afterwards] } = await service.db.query('SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1', [project.projectId]);
  assert.equal(afterwards.n, before.n);
});

test('a known, usable key keeps the order of checks: scope, then JSON, then validation', async () => {
  const reader = await knownKey(['key:read']);
  assertError(await service.request('POST', '/v1/key', { key: reader.key, body: { name: 'n' } }), 403, MESSAGES.missingScope('key:write'));
  const writer = await knownKey(['key:*']);
  assertError(await service.request('POST', '/v1/key', { key: writer.key, body: Buffer.from('[') }), 400, MESSAGES.invalidJson);
  assertError(await service.request('POST', '/v1/key', { key: writer.key, body: { scope: ['key:read'] } }), 422, 'name is required.');
  // GET /v1/key/current reads the stored key for a known one: its last use shows once written.
  const current = assertSuccess(await service.request('GET', '/v1/key/current', { key: writer.key }));
  assert.equal(current.id, writer.id);
});

test('KEY_MEMORY_SIZE bounds the keys remembered; 0 looks every call up', async (t) => {
  if (!lookups.available) return t.skip('this PostgreSQL has no pg_stat_statements');
  for (const [size, expected] of [[0, 6], [1, 5], [2, 1]] as const) {
    const small = await TestService.start({ env: { KEY_MEMORY_SIZE: String(size) } });
    const counter = await LookupCounter.open(small.databaseUrl);
    try {
      const mine = await small.createProject();
      const second = await createKey(small, mine.key, { name: 'second', scope: ['*'] });
      const beforeCalls = await counter.count();
      // Alternating two keys: a memory of one forgets each before its next call.
      for (let i = 0; i < 3; i++) {
        assertSuccess(await small.request('GET', '/v1/key', { key: mine.key }));
        assertSuccess(await small.request('GET', '/v1/key', { key: second.key }));
      }
      assert.equal(await counter.count() - beforeCalls, expected, `lookups with KEY_MEMORY_SIZE=${size}`);
    } finally {
      await counter.close();
      await small.stop();
    }
  }
});
