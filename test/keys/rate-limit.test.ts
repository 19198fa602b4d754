// Request limits (decisions.md, "Request limits"): a key's rate_limit as created, shown, defaulted
// by its plan and copied by a roll; the 422 and 403 refusals; every request of a limited key
// counted whatever its answer, 429 past the limit with Retry-After and the RateLimit headers; and
// the leases two web processes take from one window, which keep the bound without refusing a client under it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { capOf, leaseOf, RequestLimits, windowOf } from '../../gateway/request-limits.ts';
import type { Queryable } from '../../lib/pool.ts';
import { assertError, assertSuccess, MESSAGES } from '../support/assertions.ts';
import { workspaceFails, workspaceOk } from '../support/cli.ts';
import { createKey } from '../support/keys.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { sleep } from '../support/wait.ts';

const DAY = 86_400;
const INVALID = 'rate_limit must be null or {"limit": 1..1000000, "window_s": 1..86400}.';
const LOOSER = 'Cannot create a key with a looser rate limit than the calling key.';
const LIMITED = 'Too many requests for this API key. Retry later.';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start();
  project = await service.createProject();
});
after(() => service.stop());

const newKey = (body: Record<string, unknown>, caller = project.key) => createKey(service, caller, { name: 'limited', ...body });
const current = (key: string) => service.request('GET', '/v1/key/current', { key });

/** A limit over a day: no test here runs into the window's end (the chance is a test's length in a day). */
const daily = (limit: number) => ({ limit, window_s: DAY });

test('POST /v1/key takes rate_limit; the key object shows it everywhere it is read', async () => {
  const made = await newKey({ rate_limit: { limit: 50, window_s: 60 } });
  assert.deepEqual(made.object.rate_limit, { limit: 50, window_s: 60 });
  const read = assertSuccess(await service.request('GET', `/v1/key/${made.id}`, { key: project.key }));
  assert.deepEqual(read.rate_limit, { limit: 50, window_s: 60 });
  const listed = assertSuccess(await service.request('GET', '/v1/key?limit=100', { key: project.key }));
  assert.deepEqual(listed.data.find((k: { id: string }) => k.id === made.id).rate_limit, { limit: 50, window_s: 60 });
  assert.deepEqual(assertSuccess(await current(made.key)).rate_limit, { limit: 50, window_s: 60 });
  // A key with none shows null.
  assert.equal(assertSuccess(await current(project.key)).rate_limit, null);
});

test('every invalid rate_limit: 422 with the one message, nothing made', async () => {
  const invalid: unknown[] = [
    0, 5, 'none', true, [], [5, 60], {}, { limit: 5 }, { window_s: 60 },
    { limit: 0, window_s: 60 }, { limit: 1_000_001, window_s: 60 }, { limit: -1, window_s: 60 }, { limit: 1.5, window_s: 60 },
    { limit: 5, window_s: 0 }, { limit: 5, window_s: 86_401 }, { limit: 5, window_s: 1.5 }, { limit: '5', window_s: 60 },
    { limit: 5, window_s: 60, burst: 2 }, { limit: null, window_s: 60 },
  ];
  const before = (await service.db.query('SELECT count(*)::int AS n FROM api_keys')).rows[0].n;
  for (const rateLimit of invalid) {
    assertError(await service.request('POST', '/v1/key', { key: project.key, body: { name: 'x', rate_limit: rateLimit } }), 422, INVALID, JSON.stringify(rateLimit));
  }
  assert.equal((await service.db.query('SELECT count(*)::int AS n FROM api_keys')).rows[0].n, before);
  // The bounds themselves are taken.
  assert.deepEqual((await newKey({ rate_limit: { limit: 1, window_s: 1 } })).object.rate_limit, { limit: 1, window_s: 1 });
  assert.deepEqual((await newKey({ rate_limit: { limit: 1_000_000, window_s: 86_400 } })).object.rate_limit, { limit: 1_000_000, window_s: 86_400 });
});

