// Step 3 of decisions.md: a body over 200,000 bytes is 413 `Request body too large.`, decided from
// Content-Length before reading and enforced while a chunked body streams; before authentication.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { MESSAGES } from '../support/assertions.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { assertError, assertSuccess, paddedKeyBody, rawRequest } from './helpers.ts';

let service: TestService;
let project: TestProject;
const LIMIT = 200_000;

before(async () => {
  service = await TestService.start({ jobWorkers: false });
  project = await service.createProject();
});
after(() => service.stop());

async function keyCount(name: string): Promise<number> {
  const { rows } = await service.db.query('SELECT count(*)::int AS n FROM api_keys WHERE name = $1', [name]);
  return rows[0].n;
}

test('Content-Length over the limit: 413 at once, without a byte of the body sent', async () => {
  for (const length of [LIMIT + 1, 1_000_000, 10_000_000_000]) {
    const reply = await rawRequest(service, {
      method: 'POST',
      path: '/v1/key',
      headers: { authorization: `Bearer ${project.key}`, 'content-type': 'application/json', 'content-length': length },
      write: () => false,
    });
    assertError(reply, 413, MESSAGES.tooLarge, `Content-Length ${length}`);
  }
});

test('Content-Length over the limit is 413 before authentication', async () => {
  const cases: Array<[string, Record<string, string>]> = [
    ['no key', {}],
    ['not Bearer', { authorization: 'Token abc' }],
    ['unknown key', { authorization: 'Bearer sk-project-nosuchkey' }],
  ];
  for (const [what, headers] of cases) {
    const reply = await rawRequest(service, {
      method: 'POST', path: '/v1/key', headers: { ...headers, 'content-length': LIMIT + 1 }, write: () => false,
    });
    assertError(reply, 413, MESSAGES.tooLarge, what);
  }
});

test('Content-Length over the limit on PATCH, DELETE and GET is 413 too', async () => {
  for (const [method, path] of [['PATCH', '/v1/app/detail/mapp_00000000000000000000'], ['DELETE', '/v1/key/papi_00000000000000000000'], ['GET', '/v1/key']]) {
    const reply = await rawRequest(service, {
      method: method!, path: path!, headers: { authorization: `Bearer ${project.key}`, 'content-length': 300_000 }, write: () => false,
    });
    assertError(reply, 413, MESSAGES.tooLarge, `${method} ${path}`);
  }
});

test('a body of exactly 200,000 bytes with Content-Length is read and acted on', async () => {
  const body = paddedKeyBody(LIMIT, 'exactly-at-limit');
  const reply = await service.request('POST', '/v1/key', { key: project.key, body });
  assertSuccess(reply, 201);
  assert.equal(reply.body.response.name, 'exactly-at-limit');
  assert.equal(await keyCount('exactly-at-limit'), 1);
});

test('a chunked body is refused with 413 as soon as it crosses the limit, mid-stream', async () => {
  const reply = await rawRequest(service, {
    method: 'POST',
    path: '/v1/key',
    headers: { authorization: `Bearer ${project.key}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
    write: (req) => {
      const body = paddedKeyBody(LIMIT + 1, 'chunked-over');
      req.write(body.subarray(0, 100_000));
      req.write(body.subarray(100_000));
      return false; // never ended: the answer must come while the body is still open
    },
  });
  assertError(reply, 413, MESSAGES.tooLarge);
  assert.equal(await keyCount('chunked-over'), 0);
});

test('a chunked body over the limit is 413 before authentication', async () => {
  const reply = await rawRequest(service, {
    method: 'POST',
    path: '/v1/key',
    headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
    write: (req) => {
      for (let sent = 0; sent <= LIMIT; sent += 50_000) req.write(Buffer.alloc(50_000, 0x20));
      return false;
    },
  });
  assertError(reply, 413, MESSAGES.tooLarge);
});

test('a chunked body of exactly 200,000 bytes is not refused for size', async () => {
  const body = paddedKeyBody(LIMIT, 'chunked-at-limit');
  const reply = await rawRequest(service, {
    method: 'POST',
    path: '/v1/key',
    headers: { authorization: `Bearer ${project.key}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
    write: (req) => {
      for (let at = 0; at < body.length; at += 30_000) req.write(body.subarray(at, at + 30_000));
      return true;
    },
  });
  assertSuccess(reply, 201);
  assert.equal(reply.body.response.name, 'chunked-at-limit');
  assert.equal(await keyCount('chunked-at-limit'), 1);
});

test('a chunked body of 200,001 bytes, sent whole, is 413 and creates nothing', async () => {
  const body = paddedKeyBody(LIMIT + 1, 'chunked-one-over');
  const reply = await rawRequest(service, {
    method: 'POST',
    path: '/v1/key',
    headers: { authorization: `Bearer ${project.key}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
    write: (req) => { req.write(body); return false; },
  });
  assertError(reply, 413, MESSAGES.tooLarge);
  assert.equal(await keyCount('chunked-one-over'), 0);
});

/** A request that waits for 100 Continue before its body; records every 1xx the service sends. */
function expecting(length: number, body?: Buffer) {
  const informational: number[] = [];
  return {
    informational,
    write: (req: import('node:http').ClientRequest) => {
      req.on('information', (info) => informational.push(info.statusCode));
      if (body) req.on('continue', () => req.end(body));
      return false;
    },
    headers: { authorization: `Bearer ${project.key}`, 'content-type': 'application/json', 'content-length': length, expect: '100-continue' },
  };
}

test('Expect: 100-continue with a body over the limit: the 413 at once, no 100 Continue before it', async () => {
  for (const length of [LIMIT + 1, 10_000_000]) {
    const request = expecting(length);
    const reply = await rawRequest(service, { method: 'POST', path: '/v1/key', headers: request.headers, write: request.write });
    assertError(reply, 413, MESSAGES.tooLarge, `Content-Length ${length}`);
    assert.deepEqual(request.informational, [], 'no 1xx answer');
    // Without its 100 the client may still send the body: the connection is not kept for another request.
    assert.equal(reply.headers.connection, 'close');
  }
});

test('Expect: 100-continue within the limit: 100 Continue, then the body is read and acted on', async () => {
  const body = paddedKeyBody(LIMIT, 'expect-continue');
  const request = expecting(body.length, body);
  const reply = await rawRequest(service, { method: 'POST', path: '/v1/key', headers: request.headers, write: request.write });
  assertSuccess(reply, 201);
  assert.deepEqual(request.informational, [100], 'one 100 Continue');
  assert.equal(reply.body.response.name, 'expect-continue');
  assert.equal(await keyCount('expect-continue'), 1);
});
