// Step 4 of decisions.md and api.md section 5: 401 for no usable header or an expired key; 403,
// identical in every byte of the body, for an unknown, revoked or disabled key or one whose
// project or consumer is no longer active.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { disableConsumer, disableProject } from '../../domain/projects.ts';
import { MESSAGES } from '../support/assertions.ts';
import { createKey } from '../support/keys.ts';
import { TestService, type Reply, type TestProject } from '../support/service.ts';
import { nowSeconds } from '../support/wait.ts';
import { assertError, assertSuccess } from './helpers.ts';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start({ jobWorkers: false });
  project = await service.createProject();
});
after(() => service.stop());

function assert403(reply: Reply, what: string): void {
  assertError(reply, 403, MESSAGES.refused, what);
}

test('a valid key authenticates', async () => {
  const reply = await service.request('GET', '/v1/key/current', { key: project.key });
  assertSuccess(reply, 200);
  assert.equal(reply.body.response.id, project.keyId);
});

test('no Authorization header, or one not starting with "Bearer ": 401', async () => {
  assertError(await service.request('GET', '/v1/key/current'), 401, MESSAGES.noKey, 'absent');
  const values = [
    '',
    `Basic ${Buffer.from('user:pass').toString('base64')}`,
    `Token ${project.key}`,
    project.key,
    `Bearer${project.key}`,
    `Bearer\t${project.key}`,
    'Bearer',
  ];
  for (const value of values) {
    const reply = await service.request('GET', '/v1/key/current', { headers: { authorization: value } });
    assertError(reply, 401, MESSAGES.noKey, JSON.stringify(value.replace(project.key, '<key>')));
  }
});

test('an unknown key: 403', async () => {
  const unknown = [
    `sk-project-${randomBytes(32).toString('base64url')}`,
    project.key.slice(0, -1) + (project.key.endsWith('a') ? 'b' : 'a'),
    `${project.key}x`,
    'not-even-a-key',
  ];
  for (const key of unknown) assert403(await service.request('GET', '/v1/key/current', { key }), `unknown key ${key.length} chars`);
});

test('a revoked key: 403, the same body as an unknown key', async () => {
  const other = await createKey(service, project.key, { name: 'to revoke' });
  assertSuccess(await service.request('GET', '/v1/key/current', { key: other.key }), 200, 'before revoking');
  const revoke = await service.request('DELETE', `/v1/key/${other.id}`, { key: project.key });
  assertSuccess(revoke, 200, 'revoking');

  const revoked = await service.request('GET', '/v1/key/current', { key: other.key });
  const unknown = await service.request('GET', '/v1/key/current', { key: `sk-project-${randomBytes(32).toString('base64url')}` });
  assert403(revoked, 'revoked');
  assert403(unknown, 'unknown');
  assert.equal(revoked.text, unknown.text, 'identical bodies');
  // It stays refused on every path, including ones it never reached.
  assert403(await service.request('POST', '/v1/key', { key: other.key, body: { name: 'x' } }), 'revoked, POST');
  assert403(await service.request('GET', '/v1/nothing', { key: other.key }), 'revoked, unknown path');
});

test('a key whose project is disabled: 403, the same body as an unknown key', async () => {
  const doomed = await service.createProject('to disable');
  assertSuccess(await service.request('GET', '/v1/key', { key: doomed.key }), 200, 'before disabling');
  await disableProject(service.services, { origin: 'workspace', ip: '127.0.0.1' }, doomed.projectId);

  const reply = await service.request('GET', '/v1/key', { key: doomed.key });
  const unknown = await service.request('GET', '/v1/key', { key: 'sk-project-neverissued' });
  assert403(reply, 'disabled project');
  assert.equal(reply.text, unknown.text, 'identical bodies');
  const { rows } = await service.db.query('SELECT status FROM projects WHERE id = $1', [doomed.projectId]);
  assert.equal(rows[0].status, 'disabled');
});

test('a second key of a disabled project (status set directly): 403', async () => {
  const doomed = await service.createProject('disabled by SQL');
  const second = await createKey(service, doomed.key, { name: 'second', scope: ['key:read'] });
  assertSuccess(await service.request('GET', '/v1/key', { key: second.key }), 200, 'before disabling');
  await service.db.query("UPDATE projects SET status = 'disabled' WHERE id = $1", [doomed.projectId]);
  assert403(await service.request('GET', '/v1/key', { key: second.key }), 'second key');
  assert403(await service.request('GET', '/v1/key', { key: doomed.key }), 'first key');
});

test('a key whose consumer is disabled: 403, the same body as an unknown key', async () => {
  const owner = await service.createProject('consumer to disable');
  assertSuccess(await service.request('GET', '/v1/key/current', { key: owner.key }), 200, 'before disabling');
  await disableConsumer(service.services, { origin: 'workspace', ip: '127.0.0.1' }, owner.consumerId);

  const reply = await service.request('GET', '/v1/key/current', { key: owner.key });
  const unknown = await service.request('GET', '/v1/key/current', { key: 'sk-project-neverissued' });
  assert403(reply, 'disabled consumer');
  assert.equal(reply.text, unknown.text, 'identical bodies');
  // The project itself is still active: it is the consumer that stops the key.
  const { rows } = await service.db.query('SELECT status FROM projects WHERE id = $1', [owner.projectId]);
  assert.equal(rows[0].status, 'active');
});