test('absent or null: the plan default, null unless `workspace plan set --rate-limit N/S` set one; none clears it', async () => {
  const p = await service.createProject('Plan default');
  assert.equal((await createKey(service, p.key, { name: 'a' })).object.rate_limit, null);
  const set = await workspaceOk(service, ['plan', 'set', p.projectId, '--rate-limit', '120/60']);
  assert.deepEqual(set, { project: { id: p.projectId }, plan: { custom_apps: true, app_limit: 100, rate_limit: { limit: 120, window_s: 60 } } });
  assert.deepEqual((await createKey(service, p.key, { name: 'b' })).object.rate_limit, { limit: 120, window_s: 60 });
  assert.deepEqual((await createKey(service, p.key, { name: 'c', rate_limit: null })).object.rate_limit, { limit: 120, window_s: 60 });
  // An explicit limit of the key's own wins.
  assert.deepEqual((await createKey(service, p.key, { name: 'd', rate_limit: { limit: 7, window_s: 1 } })).object.rate_limit, { limit: 7, window_s: 1 });
  // The workspace's own keys take the default too.
  const made = await workspaceOk(service, ['key', 'create', '--project', p.projectId]);
  assert.deepEqual(made.key.rate_limit, { limit: 120, window_s: 60 });
  // Keys made before keep theirs: a key's limit never changes.
  const cleared = await workspaceOk(service, ['plan', 'set', p.projectId, '--rate-limit', 'none']);
  assert.equal(cleared.plan.rate_limit, null);
  assert.equal((await createKey(service, p.key, { name: 'e' })).object.rate_limit, null);
  assert.deepEqual(assertSuccess(await current(made.key.key)).rate_limit, { limit: 120, window_s: 60 });
  // plan.changed records it.
  await service.waitForJobsDrained();
  const { rows } = await service.db.query(
    `SELECT e.details FROM events e JOIN event_types t ON t.id = e.type_id WHERE e.project_id = $1 AND t.name = 'plan.changed' ORDER BY e.sequence`, [p.projectId]);
  assert.deepEqual(rows.map((r) => r.details), [
    { changes: { rate_limit: { from: null, to: { limit: 120, window_s: 60 } } } },
    { changes: { rate_limit: { from: { limit: 120, window_s: 60 }, to: null } } },
  ]);
});

test('plan set --rate-limit takes N/S within the bounds or none; anything else is a usage error (exit 2)', async () => {
  for (const value of ['0/60', '1000001/60', '5/0', '5/86401', '5', '5/', '/60', 'x/y', '5/60/1', '+5/60', 'None']) {
    const outcome = await workspaceFails(service, ['plan', 'set', project.projectId, '--rate-limit', value]);
    assert.equal(outcome.code, 2, value);
    assert.match(outcome.stderr, /--rate-limit takes N\/S/, value);
  }
});

test('a limited key cannot make a looser key (403), by creation or by roll; as tight or tighter it can', async () => {
  const caller = await newKey({ rate_limit: { limit: 10, window_s: 60 } });
  // None at all: the project's default is none, so an absent or null rate_limit is looser too.
  for (const rateLimit of [undefined, null, { limit: 11, window_s: 60 }, { limit: 10, window_s: 59 }, { limit: 2, window_s: 1 }]) {
    const body = { name: 'looser', ...(rateLimit === undefined ? {} : { rate_limit: rateLimit }) };
    assertError(await service.request('POST', '/v1/key', { key: caller.key, body }), 403, LOOSER, JSON.stringify(rateLimit));
  }
  for (const rateLimit of [{ limit: 10, window_s: 60 }, { limit: 5, window_s: 60 }, { limit: 10, window_s: 120 }, { limit: 1, window_s: 6 }]) {
    assert.deepEqual((await newKey({ rate_limit: rateLimit }, caller.key)).object.rate_limit, rateLimit);
  }
  // Validation comes first: an invalid value is 422 even for a limited caller.
  assertError(await service.request('POST', '/v1/key', { key: caller.key, body: { name: 'x', rate_limit: { limit: 0, window_s: 1 } } }), 422, INVALID);
  // Rolling an unlimited key would make an unlimited one.
  const unlimited = await newKey({});
  assertError(await service.request('POST', `/v1/key/${unlimited.id}/roll`, { key: caller.key, body: {} }), 403, LOOSER);
  // An unlimited key makes any.
  assert.equal((await newKey({ rate_limit: null })).object.rate_limit, null);
});

test('a roll copies rate_limit to the new key', async () => {
  const old = await newKey({ rate_limit: { limit: 30, window_s: 10 } });
  const rolled = assertSuccess(await service.request('POST', `/v1/key/${old.id}/roll`, { key: project.key, body: { grace_s: 60 } }), 201);
  assert.deepEqual(rolled.rate_limit, { limit: 30, window_s: 10 });
  const { rows } = await service.db.query('SELECT rate_limit FROM api_keys WHERE id = $1', [rolled.id]);
  assert.deepEqual(rows[0].rate_limit, { limit: 30, window_s: 10 });
  // The key rolling itself keeps its own limit.
  const self = assertSuccess(await service.request('POST', '/v1/key/current/roll', { key: old.key, body: { grace_s: 60 } }), 201);
  assert.deepEqual(self.rate_limit, { limit: 30, window_s: 10 });
});

