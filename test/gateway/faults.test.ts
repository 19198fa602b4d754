// decisions.md, Operations: a 500 answers `Internal server error.`, leaks nothing of the fault,
// and logs it with the request id; logs never hold a key secret or an Authorization header.
// The faults are made on purpose inside this file's own database and undone afterwards.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { MESSAGES } from '../support/assertions.ts';
import { createKey } from '../support/keys.ts';
import { TestService, type Reply, type TestProject } from '../support/service.ts';
import { sleep } from '../support/wait.ts';
import { assertError, assertRequestId, assertSuccess } from './helpers.ts';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start({ jobWorkers: false });
  project = await service.createProject();
});
after(() => service.stop());

/** The log lines (pino JSON) that mention this request id. */
function logLinesFor(requestId: string): Array<Record<string, unknown>> {
  return service.logText().split('\n').filter((line) => line.includes(requestId)).map((line) => JSON.parse(line));
}

/** The logger writes asynchronously: wait (bounded) until a line with this request id is there. */
async function waitForLogLine(requestId: string, timeoutMs = 5000): Promise<Array<Record<string, unknown>>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const lines = logLinesFor(requestId).filter((line) => Number(line.level) >= 50);
    if (lines.length > 0 || Date.now() > deadline) return lines;
    await sleep(25);
  }
}

function assertNothingLeaks(reply: Reply, words: string[]): void {
  const everything = reply.text + JSON.stringify(reply.headers);
  for (const word of [...words, 'stack', 'error:', 'does not exist', 'relation', 'node_modules', '.ts:', 'SQL', 'pg']) {
    assert.ok(!everything.toLowerCase().includes(word.toLowerCase()), `the answer mentions ${JSON.stringify(word)}: ${everything}`);
  }
}

test('a database fault inside an operation: 500 with nothing inner, logged with the request id', async () => {
  assertSuccess(await service.request('GET', '/v1/event', { key: project.key }), 200, 'before the fault');
  await service.db.query('ALTER TABLE events RENAME TO events_gone');
  let reply: Reply;
  try {
    reply = await service.request('GET', '/v1/event', { key: project.key });
  } finally {
    await service.db.query('ALTER TABLE events_gone RENAME TO events');
  }
  assertError(reply, 500, MESSAGES.internal);
  assertNothingLeaks(reply, ['events_gone', 'relation', 'does not exist']);

  const requestId = assertRequestId(reply);
  const lines = await waitForLogLine(requestId);
  assert.ok(lines.length > 0, `an error is logged with request id ${requestId}`);
  assert.match(JSON.stringify(lines), /relation \\"events\\" does not exist/, 'the log names the fault');

  assertSuccess(await service.request('GET', '/v1/event', { key: project.key }), 200, 'after the fault is undone');
});

test('a database fault while authenticating or checking a known key: 500 with nothing inner, logged with the request id', async () => {
  // One key the process knows from memory (checked riding in the read), one it must look up.
  assertSuccess(await service.request('GET', '/v1/key/current', { key: project.key }), 200, 'before the fault');
  const fresh = await createKey(service, project.key, { name: 'looked up', scope: ['key:read'] });
  // The view every lookup and every check of a key reads (sql/migrations/0008_key_check.sql).
  await service.db.query('ALTER VIEW api_key_usable RENAME TO api_key_usable_gone');
  const replies: Reply[] = [];
  try {
    for (const key of [project.key, fresh.key]) replies.push(await service.request('GET', '/v1/key/current', { key }));
  } finally {
    await service.db.query('ALTER VIEW api_key_usable_gone RENAME TO api_key_usable');
  }
  for (const reply of replies) {
    assertError(reply, 500, MESSAGES.internal);
    assertNothingLeaks(reply, ['api_key_usable', 'api_key_usable_gone']);
    const requestId = assertRequestId(reply);
    const lines = await waitForLogLine(requestId);
    assert.ok(lines.length > 0, `an error is logged with request id ${requestId}`);
  }

  assertSuccess(await service.request('GET', '/v1/key/current', { key: project.key }), 200, 'after the fault is undone');
  assertSuccess(await service.request('GET', '/v1/key/current', { key: fresh.key }), 200, 'after the fault is undone');
});

test('the log never holds a key secret or an Authorization header', async () => {
  // Make sure requests with secrets have been logged: failures and successes alike.
  const secondary = await service.request('POST', '/v1/key', { key: project.key, body: { name: 'secret holder' } });
  assert.equal(secondary.status, 201);
  const secrets = [project.key, secondary.body.response.key as string];
  await service.request('GET', '/v1/key/current', { key: secrets[1] });
  await service.request('GET', '/v1/nothing', { key: secrets[1] });
  await service.request('GET', '/v1/key', { key: `${secrets[0]}-wrong` });
  // A secret sent where an id belongs, as a client mixing up id and secret would.
  await service.request('GET', `/v1/key/${secrets[1]}`, { key: project.key });
  await service.request('DELETE', `/v1/key/${secrets[1]}`, { key: project.key });
  await service.request('GET', `/v1/event/${secrets[1]}`, { key: project.key });
  await service.request('GET', `/v1/nothing/${secrets[1]}/x`, { key: project.key });
  // Percent-encoded, as the router decodes it: in part, or every character.
  await service.request('DELETE', `/v1/key/%73k-project-${secrets[1]!.slice(11)}`, { key: project.key });
  await service.request('DELETE', `/v1/key/${secrets[1]!.replaceAll('-', '%2D')}`, { key: project.key });
  await service.request('GET', `/v1/key/${[...secrets[1]!].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('')}`, { key: project.key });
  await service.request('GET', `/v1/key/%73k-project-${secrets[1]!.slice(11)}%FF`, { key: project.key });
  // Or as its request id, which every line of the request carries: not taken, not echoed.
  const asId = await service.request('GET', '/v1/key/current', { key: project.key, headers: { 'x-request-id': secrets[1]! } });
  assert.notEqual(asId.headers['x-request-id'], secrets[1]);
  assert.match(String(asId.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  const last = await service.request('GET', '/v1/event', { key: project.key });
  // Wait until the last request is in the log, then read all of it.
  const deadline = Date.now() + 5000;
  while (!service.logText().includes(assertRequestId(last)) && Date.now() < deadline) await sleep(25);
  const log = service.logText();
  assert.ok(log.includes(assertRequestId(last)), 'requests are logged');
  for (const secret of secrets) assert.ok(!log.includes(secret), 'a key secret is in the log');
  for (const secret of secrets) assert.ok(!log.includes(secret.slice(11)), 'the random part of a secret is in the log');
  assert.ok(!/bearer /i.test(log), 'an Authorization header value is in the log');
  assert.ok(log.includes('"path":"/v1/key/sk-project-[redacted]"'), 'the path is logged, its secret hidden');
});