test('an expired key: 401 `The API key has expired.` from the moment expires_at passes', async () => {
  const expiring = await createKey(service, project.key, { name: 'expiring', expires_at: nowSeconds() + 3600 });
  assertSuccess(await service.request('GET', '/v1/key/current', { key: expiring.key }), 200, 'before expiry');

  // Back-dated: no background job has marked it, yet it must already be refused.
  await service.db.query("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", [expiring.id]);
  const { rows } = await service.db.query('SELECT status FROM api_keys WHERE id = $1', [expiring.id]);
  assert.equal(rows[0].status, 'activated', 'the stored status is still activated');

  assertError(await service.request('GET', '/v1/key/current', { key: expiring.key }), 401, MESSAGES.expired, 'GET');
  assertError(await service.request('POST', '/v1/key', { key: expiring.key, body: { name: 'x' } }), 401, MESSAGES.expired, 'POST');
  assertError(await service.request('GET', '/v1/no/such/path', { key: expiring.key }), 401, MESSAGES.expired, 'unknown path');
});

test('a key a background job has already marked expired: 401 `The API key has expired.`', async () => {
  const expiring = await createKey(service, project.key, { name: 'marked', expires_at: nowSeconds() + 3600 });
  await service.db.query(
    "UPDATE api_keys SET expires_at = now() - interval '1 hour', status = 'expired' WHERE id = $1", [expiring.id]);
  assertError(await service.request('GET', '/v1/key/current', { key: expiring.key }), 401, MESSAGES.expired);
});

test('a key with an expiry still in the future works', async () => {
  const later = await createKey(service, project.key, { name: 'later', expires_at: nowSeconds() + 3600 });
  await service.db.query("UPDATE api_keys SET expires_at = now() + interval '1 minute' WHERE id = $1", [later.id]);
  const reply = await service.request('GET', '/v1/key/current', { key: later.key });
  assertSuccess(reply, 200);
  assert.equal(reply.body.response.id, later.id);
});

test('a revoked key that had also expired is refused as revoked (403)', async () => {
  const both = await createKey(service, project.key, { name: 'both', expires_at: nowSeconds() + 3600 });
  assertSuccess(await service.request('DELETE', `/v1/key/${both.id}`, { key: project.key }), 200);
  await service.db.query("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", [both.id]);
  assert403(await service.request('GET', '/v1/key/current', { key: both.key }), 'revoked and past expiry');
});

test('every way a key is refused answers no sooner than KEY_REFUSAL_FLOOR_MS after the request arrived; an accepted key does not wait', async () => {
  const FLOOR_MS = 400;
  const own = await TestService.start({ jobWorkers: false, env: { KEY_REFUSAL_FLOOR_MS: String(FLOOR_MS), AUTH_REFUSALS_PER_MINUTE: '0' } });
  try {
    const p = await own.createProject('Floor');
    const timed = async (method: string, path: string, key: string, body?: unknown) => {
      const started = performance.now();
      const reply = await own.request(method, path, { key, ...(body === undefined ? {} : { body }) });
      return { reply, ms: performance.now() - started };
    };
    // Known to the process, then revoked behind it: refused by the check riding in a read on the
    // gateway's thread, and in a change's BEGIN on a pool thread.
    const known = await Promise.all(['read', 'change'].map((name) => createKey(own, p.key, { name, scope: ['key:read', 'key:write'] })));
    for (const k of known) assertSuccess(await own.request('GET', '/v1/key/current', { key: k.key }), 200);
    await own.db.query(`UPDATE api_keys SET status = 'revoked' WHERE id = ANY($1)`, [known.map((k) => k.id)]);
    const refusals = [
      ['unknown (looked up)', await timed('GET', '/v1/key/current', `sk-project-${'A'.repeat(43)}`)],
      ['of a wrong checksum (no lookup)', await timed('GET', '/v1/key', `sk-project-${'A'.repeat(49)}`)],
      ['known, revoked since, on a read', await timed('GET', '/v1/key/current', known[0]!.key)],
      ['known, revoked since, on a change', await timed('POST', '/v1/key', known[1]!.key, { name: 'never made' })],
    ] as const;
    for (const [what, { reply, ms }] of refusals) {
      assertError(reply, 403, MESSAGES.refused, what);
      assert.ok(ms >= FLOOR_MS, `${what}: answered after ${ms.toFixed(1)} ms, before the floor`);
    }
    const accepted = await timed('GET', '/v1/key/current', p.key);
    assertSuccess(accepted.reply, 200);
    assert.ok(accepted.ms < FLOOR_MS, `an accepted key waited ${accepted.ms.toFixed(1)} ms`);
  } finally {
    await own.stop();
  }
});