/** One web process may admit the limit, 1% of it and one more (the bound): past that, refused. */
const admittedBy = (limit: number) => capOf(limit, 1);

test('past the limit: 429 with the exact envelope and Retry-After; the RateLimit headers on every answer', async () => {
  const limited = await newKey({ rate_limit: daily(3) });
  for (let n = 1; n <= admittedBy(3); n++) {
    const remaining = Math.max(0, 3 - n);
    const reply = await current(limited.key);
    assertSuccess(reply);
    assert.equal(reply.headers['ratelimit-policy'], `"key";q=3;w=${DAY}`);
    const match = /^"key";r=(\d+);t=(\d+)$/.exec(String(reply.headers.ratelimit));
    assert.ok(match, `RateLimit: ${reply.headers.ratelimit}`);
    assert.equal(Number(match[1]), remaining);
    assert.ok(Number(match[2]) >= 1 && Number(match[2]) <= DAY);
  }
  const refused = await current(limited.key);
  assertError(refused, 429, LIMITED);
  assert.match(String(refused.headers['retry-after']), /^[1-9][0-9]*$/);
  const t = Number(/;t=(\d+)$/.exec(String(refused.headers.ratelimit))![1]);
  assert.equal(Number(refused.headers['retry-after']), t, 'Retry-After is the seconds until the window starts afresh');
  assert.equal(refused.headers['ratelimit-policy'], `"key";q=3;w=${DAY}`);
  assert.match(String(refused.headers.ratelimit), /^"key";r=0;t=\d+$/);
  // Another route, a write: the same.
  assertError(await service.request('POST', '/v1/key', { key: limited.key, body: { name: 'x' } }), 429, LIMITED);
  // An unlimited key's answers carry none of the headers.
  const free = await current(project.key);
  assert.equal(free.headers['ratelimit-policy'], undefined);
  assert.equal(free.headers.ratelimit, undefined);
});

test('every request the key authenticates counts, whatever it is answered: 404, 422, 403 for scope', async () => {
  const limited = await newKey({ scope: ['key:read'], rate_limit: daily(4) });
  const unknownPath = await service.request('GET', '/v1/nothing-here', { key: limited.key });
  assert.deepEqual(unknownPath.body, { code: '404', title: 'Not Found', response: MESSAGES.gatewayNotFound });
  assertError(await service.request('GET', '/v1/key?limit=0', { key: limited.key }), 422, 'limit must be an integer from 1 to 100.');
  assertError(await service.request('GET', '/v1/app/list', { key: limited.key }), 403, MESSAGES.missingScope('app:read'));
  for (let n = 3; n < admittedBy(4); n++) assertSuccess(await current(limited.key));
  assertError(await current(limited.key), 429, LIMITED);
  // Unauthenticated requests count for no key: the limited key's refusal stands, a wrong key is 403.
  assertError(await current(`${limited.key.slice(0, -1)}x`), 403, MESSAGES.refused);
});

test('a revoked key known from memory is refused 403, not 429: the key comes before its limit', async () => {
  const limited = await newKey({ rate_limit: daily(1) });
  for (let n = 0; n < admittedBy(1); n++) assertSuccess(await current(limited.key));
  assertError(await current(limited.key), 429, LIMITED);
  assertSuccess(await service.request('DELETE', `/v1/key/${limited.id}`, { key: project.key }));
  assertError(await current(limited.key), 403, MESSAGES.refused);
});

test('a client that waits Retry-After is admitted in the next window', async () => {
  const limited = await newKey({ rate_limit: { limit: 2, window_s: 2 } });
  let refused;
  for (let i = 0; i < 10 && !refused; i++) {
    const reply = await current(limited.key);
    if (reply.status === 429) refused = reply;
    else assertSuccess(reply);
  }
  assert.ok(refused, 'refused within 10 requests');
  const wait = Number(refused.headers['retry-after']);
  assert.ok(wait >= 1 && wait <= 2, `Retry-After ${wait}`);
  await sleep(wait * 1000);
  assertSuccess(await current(limited.key), 200, 'after Retry-After');
});

// ---------------------------------------------------------------------------------------------
// The count shared by processes: RequestLimits instances over the test's database, one per
// process, as the gateway's.

/** A database that counts the leases it is asked for. */
function counting(db: Queryable): Queryable & { leases: number } {
  const counted = {
    leases: 0,
    query(...args: Parameters<Queryable['query']>) {
      counted.leases++;
      return (db.query as (...a: unknown[]) => ReturnType<Queryable['query']>)(...args);
    },
  };
  return counted as unknown as Queryable & { leases: number };
}

