// The client's retries: every write carries one Idempotency-Key across its attempts, so a creation
// whose answer was lost, or that met its own first try still running (409), is made once; network
// failures, timeouts, cut answers, 429 and 502-504 are retried with backoff or Retry-After, other
// 4xx never. The live service for what the database must show, stub servers for timing and headers.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { ApiError, Client as FetchClient, type Fetch } from '../../client/index.ts';
import { Client, type ClientOptions } from '../../client/node.ts';
import { appBody } from '../apps/helpers.ts';
import { assertSuccess } from '../support/assertions.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { stubServer } from '../support/stub-server.ts';
import { waitFor } from '../support/wait.ts';

const TLS = { cert: readFileSync(process.env.TEST_TLS_CERT_FILE!), key: readFileSync(process.env.TEST_TLS_KEY_FILE!) };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const CREATED = { code: 201, title: 'Created', response: { id: 'papi_00000000000000000001' } };

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start();
  project = await service.createProject('Retries');
});
after(() => service?.stop());

const clientOf = (baseUrl: string, options: Partial<ClientOptions> = {}) => new Client({ baseUrl, apiKey: project.key, ca: TLS.cert, ...options });

async function count(sql: string, ...values: unknown[]): Promise<number> {
  const { rows } = await service.db.query(sql, values);
  return rows[0].n;
}

interface Answer { head: string; body: any }

/** An HTTP answer's head and JSON body from its bytes, once they are all in (Content-Length). */
function answerOf(bytes: Buffer): Answer | undefined {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const head = bytes.subarray(0, end).toString('latin1');
  const length = Number(/^content-length: *(\d+)/im.exec(head)?.[1]);
  const body = bytes.subarray(end + 4);
  return body.length < length ? undefined : { head, body: JSON.parse(body.subarray(0, length).toString('utf8')) };
}

/**
 * A TLS-terminating relay to the service that keeps every answer it sees. With `loseFirst`, the
 * answer on its first connection is kept and never relayed: that connection is cut once the answer
 * is whole, so the change has committed and its client never hears of it.
 */
