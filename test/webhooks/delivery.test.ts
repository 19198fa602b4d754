// Delivery (decisions.md, "Webhooks"): every event written after an endpoint's creation that its
// types match is POSTed to it, signed per Standard Webhooks and verified here as a receiver does;
// failures are retried on the schedule (1 s steps here), Retry-After honoured, 410 and 5 days of
// failures disable, redirects are not followed, an answer is read to 64 kB at most, a slow
// endpoint delays no other, and a replay sends again what an outage lost.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { generate } from 'selfsigned';
import { verifyWebhook } from '../../client/index.ts';
import { assertSuccess } from '../support/assertions.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { nowSeconds, sleep } from '../support/wait.ts';
import { createEndpoint, deliveryLog, eventOf, makeEvent, Receiver, verified, waitForAttempts } from './helpers.ts';

/**
 * An attempt's bound: the slow endpoint's first attempt must outlast the making of 20 changes, which
 * took up to 5 s on a loaded 2-core machine with Citus (each change several servers' turn).
 */
const TIMEOUT_MS = 6000;
let service: TestService;
const receivers: Receiver[] = [];

before(async () => {
  service = await TestService.start({
    env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE_S: '1,1,1', WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) },
  });
});
after(async () => {
  for (const receiver of receivers) await receiver.stop();
  await service.stop();
});

async function receiver(): Promise<Receiver> {
  const made = await Receiver.start();
  receivers.push(made);
  return made;
}

/**
 * A project with one endpoint at a new receiver, made once the project's own first events are
 * written: an event written after the endpoint's creation is sent, whenever its change was made.
 */
async function setUp(name: string, body: Record<string, unknown> = {}): Promise<{ project: TestProject; receiver: Receiver; endpoint: any }> {
  const project = await service.createProject(name);
  await service.waitForJobsDrained();
  const at = await receiver();
  const endpoint = await createEndpoint(service, project.key, { url: at.url(), ...body });
  return { project, receiver: at, endpoint };
}