function admitOne(limits: RequestLimits, keyId: string, limit: { limit: number; window_s: number }, nowMs?: number): Promise<boolean> {
  return new Promise((resolve, reject) => limits.admit(keyId, limit, (admitted) => resolve(admitted), reject, nowMs));
}

/** A key id of the shape the service makes, and a time in the middle of its window, far from either end. */
function keyAndTime(windowS: number): { keyId: string; nowMs: number } {
  const keyId = `papi_${Math.random().toString(16).slice(2).padEnd(20, '0').slice(0, 20)}`;
  const { start } = windowOf(keyId, { limit: 1, window_s: windowS }, Date.now());
  return { keyId, nowMs: (start + windowS / 2) * 1000 };
}

test('the lease and cap arithmetic: the bound is the limit + 1% + 1 per process, a lease at most 1 + 1%/processes', () => {
  assert.equal(capOf(1000, 2), 1012);
  assert.equal(leaseOf(1000, 2), 6);
  assert.equal(capOf(10, 3), 13);
  assert.equal(leaseOf(10, 3), 1);
  assert.equal(leaseOf(1_000_000, 1), 10_001);
  // With one more process than counted, the others' unused leases stay within the slack.
  for (const limit of [1, 10, 99, 100, 1000, 12_345, 1_000_000]) {
    for (const processes of [1, 2, 3, 5, 16]) {
      assert.ok(processes * leaseOf(limit, processes) <= capOf(limit, processes) - limit, `${limit}/${processes}`);
    }
  }
});

test('two processes sharing a window: a client under the limit, whichever process each request reaches, is never refused', async () => {
  const limit = { limit: 500, window_s: DAY };
  const { keyId, nowMs } = keyAndTime(DAY);
  // Three processes where two are counted: one joined and is not yet seen by the others.
  const processes = [0, 1, 2].map(() => new RequestLimits(service.db, () => 2));
  let refused = 0;
  for (let i = 0; i < limit.limit; i++) {
    if (!await admitOne(processes[Math.floor(Math.random() * processes.length)]!, keyId, limit, nowMs)) refused++;
  }
  assert.equal(refused, 0, `${refused} of the first ${limit.limit} requests refused`);
});

test('processes racing for one window: the admitted requests stay within the limit + 1% + 1 per process', async () => {
  const limit = { limit: 1000, window_s: DAY };
  const { keyId, nowMs } = keyAndTime(DAY);
  const processes = [0, 1].map(() => new RequestLimits(service.db, () => 2));
  const outcomes = await Promise.all(Array.from({ length: 3000 }, (_, i) => admitOne(processes[i % 2]!, keyId, limit, nowMs)));
  const admitted = outcomes.filter(Boolean).length;
  assert.ok(admitted <= capOf(1000, 2), `${admitted} admitted, more than ${capOf(1000, 2)}`);
  assert.ok(admitted >= 1000, `${admitted} admitted: fewer than the limit`);
  const { rows } = await service.db.query('SELECT granted FROM request_windows WHERE key_id = $1', [keyId]);
  assert.ok(rows[0].granted <= capOf(1000, 2));
});

test('most requests of a limited key cost no round trip: a lease per thousand here', async () => {
  const limit = { limit: 100_000, window_s: DAY };
  const { keyId, nowMs } = keyAndTime(DAY);
  const db = counting(service.db);
  const limits = new RequestLimits(db, () => 1);
  for (let i = 0; i < 5000; i++) assert.ok(await admitOne(limits, keyId, limit, nowMs));
  // A lease of 1,001 topped up at half: about one lease per 500 requests.
  assert.ok(db.leases <= 12, `${db.leases} leases for 5000 requests`);
});

test('a spent window refuses without asking the database again until the next window', async () => {
  const limit = { limit: 5, window_s: 10 };
  const { keyId, nowMs } = keyAndTime(10);
  const db = counting(service.db);
  const limits = new RequestLimits(db, () => 1);
  const outcomes = [];
  for (let i = 0; i < 20; i++) outcomes.push(await admitOne(limits, keyId, limit, nowMs));
  assert.equal(outcomes.filter(Boolean).length, capOf(5, 1));
  const leases = db.leases;
  for (let i = 0; i < 20; i++) assert.equal(await admitOne(limits, keyId, limit, nowMs), false);
  assert.equal(db.leases, leases, 'no lease asked for once the window is spent');
  assert.equal(await admitOne(limits, keyId, limit, nowMs + 10_000), true, 'the next window');
});