async function relay(loseFirst: boolean) {
  const port = Number(new URL(service.baseUrl).port);
  const answers: Answer[] = [];
  let lost: Answer | undefined;
  let connections = 0;
  const server = tls.createServer(TLS, (inbound) => {
    const losing = loseFirst && connections++ === 0;
    const outbound = tls.connect({ host: '127.0.0.1', port, ca: TLS.cert });
    for (const [socket, other] of [[inbound, outbound], [outbound, inbound]] as const) {
      socket.on('error', () => {});
      socket.on('close', () => other.destroy());
    }
    inbound.pipe(outbound);
    let pending = Buffer.alloc(0);
    outbound.on('data', (chunk: Buffer) => {
      if (!losing) inbound.write(chunk);
      pending = Buffer.concat([pending, chunk]);
      const answer = answerOf(pending);
      if (!answer) return;
      answers.push(answer);
      pending = Buffer.alloc(0);
      if (losing) {
        lost = answer;
        inbound.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    answers,
    lost: () => lost,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

test('a creation whose answer is lost is sent again with its Idempotency-Key: made once, one event, the same answer and secret', async () => {
  const creations = [
    { table: 'api_keys', create: (client: Client, name: string) => client.keys.create({ name, scope: ['key:read'] }) },
    { table: 'apps', create: (client: Client, name: string) => client.apps.create(appBody({ name }) as never) },
  ];
  for (const { table, create } of creations) {
    const proxy = await relay(true);
    const client = clientOf(proxy.baseUrl);
    try {
      const name = `lost ${randomUUID()}`;
      const made: { id: string; key?: string } = await create(client, name);
      const lost = proxy.lost();
      assert.ok(lost, 'the first answer was cut off');
      assert.match(lost.head, /^HTTP\/1\.1 20[01]/);
      assert.deepEqual(made, lost.body.response, `${table}: the answer the lost one was`);
      assert.match(proxy.answers.at(-1)!.head, /^idempotent-replayed: true$/im);
      assert.equal(await count(`SELECT count(*)::int AS n FROM ${table} WHERE project_id = $1 AND name = $2`, project.projectId, name), 1);
      if (made.key) assert.equal(assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key })).id, made.id, 'the secret works');
      await service.waitForJobsDrained();
      assert.equal(await count('SELECT count(*)::int AS n FROM events WHERE related_id = $1', made.id), 1);
    } finally {
      client.close();
      await proxy.close();
    }
  }
});

test('409 while the first try still runs, then the retry after Retry-After: 1 makes the key once', async () => {
  const proxy = await relay(false);
  const client = clientOf(proxy.baseUrl);
  const value = `client-${randomUUID()}`;
  const holder = new pg.Client({ connectionString: service.databaseUrl });
  await holder.connect();
  try {
    // What a first try in progress holds (domain/idempotency.ts).
    await holder.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [`${project.keyId}\n${value}`]);
    const name = `busy ${value}`;
    const creating = client.keys.create({ name, scope: ['key:read'] }, { idempotencyKey: value });
    await waitFor('the first try answered 409', async () => (proxy.answers.length > 0 ? true : undefined));
    const refusedAt = Date.now();
    assert.match(proxy.answers[0]!.head, /^HTTP\/1\.1 409[^]*^retry-after: 1$/im);
    await holder.query('SELECT pg_advisory_unlock_all()');
    const made = await creating;
    assert.ok(Date.now() - refusedAt >= 950, `retried after ${Date.now() - refusedAt} ms`);
    assert.equal(made.name, name);
    assert.deepEqual(proxy.answers.map((a) => /^HTTP\/1\.1 (\d+)/.exec(a.head)![1]), ['409', '201']);
    assert.equal(await count('SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1 AND name = $2', project.projectId, name), 1);
    // The value is the caller's: the same call again is the kept answer, not a new key.
    assert.deepEqual(await client.keys.create({ name, scope: ['key:read'] }, { idempotencyKey: value }), made);
    assert.equal(await count('SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1 AND name = $2', project.projectId, name), 1);
  } finally {
    await holder.end();
    client.close();
    await proxy.close();
  }
});

/** A stub that answers the envelope `answers[i]` to its i-th request (the last one from then on). */
async function answering(...answers: Array<[number, Record<string, string>?]>) {
  return stubServer((_req, res, index) => {
    const [status, headers = {}] = answers[Math.min(index, answers.length - 1)]!;
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(status === 201 ? CREATED : { code: status, title: 'T', response: `answer ${index}` }));
  });
}

test('503 with Retry-After: 2, then success: the retry waits the 2 s the service asked, not its shorter backoff', async () => {
  const stub = await answering([503, { 'retry-after': '2' }], [201]);
  const client = clientOf(stub.baseUrl);
  try {
    assert.deepEqual(await client.keys.create({ name: 'n' }), CREATED.response);
    const waited = stub.requests[1]!.at - stub.requests[0]!.at;
    assert.ok(waited >= 2000 && waited < 2800, `waited ${waited} ms`);
  } finally {
    client.close();
    await stub.close();
  }
});

test('the same Idempotency-Key on every attempt of a write; a new one per call; the caller\'s own as given; none on a read', async () => {
  const stub = await answering([503, { 'retry-after': '0' }], [429, { 'retry-after': '0' }], [502], [201]);
  const client = clientOf(stub.baseUrl);
  try {
    await client.keys.revoke('papi_00000000000000000001');
    const keys = stub.requests.map((r) => r.headers['idempotency-key']);
    assert.equal(keys.length, 4);
    assert.match(keys[0] as string, UUID);
    assert.deepEqual(new Set(keys).size, 1, `one value across attempts: ${keys.join(', ')}`);
    await client.apps.update('mapp_00000000000000000001', { name: 'n' });
    await client.keys.roll('papi_00000000000000000001', { grace_s: 60 }, { idempotencyKey: 'order-42' });
    await client.keys.get('papi_00000000000000000001');
    assert.deepEqual(stub.requests.slice(4).map((r) => [r.method, r.headers['idempotency-key']]), [
      ['PATCH', stub.requests[4]!.headers['idempotency-key']], ['POST', 'order-42'], ['GET', undefined],
    ]);
    assert.match(stub.requests[4]!.headers['idempotency-key'] as string, UUID);
    assert.notEqual(stub.requests[4]!.headers['idempotency-key'], keys[0]);
  } finally {
    client.close();
    await stub.close();
  }
});

test('maxRetries 0 fails at once; per call it overrides the client\'s; the default is 3 retries, then the last error', async () => {
  const stub = await answering([503, { 'retry-after': '0' }]);
  const once = clientOf(stub.baseUrl, { maxRetries: 0 });
  const client = clientOf(stub.baseUrl);
  try {
    const started = Date.now();
    await assert.rejects(once.keys.create({ name: 'n' }), (err: ApiError) => err.status === 503 && err.message === 'answer 0');
    assert.ok(Date.now() - started < 500, `failed after ${Date.now() - started} ms`);
    assert.equal(stub.requests.length, 1);
    await assert.rejects(client.keys.current({ maxRetries: 0 }), (err: ApiError) => err.status === 503);
    assert.equal(stub.requests.length, 2);
    await assert.rejects(once.keys.current({ maxRetries: 1 }), (err: ApiError) => err.status === 503);
    assert.equal(stub.requests.length, 4);
    await assert.rejects(client.keys.create({ name: 'n' }), (err: ApiError) => err.status === 503 && err.message === 'answer 7');
    assert.equal(stub.requests.length, 8);
    // Backoff with jitter: 250-500 ms, then 500-1000, then 1000-2000.
    const gaps = stub.requests.slice(4).map((r, i, all) => (i === 0 ? 0 : r.at - all[i - 1]!.at)).slice(1);
    gaps.forEach((gap, i) => assert.ok(gap >= 250 * 2 ** i && gap < 500 * 2 ** i + 300, `gap ${i}: ${gap} ms (${gaps.join(', ')})`));
  } finally {
    once.close();
    client.close();
    await stub.close();
  }
});

test('4xx other than 409 and 429, and 500, are never retried; 409 is retried for a write only', async () => {
  const statuses = [400, 401, 403, 404, 408, 413, 422, 500];
  for (const status of statuses) {
    const stub = await answering([status], [201]);
    const client = clientOf(stub.baseUrl);
    try {
      await assert.rejects(client.keys.create({ name: 'n' }), (err: ApiError) => err.status === status);
      assert.equal(stub.requests.length, 1, `${status} sent once`);
    } finally {
      client.close();
      await stub.close();
    }
  }
  const stub = await answering([409, { 'retry-after': '0' }], [200]);
  const client = clientOf(stub.baseUrl);
  try {
    await assert.rejects(client.keys.current(), (err: ApiError) => err.status === 409);
    assert.equal(stub.requests.length, 1, 'a read\'s 409 is final');
  } finally {
    client.close();
    await stub.close();
  }
});

test('a reset connection, a cut answer and a timeout are retried, the read as the write', async () => {
  const stub = await stubServer((_req, res, index) => {
    if (index % 4 === 0) res.socket!.destroy();
    else if (index % 4 === 1) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"code":200,"title":"OK","resp');
      setTimeout(() => res.socket?.destroy(), 20);
    } else if (index % 4 === 3) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(CREATED));
    }
    // index % 4 === 2: no answer, until the client gives up.
  });
  // Long enough that an answered attempt is never taken for the silent one on a loaded machine.
  const client = clientOf(stub.baseUrl, { timeoutMs: 1500 });
  try {
    assert.deepEqual(await client.keys.current(), CREATED.response);
    assert.deepEqual(await client.apps.delete('mapp_00000000000000000001'), CREATED.response);
    assert.deepEqual(stub.requests.map((r) => r.method), ['GET', 'GET', 'GET', 'GET', 'DELETE', 'DELETE', 'DELETE', 'DELETE']);
    assert.equal(new Set(stub.requests.slice(4).map((r) => r.headers['idempotency-key'])).size, 1);
  } finally {
    client.close();
    await stub.close();
  }
});