test('an event is POSTed as {type, timestamp, data}, data the event as the API answers it, verified by standardwebhooks and by the client', async () => {
  const { project, receiver: at, endpoint } = await setUp('Delivered');
  const keyId = await makeEvent(service, project.key);
  const event = await eventOf(service, keyId, 'key.created');
  await at.waitFor('the key.created delivery', () => at.of(event.id).length > 0);
  const [delivery] = at.of(event.id);
  assert.equal(delivery!.path, '/hook');
  assert.equal(delivery!.headers['content-type'], 'application/json');
  assert.equal(delivery!.headers['webhook-id'], event.id);
  assert.ok(Math.abs(Number(delivery!.headers['webhook-timestamp']) - nowSeconds()) <= 5);
  assert.match(delivery!.headers['webhook-signature']!, /^v1,[A-Za-z0-9+/]{43}=$/, 'one signature');
  const payload = verified(endpoint.secret, delivery!);
  assert.deepEqual(Object.keys(payload), ['type', 'timestamp', 'data']);
  const stored = assertSuccess(await service.request('GET', `/v1/event/${event.id}`, { key: project.key }));
  assert.deepEqual(payload, { type: 'key.created', timestamp: new Date(stored.created_at * 1000).toISOString().replace('.000Z', 'Z'), data: stored });
  assert.deepEqual(await verifyWebhook(endpoint.secret, delivery!.headers, delivery!.body), payload, 'the typed client verifies it too');
  await assert.rejects(verifyWebhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`, delivery!.headers, delivery!.body), /No signature matches/);
  await assert.rejects(verifyWebhook(endpoint.secret, delivery!.headers, delivery!.body.replace('key.created', 'key.revoked')), /No signature matches/);

  const [attempt] = await waitForAttempts(service, endpoint.id, 1, `event_id = '${event.id}'`);
  assert.equal(attempt.status_code, 204);
  const log = await deliveryLog(service, project.key, endpoint.id);
  const entry = log.find((row: any) => row.event === event.id);
  assert.deepEqual(Object.keys(entry), ['id', 'object', 'event', 'sequence', 'attempt', 'status_code', 'error', 'duration_ms', 'created_at']);
  assert.match(entry.id, /^whda_[0-9a-f]{20}$/);
  assert.deepEqual({ ...entry, id: 'x', duration_ms: 0, created_at: 0 }, {
    id: 'x', object: 'webhook_delivery', event: event.id, sequence: event.sequence, attempt: 1, status_code: 204, error: null, duration_ms: 0, created_at: 0,
  });
});

test('only events written after the creation, and only the types asked for, are sent', async () => {
  const project = await service.createProject('Types and time');
  const before = await makeEvent(service, project.key, 'made before any endpoint');
  await service.waitForJobsDrained();
  const all = await receiver();
  const apps = await receiver();
  const everything = await createEndpoint(service, project.key, { url: all.url() });
  await createEndpoint(service, project.key, { url: apps.url(), types: ['key.revoked'] });
  const later = await makeEvent(service, project.key, 'made after');
  assertSuccess(await service.request('DELETE', `/v1/key/${later}`, { key: project.key }));
  const created = await eventOf(service, later, 'key.created');
  const revoked = await eventOf(service, later, 'key.revoked');
  await all.waitFor('both key events', () => all.of(created.id).length > 0 && all.of(revoked.id).length > 0);
  await apps.waitFor('the key.revoked event', () => apps.of(revoked.id).length > 0);
  await sleep(500);
  const earlier = await eventOf(service, before, 'key.created');
  assert.equal(all.of(earlier.id).length, 0, 'an event written before the endpoint existed is not sent');
  assert.deepEqual(apps.received.map((d) => JSON.parse(d.body).type), ['key.revoked'], 'only the types asked for');
  const types = all.received.map((d) => JSON.parse(d.body).type);
  assert.ok(types.includes('webhook.created'), `an endpoint is sent the events of its own changes too: ${types}`);
  assert.equal(all.of(created.id).length, 1);
  void everything;
});

test('after a rotation deliveries carry both signatures, each verifying; once the old secret\'s 24 h are over, only the new one', async () => {
  const { project, receiver: at, endpoint } = await setUp('Rotation');
  const rotated = assertSuccess(await service.request('POST', `/v1/webhook/${endpoint.id}/secret`, { key: project.key }));
  const event = await eventOf(service, await makeEvent(service, project.key), 'key.created');
  await at.waitFor('a delivery after the rotation', () => at.of(event.id).length > 0);
  const [delivery] = at.of(event.id);
  const signatures = delivery!.headers['webhook-signature']!.split(' ');
  assert.equal(signatures.length, 2, 'two signatures, space-separated');
  for (const secret of [rotated.secret, endpoint.secret]) {
    assert.equal(verified(secret, delivery!).data.id, event.id);
    assert.equal((await verifyWebhook(secret, delivery!.headers, delivery!.body)).data.id, event.id);
  }
  await service.db.query("UPDATE webhook_endpoints SET previous_secret_until = now() - interval '1 second' WHERE id = $1", [endpoint.id]);
  const later = await eventOf(service, await makeEvent(service, project.key), 'key.created');
  await at.waitFor('a delivery after the grace', () => at.of(later.id).length > 0);
  const [last] = at.of(later.id);
  assert.equal(last!.headers['webhook-signature']!.split(' ').length, 1);
  assert.equal(verified(rotated.secret, last!).data.id, later.id);
  assert.throws(() => verified(endpoint.secret, last!), /No matching signature/);
});

test('a failed delivery is retried on the schedule with the same id and body, each attempt logged; past the schedule it is given up', async () => {
  const { project, receiver: at, endpoint } = await setUp('Retries', { types: ['key.created'] });
  let calls = 0;
  at.answer = () => (++calls <= 2 ? { status: 500, body: 'not now' } : { status: 200 });
  const event = await eventOf(service, await makeEvent(service, project.key), 'key.created');
  await at.waitFor('three attempts', () => at.of(event.id).length >= 3, 15_000);
  const deliveries = at.of(event.id);
  assert.equal(new Set(deliveries.map((d) => d.body)).size, 1, 'the same body each time');
  for (const [i, d] of deliveries.entries()) {
    assert.equal(verified(endpoint.secret, d).data.id, event.id);
    if (i > 0) assert.ok(d.at - deliveries[i - 1]!.at >= 900, `attempt ${i + 1} came ${d.at - deliveries[i - 1]!.at} ms after the one before`);
  }
  const attempts = await waitForAttempts(service, endpoint.id, 3, `event_id = '${event.id}'`);
  assert.deepEqual(attempts.map((a) => [a.attempt, a.status_code, a.error]), [[1, 500, null], [2, 500, null], [3, 200, null]]);
  const log = await deliveryLog(service, project.key, endpoint.id);
  assert.deepEqual(log.filter((row: any) => row.event === event.id).map((row: any) => row.attempt), [3, 2, 1], 'newest first');

  // Always failing: 1 attempt and 3 retries (the schedule's length), then nothing more.
  at.answer = () => ({ status: 503 });
  const doomed = await eventOf(service, await makeEvent(service, project.key), 'key.created');
  await waitForAttempts(service, endpoint.id, 4, `event_id = '${doomed.id}'`);
  await sleep(2500);
  assert.equal(at.of(doomed.id).length, 4);
  const { rows } = await service.db.query('SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1 AND event_id = $2', [endpoint.id, doomed.id]);
  assert.equal(rows.length, 0, 'given up: no longer owed');
});

test('Retry-After is honoured: a retry waits for it, past the schedule\'s step', async () => {
  const { project, receiver: at } = await setUp('Retry-After', { types: ['key.created'] });
  let calls = 0;
  at.answer = () => (++calls === 1 ? { status: 429, headers: { 'retry-after': '3' } } : { status: 204 });
  const event = await eventOf(service, await makeEvent(service, project.key), 'key.created');
  await at.waitFor('the retry', () => at.of(event.id).length >= 2, 15_000);
  const [first, second] = at.of(event.id);
  assert.ok(second!.at - first!.at >= 2900, `retried ${second!.at - first!.at} ms later, asked 3 s`);
});

test('410 disables the endpoint at once (gone), recorded as webhook.disabled by the service; nothing more is sent', async () => {
  const { project, receiver: at, endpoint } = await setUp('Gone', { types: ['key.created'] });
  at.answer = () => ({ status: 410 });
  const event = await eventOf(service, await makeEvent(service, project.key), 'key.created');
  await waitForAttempts(service, endpoint.id, 1, `event_id = '${event.id}'`);
  const read = assertSuccess(await service.request('GET', `/v1/webhook/${endpoint.id}`, { key: project.key }));
  assert.deepEqual([read.status, read.disabled_reason], ['disabled', 'gone']);
  await service.waitForJobsDrained();
  const { rows } = await service.db.query(
    `SELECT e.origin, e.actor_id, e.ip_address, e.details FROM events e JOIN event_types t ON t.id = e.type_id WHERE e.related_id = $1 AND t.name = 'webhook.disabled'`, [endpoint.id]);
  assert.deepEqual(rows, [{ origin: 'system', actor_id: null, ip_address: '127.0.0.1', details: { reason: 'gone' } }]);
  await makeEvent(service, project.key);
  await sleep(1500);
  assert.equal(at.received.length, 1, 'one attempt, then nothing');
});

test('an endpoint whose every attempt failed for 5 days is disabled (failing); a success in between resets the clock', async () => {
  const { project, receiver: at, endpoint } = await setUp('Failing', { types: ['key.created'] });
  at.answer = () => ({ status: 500 });
  const first = await eventOf(service, await makeEvent(service, project.key), 'key.created');
  await waitForAttempts(service, endpoint.id, 1, `event_id = '${first.id}'`);
  const since = async () => (await service.db.query('SELECT failing_since FROM webhook_endpoints WHERE id = $1', [endpoint.id])).rows[0].failing_since;
  assert.notEqual(await since(), null, 'failing since the first failure');
  // Back-dated: failing for 5 days less a minute, then a success clears it.
  await service.db.query("UPDATE webhook_endpoints SET failing_since = now() - interval '5 days' + interval '1 minute' WHERE id = $1", [endpoint.id]);
  at.answer = () => ({ status: 200 });
  await waitForAttempts(service, endpoint.id, 1, `status_code = 200`);
  assert.equal(await since(), null, 'a success ends the streak');
  at.answer = () => ({ status: 500 });
  const second = await eventOf(service, await makeEvent(service, project.key), 'key.created');
  await waitForAttempts(service, endpoint.id, 1, `event_id = '${second.id}'`);
  await service.db.query("UPDATE webhook_endpoints SET failing_since = now() - interval '5 days' - interval '1 minute' WHERE id = $1", [endpoint.id]);
  const third = await eventOf(service, await makeEvent(service, project.key), 'key.created');
  await waitForAttempts(service, endpoint.id, 1, `event_id = '${third.id}'`);
  const read = assertSuccess(await service.request('GET', `/v1/webhook/${endpoint.id}`, { key: project.key }));
  assert.deepEqual([read.status, read.disabled_reason], ['disabled', 'failing']);
  await service.waitForJobsDrained();
  const { rows } = await service.db.query(
    `SELECT e.origin, e.details FROM events e JOIN event_types t ON t.id = e.type_id WHERE e.related_id = $1 AND t.name = 'webhook.disabled'`, [endpoint.id]);
  assert.deepEqual(rows, [{ origin: 'system', details: { reason: 'failing' } }]);
  const { rows: owed } = await service.db.query('SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1', [endpoint.id]);
  assert.equal(owed[0].n, 0, 'what was owed to it is dropped');
});

test('a redirect is not followed: a 3xx is a failed attempt', async () => {
  const elsewhere = await receiver();
  const { project, receiver: at, endpoint } = await setUp('Redirect', { types: ['key.created'] });
  at.answer = () => ({ status: 307, headers: { location: elsewhere.url('/stolen') } });
  const event = await eventOf(service, await makeEvent(service, project.key), 'key.created');
  const attempts = await waitForAttempts(service, endpoint.id, 2, `event_id = '${event.id}'`);
  assert.deepEqual(attempts.map((a) => [a.status_code, a.error]), [[307, null], [307, null]]);
  assert.equal(elsewhere.received.length, 0, 'the Location was never followed');
});

test('at most 64 kB of an answer is read: an endless 200 ends the attempt at once, as a success', async () => {
  const { project, receiver: at, endpoint } = await setUp('Endless answer', { types: ['key.created'] });
  let closedEarly = false;
  let written = 0;
  // The answer never ends: 8 kB every 10 ms, for as long as the connection stays.
  at.raw = (res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    const timer = setInterval(() => {
      res.write(Buffer.alloc(8192, 97));
      written += 8192;
    }, 10);
    res.on('close', () => {
      clearInterval(timer);
      closedEarly = true;
    });
  };
  const event = await eventOf(service, await makeEvent(service, project.key), 'key.created');
  const [attempt] = await waitForAttempts(service, endpoint.id, 1, `event_id = '${event.id}'`);
  assert.deepEqual([attempt.status_code, attempt.error], [200, null]);
  assert.ok(attempt.duration_ms < TIMEOUT_MS, `ended after ${attempt.duration_ms} ms, not at the timeout`);
  await sleep(200);
  assert.ok(closedEarly, 'the connection was closed under the answer');
  assert.ok(written < 1024 * 1024, `${written} bytes written before the close`);
  const { rows } = await service.db.query('SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1 AND event_id = $2', [endpoint.id, event.id]);
  assert.equal(rows.length, 0, 'delivered');
});

test('a certificate that does not verify is a failed attempt (tls); connection refused is one too', async () => {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec', curve: 'P-256', algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  });
  const untrusted = await Receiver.start({ cert: pems.cert, key: pems.private });
  receivers.push(untrusted);
  const project = await service.createProject('TLS');
  await service.waitForJobsDrained();
  const endpoint = await createEndpoint(service, project.key, { url: untrusted.url(), types: ['key.created'] });
  const refused = await createEndpoint(service, project.key, { url: 'https://127.0.0.1:9/closed', types: ['key.created'] });
  const event = await eventOf(service, await makeEvent(service, project.key), 'key.created');
  const [attempt] = await waitForAttempts(service, endpoint.id, 1, `event_id = '${event.id}'`);
  assert.deepEqual([attempt.status_code, attempt.error], [null, 'tls']);
  assert.equal(untrusted.received.length, 0);
  const [closed] = await waitForAttempts(service, refused.id, 1, `event_id = '${event.id}'`);
  assert.deepEqual([closed.status_code, closed.error], [null, 'connection refused']);
});

test('a slow endpoint (no answer within the timeout) delays no other, and holds at most 8 attempts in flight', async () => {
  const project = await service.createProject('Slow beside fast');
  await service.waitForJobsDrained();
  const slow = await receiver();
  const fast = await receiver();
  let inFlight = 0;
  let most = 0;
  /** When the slow endpoint's first attempt ended (the worker's timeout, as its receiver saw it). */
  let firstSlowEnd: number | undefined;
  slow.raw = (res) => {
    most = Math.max(most, ++inFlight);
    res.on('close', () => {
      inFlight--;
      firstSlowEnd ??= Date.now();
    });
    setTimeout(() => res.end(), 20_000).unref();
  };
  const slowEndpoint = await createEndpoint(service, project.key, { url: slow.url(), types: ['key.created'] });
  await createEndpoint(service, project.key, { url: fast.url(), types: ['key.created'] });
  const keys = [];
  for (let i = 0; i < 20; i++) keys.push(await makeEvent(service, project.key, `burst ${i}`));
  const events = await Promise.all(keys.map((id) => eventOf(service, id, 'key.created')));
  await fast.waitFor('every event at the fast endpoint', () => events.every((e) => fast.of(e.id).length > 0), 15_000);
  const lastAt = Math.max(...events.map((e) => fast.of(e.id)[0]!.at));
  // Held up behind the slow attempts, the fast endpoint's last events would come after the first ended.
  assert.ok(firstSlowEnd === undefined || lastAt < firstSlowEnd, `the fast endpoint had all 20 ${lastAt - firstSlowEnd!} ms after a slow attempt ended`);
  const timedOut = await waitForAttempts(service, slowEndpoint.id, 8, `error = 'timeout'`, 15_000);
  for (const attempt of timedOut) assert.ok(attempt.duration_ms >= TIMEOUT_MS - 50 && attempt.duration_ms < TIMEOUT_MS + 1000, `${attempt.duration_ms} ms`);
  assert.ok(most <= 8, `${most} attempts in flight at the slow endpoint at once`);
  assert.equal(most, 8, 'its bound filled');
});

test('replay after an outage: what the receiver missed is sent again, 202 {"queued": n}', async () => {
  const { project, receiver: at, endpoint } = await setUp('Outage', { types: ['key.created'] });
  const first = await eventOf(service, await makeEvent(service, project.key, 'seen'), 'key.created');
  await at.waitFor('the first event', () => at.of(first.id).length > 0);
  // The outage: every attempt fails, the retries run out.
  at.answer = () => ({ status: 502 });
  const missed: Array<{ id: string; sequence: number }> = [];
  for (let i = 0; i < 3; i++) missed.push(await eventOf(service, await makeEvent(service, project.key, `missed ${i}`), 'key.created'));
  for (const event of missed) await waitForAttempts(service, endpoint.id, 4, `event_id = '${event.id}'`);
  await sleep(1200);
  // Back: the receiver asks for everything after the last sequence it took.
  at.answer = () => ({ status: 204 });
  const received = at.received.length;
  const reply = await service.request('POST', `/v1/webhook/${endpoint.id}/replay`, { key: project.key, body: { after: first.sequence } });
  assert.deepEqual(assertSuccess(reply, 202), { queued: 3 });
  await at.waitFor('the missed events again', () => missed.every((e) => at.received.slice(received).some((d) => d.headers['webhook-id'] === e.id)));
  for (const event of missed) {
    const last = at.of(event.id).at(-1)!;
    assert.equal(verified(endpoint.secret, last).data.sequence, event.sequence);
  }
  assert.equal(at.received.slice(received).filter((d) => d.headers['webhook-id'] === first.id).length, 0, 'nothing before `after`');
});

test('a disabled or deleted endpoint is sent nothing; enabled again, it gets the events written from then on', async () => {
  const { project, receiver: at, endpoint } = await setUp('Disabled', { types: ['key.created'] });
  assertSuccess(await service.request('PATCH', `/v1/webhook/${endpoint.id}`, { key: project.key, body: { status: 'disabled' } }));
  const whileDisabled = await eventOf(service, await makeEvent(service, project.key), 'key.created');
  await sleep(1500);
  assertSuccess(await service.request('PATCH', `/v1/webhook/${endpoint.id}`, { key: project.key, body: { status: 'enabled' } }));
  const afterwards = await eventOf(service, await makeEvent(service, project.key), 'key.created');
  await at.waitFor('the event after enabling', () => at.of(afterwards.id).length > 0);
  assert.equal(at.of(whileDisabled.id).length, 0);
  assertSuccess(await service.request('DELETE', `/v1/webhook/${endpoint.id}`, { key: project.key }));
  const afterDelete = await eventOf(service, await makeEvent(service, project.key), 'key.created');
  await sleep(1500);
  assert.equal(at.of(afterDelete.id).length, 0);
});
