// Safe to point at the internet (decisions.md, "Webhooks"): without WEBHOOK_ALLOW_PRIVATE a URL
// naming or resolving to a loopback, private, link-local, unspecified, multicast or CGNAT address
// is refused at creation (422), and at each delivery again, to the address the name resolves to
// then: a name that turned private since is refused (`private address`) and nothing is sent.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { seal, sealingKeyOf } from '../../domain/sealing.ts';
import { isPrivateAddress } from '../../domain/webhook-addresses.ts';
import { retryAfterSeconds } from '../../domain/webhook-attempt.ts';
import { retryDelay } from '../../domain/webhook-delivery.ts';
import { assertError, assertSuccess } from '../support/assertions.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { sleep } from '../support/wait.ts';
import { createEndpoint, eventOf, makeEvent, Receiver, waitForAttempts } from './helpers.ts';

const REFUSED = 'url must not point at a private or loopback address.';
let service: TestService;
let project: TestProject;
let receiver: Receiver;

before(async () => {
  service = await TestService.start({ env: { WEBHOOK_RETRY_SCHEDULE_S: '60' } });
  assert.equal(service.config.webhookAllowPrivate, false);
  project = await service.createProject('Private addresses');
  receiver = await Receiver.start();
});
after(async () => {
  await receiver.stop();
  await service.stop();
});

test('the addresses refused, and some that are not', () => {
  for (const address of [
    '127.0.0.1', '127.255.255.254', '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1',
    '100.127.255.255', '0.0.0.0', '224.0.0.1', '255.255.255.255', '::1', '::', 'fc00::1', 'fd12:3456::1', 'fe80::1', 'ff02::1',
    '::ffff:127.0.0.1', '::ffff:8.8.8.8', '::127.0.0.1',
  ]) assert.equal(isPrivateAddress(address), true, address);
  for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '203.0.113.10', '2001:4860:4860::8888', '2606:4700::1111']) {
    assert.equal(isPrivateAddress(address), false, address);
  }
});

test('creation: a URL naming or resolving to such an address answers 422', async () => {
  for (const url of [
    receiver.url(), 'https://localhost/hook', 'https://[::1]/', 'https://10.1.2.3/', 'https://169.254.169.254/latest/meta-data',
    'https://[::ffff:127.0.0.1]/', 'https://100.64.0.1/', 'https://0.0.0.0/', 'https://2130706433/', 'https://0x7f.1/', 'https://[fd00::1]/',
  ]) {
    assertError(await service.request('POST', '/v1/webhook', { key: project.key, body: { url } }), 422, REFUSED, url);
  }
  const made = await createEndpoint(service, project.key, { url: 'https://203.0.113.10/hook', types: ['app.deleted'] });
  assertError(await service.request('PATCH', `/v1/webhook/${made.id}`, { key: project.key, body: { url: 'https://localhost:8443/' } }), 422, REFUSED);
  assertSuccess(await service.request('DELETE', `/v1/webhook/${made.id}`, { key: project.key }));
});

test('delivery: a name that resolves to 127.0.0.1 by the time of the attempt is refused, and the receiver there gets nothing', async () => {
  await service.waitForJobsDrained();
  // As if its name had turned private after the creation checked it.
  const { rows: [endpoint] } = await service.db.query(
    `INSERT INTO webhook_endpoints (id, project_id, url, secret, fanned_out)
     SELECT 'whep_0000000000000000beef', $1, $2, $3, total FROM project_event_counts WHERE project_id = $1 RETURNING id`,
    [project.projectId, receiver.url().replace('127.0.0.1', 'localhost'),
      seal(sealingKeyOf(service.config), `whsec_${Buffer.alloc(32, 7).toString('base64')}`, 'whep_0000000000000000beef')]);
  const event = await eventOf(service, await makeEvent(service, project.key), 'key.created');
  const [attempt] = await waitForAttempts(service, endpoint.id, 1, `event_id = '${event.id}'`);
  assert.deepEqual([attempt.status_code, attempt.error], [null, 'private address']);
  await sleep(300);
  assert.equal(receiver.received.length, 0);
});

test('the retry schedule and Retry-After', () => {
  const schedule = [5, 300, 1800];
  assert.deepEqual([1, 2, 3, 4].map((attempt) => retryDelay(schedule, attempt, null)), [5, 300, 1800, null]);
  assert.equal(retryDelay(schedule, 1, 120), 120, 'a longer Retry-After wins');
  assert.equal(retryDelay(schedule, 2, 10), 300, 'a shorter one does not hasten the retry');
  assert.equal(retryDelay(schedule, 1, 10 * 86_400), 86_400, 'at most a day');
  assert.equal(retryAfterSeconds('7'), 7);
  assert.equal(retryAfterSeconds(new Date(Date.now() + 30_000).toUTCString()), 30);
  assert.equal(retryAfterSeconds('soon'), null);
  assert.equal(retryAfterSeconds(undefined), null);
});