test('over fetch: a refused connection (a browser\'s bare TypeError too) is retried; an untrusted certificate is not', async () => {
  const sent: Array<Record<string, string>> = [];
  const failures = [
    Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) }),
    new TypeError('Failed to fetch'),
  ];
  const fetch: Fetch = async (_url, init) => {
    sent.push(init.headers);
    const failure = failures[sent.length - 1];
    if (failure) throw failure;
    return new Response(JSON.stringify(CREATED), { status: 201 });
  };
  const client = new FetchClient({ baseUrl: 'https://127.0.0.1:1', apiKey: project.key, fetch });
  try {
    assert.deepEqual(await client.keys.create({ name: 'n' }), CREATED.response);
    assert.equal(sent.length, 3);
    assert.equal(new Set(sent.map((headers) => headers['idempotency-key'])).size, 1);
    failures.splice(0, 2, Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }) }));
    sent.length = 0;
    await assert.rejects(client.keys.create({ name: 'n' }), /fetch failed/);
    assert.equal(sent.length, 1);
  } finally {
    client.close();
  }
});

test('a Retry-After past a minute ends the call with its error; close() ends a call waiting to retry', async () => {
  const stub = await answering([503, { 'retry-after': '120' }], [503, { 'retry-after': '5' }]);
  const client = clientOf(stub.baseUrl);
  try {
    await assert.rejects(client.keys.current(), (err: ApiError) => err.status === 503 && err.retryAfterSeconds === 120);
    assert.equal(stub.requests.length, 1);
    const waiting = client.keys.current();
    await waitFor('the second answer', async () => (stub.requests.length === 2 ? true : undefined));
    const started = Date.now();
    client.close();
    await assert.rejects(waiting, /The client was closed/);
    assert.ok(Date.now() - started < 500);
  } finally {
    client.close();
    await stub.close();
  }
});

test('an Idempotency-Key the service would refuse, or a maxRetries that is not a whole number from 0, throws RangeError unsent', async () => {
  const stub = await answering([201]);
  const client = clientOf(stub.baseUrl);
  try {
    for (const bad of ['', 'has space', 'é', 'x'.repeat(256)]) {
      await assert.rejects(client.keys.create({ name: 'n' }, { idempotencyKey: bad }), RangeError, JSON.stringify(bad));
    }
    await assert.rejects(client.keys.current({ maxRetries: -1 }), RangeError);
    assert.throws(() => clientOf(stub.baseUrl, { maxRetries: 1.5 }), RangeError);
    assert.equal(stub.requests.length, 0);
    await client.keys.create({ name: 'n' }, { idempotencyKey: 'x'.repeat(255) });
  } finally {
    client.close();
    await stub.close();
  }
});
