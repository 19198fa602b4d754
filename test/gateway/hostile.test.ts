// Hostile clients, each rule on its own (the fault suite's hostile file floods real processes):
// sockets that never finish TLS or a request are destroyed; connections are bounded per process
// and per address; pipelining is paced per connection, requests in progress per address;
// refused authentications are throttled per address (429 without a database lookup); every
// answer carries the hardening headers.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { LookupCounter } from '../support/lookups.ts';
import { MESSAGES, TITLES } from '../support/assertions.ts';
import { createKey } from '../support/keys.ts';
import { TestService, type Reply, type TestProject } from '../support/service.ts';
import { sleep, waitFor } from '../support/wait.ts';
import { assertError, assertSuccess, converse } from './helpers.ts';

const HSTS = 'max-age=31536000';

function assertHardened(reply: { headers: Record<string, unknown> }, https: boolean, what: string): void {
  assert.equal(reply.headers['cache-control'], 'no-store', `${what}: Cache-Control`);
  assert.equal(reply.headers['x-content-type-options'], 'nosniff', `${what}: X-Content-Type-Options`);
  assert.equal(reply.headers['strict-transport-security'], https ? HSTS : undefined, `${what}: Strict-Transport-Security`);
}

/** A raw answer read off a socket: status line, headers and the JSON body. */
interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

function parseRaw(text: string): RawAnswer[] {
  const answers: RawAnswer[] = [];
  let rest = text;
  while (rest.startsWith('HTTP/1.1 ')) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd < 0) break;
    const [statusLine, ...lines] = rest.slice(0, headEnd).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length']);
    const bodyText = rest.slice(headEnd + 4, headEnd + 4 + length);
    answers.push({ status: Number(statusLine!.split(' ')[1]), headers, body: JSON.parse(bodyText) });
    rest = rest.slice(headEnd + 4 + length);
  }
  return answers;
}

/** Raw bytes to the plain-HTTP listener, and all it answers until it closes the connection. */
function plainExchange(service: TestService, request: string): Promise<string> {
  const port = Number(new URL(service.httpUrl).port);
  return new Promise<string>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

/** A TCP connection that never speaks; resolves with how long until the service closed it. */
function silentConnection(port: number): { socket: net.Socket; closed: Promise<number> } {
  const opened = Date.now();
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  return { socket, closed: new Promise((resolve) => socket.on('close', () => resolve(Date.now() - opened))) };
}

const openDescriptors = () => readdirSync('/proc/self/fd').length;

describe('hardening headers', () => {
  let service: TestService;
  let project: TestProject;

  before(async () => {
    service = await TestService.start({ jobWorkers: false });
    project = await service.createProject();
  });
  after(() => service.stop());

  test('HTTPS answers of every kind carry no-store, nosniff and HSTS', async () => {
    const created = await service.request('POST', '/v1/key', { key: project.key, body: { name: 'carries a secret' } });
    assertSuccess(created, 201, 'key creation');
    assert.match(created.body.response.key, /^sk-project-/);
    assertHardened(created, true, 'the 201 that carries a secret');
    assertHardened(await service.request('GET', '/v1/key/current', { key: project.key }), true, 'a read');
    assertHardened(await service.request('GET', '/v1/key'), true, 'a 401');
    assertHardened(await service.request('GET', '/nowhere', { key: project.key }), true, 'the gateway 404');
    assertHardened(await service.request('GET', '/healthz'), true, '/healthz');
  });

  test('the plain listener\'s 301 carries no-store and nosniff, and no HSTS (browsers ignore it over HTTP)', async () => {
    const reply = await service.plainRequest('GET', '/v1/key');
    assertError(reply, 301, MESSAGES.movedPermanently);
    assertHardened(reply, false, 'the 301');
  });

  test('a malformed request, answered on the socket, carries them too', async () => {
    const { text } = await converse(service, ['GET /v1/key HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n']);
    const [answer] = parseRaw(text);
    assert.equal(answer!.status, 400);
    assert.deepEqual(answer!.body, { code: 400, title: TITLES[400], response: MESSAGES.malformedHttp });
    assertHardened(answer!, true, 'the 400');
  });
});

describe('requests the gateway cannot take: a Host that is none or twice (400), an HTTP version other than 1.0 and 1.1 (505), a head over the limit (431); the connection closed, the process serves on', () => {
  // restify builds a request's URL from its Host header and its target, and `new URL` throws on a
  // Host that is not a host; that throw, on a tick of restify's own, used to end the process with
  // every request and stream it held, for one anonymous request. A Host holding a path, a query or
  // a fragment chose the path the gateway routed, authenticated and logged.
  // Hosts that name no host, and hosts that would choose the path in place of the request line.
  const INVALID_HOSTS = ['localhost:70000', 'a b', '[', 'exa%mple.com', 'host:port', 'x/v1/key/current?', 'x\\v1\\key\\current?', 'x#', 'x?y', 'user@host', 'x/healthz?'];
  let service: TestService;
  let project: TestProject;

  before(async () => {
    service = await TestService.start({ jobWorkers: false });
    project = await service.createProject();
  });
  after(() => service.stop());

  /** One answer in the envelope, its status line naming the title, and the connection closed after it. */
  async function refused(request: string, status: number, message: string, plain = false): Promise<void> {
    const text = plain ? await plainExchange(service, request) : (await converse(service, [request])).text;
    assert.ok(text.startsWith(`HTTP/1.1 ${status} ${TITLES[status]}\r\n`), `${JSON.stringify(request.slice(0, 40))}: ${text.slice(0, 200)}`);
    const [answer, ...more] = parseRaw(text);
    assert.deepEqual(answer!.body, { code: status, title: TITLES[status], response: message });
    assert.equal(answer!.headers.connection, 'close');
    assert.match(String(answer!.headers['x-request-id']), /./);
    assertHardened(answer!, !plain, `the ${status}`);
    assert.deepEqual(more, []);
  }

  for (const host of INVALID_HOSTS) {
    test(`Host: ${host}, on a public path and with a key`, async () => {
      for (const request of [
        `GET /healthz HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
        `GET /v1/key HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${project.key}\r\n\r\n`,
      ]) {
        const { text } = await converse(service, [request]);
        const [answer, ...more] = parseRaw(text);
        assert.equal(answer?.status, 400, `${JSON.stringify(request)}: ${text}`);
        assert.deepEqual(answer!.body, { code: 400, title: TITLES[400], response: MESSAGES.malformedHttp });
        assert.equal(answer!.headers.connection, 'close');
        assertHardened(answer!, true, 'the 400');
        assert.deepEqual(more, []);
      }
      assertSuccess(await service.request('GET', '/v1/key/current', { key: project.key }), 200, 'the next request');
    });
  }

  test('no Host at all on HTTP/1.1 (RFC 9112: 400): the envelope\'s 400, not Node\'s bare one, on both listeners', async () => {
    for (const request of ['GET /healthz HTTP/1.1\r\n\r\n', `GET /v1/key/current HTTP/1.1\r\nAuthorization: Bearer ${project.key}\r\n\r\n`]) {
      const { text } = await converse(service, [request]);
      const [answer, ...more] = parseRaw(text);
      assert.equal(answer?.status, 400, `${JSON.stringify(request)}: ${text}`);
      assert.deepEqual(answer!.body, { code: 400, title: TITLES[400], response: MESSAGES.malformedHttp });
      assert.match(String(answer!.headers['x-request-id']), /./);
      assertHardened(answer!, true, 'the 400');
      assert.deepEqual(more, []);
    }
    const text = await plainExchange(service, 'GET /v1/key HTTP/1.1\r\n\r\n');
    const [plain] = parseRaw(text);
    assert.equal(plain?.status, 400, text);
    assert.deepEqual(plain!.body, { code: 400, title: TITLES[400], response: MESSAGES.malformedHttp });
    assertHardened(plain!, false, 'the plain 400');
  });

  test('a host name, an address, with or without a port, or no Host (HTTP/1.0): served by the request line', async () => {
    for (const host of ['localhost', 'localhost:8443', '127.0.0.1', '127.0.0.1:1', '[::1]', '[::1]:8443', 'api.example.com', 'under_score.internal']) {
      const { text } = await converse(service, [`GET /v1/key/current HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${project.key}\r\nConnection: close\r\n\r\n`]);
      const [answer] = parseRaw(text);
      assert.equal(answer?.status, 200, `Host: ${host}: ${text}`);
      assert.equal((answer!.body as { response: { id: string } }).response.id, project.keyId);
    }
    const { text } = await converse(service, [`GET /v1/key/current HTTP/1.0\r\nAuthorization: Bearer ${project.key}\r\n\r\n`]);
    assert.equal(parseRaw(text)[0]?.status, 200, text);
  });

  test('an expectation other than 100-continue is ignored, not answered with a bare 417', async () => {
    const reply = await service.request('GET', '/v1/key/current', { key: project.key, headers: { expect: 'something-else' } });
    assertSuccess(reply, 200, 'served as usual');
    assert.match(String(reply.headers['x-request-id']), /./);
  });

  test('pipelined after a sound request, it is answered after that request\'s answer', async () => {
    const { text } = await converse(service, [
      `GET /v1/key/current HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${project.key}\r\n\r\nGET /healthz HTTP/1.1\r\nHost: a b\r\n\r\n`,
    ]);
    const answers = parseRaw(text);
    assert.deepEqual(answers.map((a) => a.status), [200, 400], text);
    assert.equal((answers[0]!.body as { response: { object: string } }).response.object, 'api_key');
    assert.deepEqual(answers[1]!.body, { code: 400, title: TITLES[400], response: MESSAGES.malformedHttp });
  });

  test('two Host headers, the same or not: 400, the connection closed, on both listeners', async () => {
    for (const hosts of [['a', 'b'], ['localhost', 'localhost'], ['localhost', '']]) {
      const request = `GET /v1/key/current HTTP/1.1\r\n${hosts.map((h) => `Host: ${h}\r\n`).join('')}Authorization: Bearer ${project.key}\r\n\r\n`;
      await refused(request, 400, MESSAGES.malformedHttp);
      await refused(request, 400, MESSAGES.malformedHttp, true);
    }
  });

  test('the plain listener answers it the same way', async () => {
    const text = await plainExchange(service, 'GET /v1/key HTTP/1.1\r\nHost: a b\r\n\r\n');
    const [answer] = parseRaw(text);
    assert.equal(answer?.status, 400, text);
    assert.deepEqual(answer!.body, { code: 400, title: TITLES[400], response: MESSAGES.malformedHttp });
    assertHardened(answer!, false, 'the plain 400');
    assert.equal((await service.plainRequest('GET', '/v1/key')).status, 301);
  
  for (const [what, request] of [
    ['HTTP/2.0 (which the parser takes)', 'GET /healthz HTTP/2.0\r\nHost: localhost\r\n\r\n'],
    ['HTTP/1.2 (which the parser refuses)', 'GET /healthz HTTP/1.2\r\nHost: localhost\r\n\r\n'],
    ['HTTP/3.0', 'GET /healthz HTTP/3.0\r\nHost: localhost\r\n\r\n'],
    ['HTTP/0.9 (a request line without a version)', 'GET /healthz\r\n\r\n'],
    ["HTTP/2's connection preface", 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'],
  ] as const) {
    test(`${what}: 505 HTTP version not supported, on both listeners`, async () => {
      await refused(request, 505, MESSAGES.versionNotSupported);
      await refused(request, 505, MESSAGES.versionNotSupported, true);
    });
  }

  test('HTTP/1.0 and HTTP/1.1 are served', async () => {
    const { text } = await converse(service, [`GET /v1/key/current HTTP/1.0\r\nAuthorization: Bearer ${project.key}\r\n\r\n`]);
    assert.equal(parseRaw(text)[0]?.status, 200, text);
    assertSuccess(await service.request('GET', '/v1/key/current', { key: project.key }), 200, 'HTTP/1.1');
  });

  test('a header section over 16 KiB, in one header or many, or a request line as long: 431 Request headers too large', async () => {
    for (const request of [
      `GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'y'.repeat(17_000)}\r\n\r\n`,
      `GET /healthz HTTP/1.1\r\nHost: localhost\r\n${Array.from({ length: 400 }, (_, i) => `X-Many-${i}: ${'z'.repeat(40)}\r\n`).join('')}\r\n`,
      `GET /healthz?${'q'.repeat(17_000)} HTTP/1.1\r\nHost: localhost\r\n\r\n`,
    ]) {
      await refused(request, 431, MESSAGES.headersTooLarge);
      await refused(request, 431, MESSAGES.headersTooLarge, true);
    }
    assertSuccess(await service.request('GET', '/v1/key/current', { key: project.key }), 200, 'the next request');
  });
});
});

describe('requests that do not arrive in time: 408, then the connection is closed', () => {
  const HEADERS_TIMEOUT_MS = 600;
  const REQUEST_TIMEOUT_MS = 1500;
  let service: TestService;
  let project: TestProject;

  before(async () => {
    service = await TestService.start({
      jobWorkers: false,
      env: { HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS), REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) },
    });
    project = await service.createProject();
  });
  after(() => service.stop());

  test('a head that stops arriving', async () => {
    const { text, closedAfterMs } = await converse(service, ['GET /v1/key HTTP/1.1\r\n', 'Host: x\r\n']);
    const answers = parseRaw(text);
    assert.equal(answers.length, 1, text);
    assert.equal(answers[0]!.status, 408);
    assert.deepEqual(answers[0]!.body, { code: 408, title: 'Request Timeout', response: MESSAGES.requestTimeout });
    assertHardened(answers[0]!, true, 'the 408');
    assert.ok(closedAfterMs >= HEADERS_TIMEOUT_MS - 50 && closedAfterMs < HEADERS_TIMEOUT_MS + 3000, `closed after ${closedAfterMs} ms`);
  });

  test('a head that trickles, one byte at a time, is cut off all the same', async () => {
    const head = `GET /v1/key/current HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${project.key}\r\nX-Pad: ${'a'.repeat(200)}\r\n\r\n`;
    const { text } = await converse(service, [...head], 20);
    assert.equal(parseRaw(text)[0]?.status, 408, text);
  });

  test('a body that stops arriving', async () => {
    const { text, closedAfterMs } = await converse(service, [
      `POST /v1/key HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${project.key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`,
      '{"name":',
    ]);
    const answers = parseRaw(text);
    assert.equal(answers.length, 1, text);
    assert.deepEqual(answers[0]!.body, { code: 408, title: 'Request Timeout', response: MESSAGES.requestTimeout });
    assert.ok(closedAfterMs >= REQUEST_TIMEOUT_MS - 50 && closedAfterMs < REQUEST_TIMEOUT_MS + 3000, `closed after ${closedAfterMs} ms`);
  });

  test('a connection that never sends a request after its handshake is closed with the 408', async () => {
    const { text } = await converse(service, []);
    assert.equal(parseRaw(text)[0]?.status, 408, text);
  });

  test('a request in time is served as before', async () => {
    assertSuccess(await service.request('GET', '/v1/key/current', { key: project.key }), 200);
  });
});

describe('TLS handshakes that never finish', () => {
  const HANDSHAKE_TIMEOUT_MS = 500;
  const CONNECTIONS = 50;
  let service: TestService;

  before(async () => {
    service = await TestService.start({ jobWorkers: false, env: { TLS_HANDSHAKE_TIMEOUT_MS: String(HANDSHAKE_TIMEOUT_MS) } });
  });
  after(() => service.stop());

  test('silent connections and half handshakes are destroyed after the timeout, and their descriptors freed', async () => {
    const port = Number(new URL(service.baseUrl).port);
    const baseline = openDescriptors();
    const silent = Array.from({ length: CONNECTIONS }, () => silentConnection(port));
    // The first bytes of a TLS record header of a ClientHello, and then nothing.
    const half = Array.from({ length: CONNECTIONS }, () => {
      const connection = silentConnection(port);
      connection.socket.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
      return connection;
    });
    await sleep(100);
    assert.ok(openDescriptors() >= baseline + 2 * CONNECTIONS, 'the connections are open (both ends in this process)');
    const closedAfter = await Promise.all([...silent, ...half].map((c) => c.closed));
    assert.ok(Math.min(...closedAfter) >= HANDSHAKE_TIMEOUT_MS - 50, `closed after ${Math.min(...closedAfter)} ms`);
    assert.ok(Math.max(...closedAfter) < HANDSHAKE_TIMEOUT_MS + 2000, `closed after ${Math.max(...closedAfter)} ms`);
    await sleep(100);
    assert.ok(openDescriptors() <= baseline + 2, `descriptors ${openDescriptors()} after, ${baseline} before`);
  });

  test('a connection the client closes before its handshake is freed at once, not left in CLOSE-WAIT', async () => {
    const port = Number(new URL(service.baseUrl).port);
    const baseline = openDescriptors();
    const connections = Array.from({ length: CONNECTIONS }, () => silentConnection(port));
    await sleep(100);
    for (const { socket } of connections) socket.end();
    await Promise.all(connections.map((c) => c.closed));
    await sleep(100);
    assert.ok(openDescriptors() <= baseline + 2, `descriptors ${openDescriptors()} after, ${baseline} before`);
  });
});

describe('connection bounds', () => {
  let service: TestService;
  let project: TestProject;
  const PER_ADDRESS = 4;

  before(async () => {
    service = await TestService.start({ jobWorkers: false, env: { MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS) } });
    project = await service.createProject();
  });
  after(() => service.stop());

  test('past the per-address bound a new connection is closed at once, on either listener; below it, served again', async () => {
    const port = Number(new URL(service.baseUrl).port);
    const held = Array.from({ length: PER_ADDRESS }, () => silentConnection(port));
    await sleep(100);
    const refused = silentConnection(port);
    assert.ok(await refused.closed < 1000, 'the connection past the bound was closed at once');
    await assert.rejects(service.plainRequest('GET', '/healthz'), 'the plain listener counts towards the same bound');
    for (const { socket } of held) socket.destroy();
    await Promise.all(held.map((c) => c.closed));
    await sleep(50);
    assertSuccess(await service.request('GET', '/v1/key/current', { key: project.key }), 200);
  });

  test('the per-process bound holds whatever the address', async () => {
    const bounded = await TestService.start({ jobWorkers: false, env: { MAX_CONNECTIONS: '3', MAX_CONNECTIONS_PER_ADDRESS: '0' } });
    try {
      const port = Number(new URL(bounded.baseUrl).port);
      const held = Array.from({ length: 3 }, () => silentConnection(port));
      await sleep(100);
      assert.ok(await silentConnection(port).closed < 1000, 'the fourth connection was closed at once');
      for (const { socket } of held) socket.destroy();
      await Promise.all(held.map((c) => c.closed));
      await sleep(50);
      assertSuccess(await bounded.request('GET', '/healthz'), 200);
    } finally {
      await bounded.stop();
    }
  });
});

describe('pipelined requests at the default depth', () => {
  let service: TestService;

  before(async () => {
    service = await TestService.start({ jobWorkers: false });
  });
  after(() => service.stop());

  test('200 requests in one write are parsed as room frees up, and all answered in order', async () => {
    const requests = Array.from({ length: 200 }, (_, i) => `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: r${i}\r\n${i === 199 ? 'Connection: close\r\n' : ''}\r\n`).join('');
    const answers = parseRaw((await converse(service, [requests])).text);
    assert.equal(answers.length, 200);
    assert.deepEqual(answers.map((a) => a.headers['x-request-id']), Array.from({ length: 200 }, (_, i) => `r${i}`));
  });
});

describe('pipelined requests', () => {
  const DEPTH = 2;
  let service: TestService;

  before(async () => {
    service = await TestService.start({ jobWorkers: false, env: { MAX_PIPELINED_REQUESTS: String(DEPTH) } });
  });
  after(() => service.stop());

  const healthz = (close = false) => `GET /healthz HTTP/1.1\r\nHost: x\r\n${close ? 'Connection: close\r\n' : ''}\r\n`;

  test('up to twice the depth in one write: all answered, in order', async () => {
    const requests = Array.from({ length: 2 * DEPTH }, (_, i) => healthz(i === 2 * DEPTH - 1)).join('');
    const answers = parseRaw((await converse(service, [requests])).text);
    assert.equal(answers.length, 2 * DEPTH);
    for (const answer of answers) assert.deepEqual(answer.body, { code: 200, title: 'OK', response: { status: 'ok' } });
  });

  test('far more than one slice can hold at this depth: the connection is cut off', async () => {
    const requests = Array.from({ length: 50 }, () => healthz()).join('');
    const { text } = await converse(service, [requests]);
    assert.ok(parseRaw(text).length <= 2 * DEPTH, `answers: ${parseRaw(text).length}`);
  });
});

describe('requests in progress per client address', () => {
  const PER_ADDRESS = 2;
  /** Another client address: all of 127.0.0.0/8 is loopback on Linux. */
  const OTHER = '127.0.0.2';
  let service: TestService;
  let project: TestProject;

  before(async () => {
    service = await TestService.start({ jobWorkers: false, env: { MAX_REQUESTS_PER_ADDRESS: String(PER_ADDRESS) } });
    project = await service.createProject();
  });
  after(() => service.stop());

  const current = () => `GET /v1/key/current HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${project.key}\r\nConnection: close\r\n\r\n`;

  test('past the bound an address\'s request is not started until one of its own is answered; another address is served meanwhile', async () => {
    // The keys table locked: every key lookup waits in the database, a request in progress.
    const locker = new pg.Client({ connectionString: service.databaseUrl });
    await locker.connect();
    // Inside the locking transaction pg_stat_activity is read once and kept: cleared for each count.
    const waitingOnLock = async () => {
      await locker.query('SELECT pg_stat_clear_snapshot()');
      return Number((await locker.query(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).rows[0].n);
    };
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE');
      const requests = Array.from({ length: PER_ADDRESS + 1 }, () => converse(service, [current()], 0, 10_000, OTHER));
      // Each is on its way for a while (TLS, parsing, its lookup): wait for the bound's worth, then
      // a little longer, in which one more would show.
      await waitFor('lookups waiting on the lock', async () => ((await waitingOnLock()) >= PER_ADDRESS ? true : undefined), 10_000);
      await sleep(500);
      assert.equal(await waitingOnLock(), PER_ADDRESS, 'lookups waiting in the database: the address\'s bound, not one more');
      const started = Date.now();
      assertSuccess(await service.request('GET', '/healthz'), 200);
      // Held back, it would wait for the lock, which is not released until after this check.
      assert.ok(Date.now() - started < 2000, `the other address answered after ${Date.now() - started} ms`);
      await locker.query('COMMIT');
      for (const { text } of await Promise.all(requests)) assert.equal(parseRaw(text)[0]?.status, 200, text);
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
      await locker.end();
    }
  });

  test('an answer held back on purpose does not count: a 429 held past the refusal budget leaves room for the address\'s others', async () => {
    const held = await TestService.start({
      jobWorkers: false,
      env: { MAX_REQUESTS_PER_ADDRESS: '1', AUTH_REFUSALS_PER_MINUTE: '1', AUTH_REFUSAL_DELAY_MS: '2000' },
    });
    try {
      const guess = `GET /v1/key/current HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-project-${'a'.repeat(43)}\r\nConnection: close\r\n\r\n`;
      assert.equal(parseRaw((await converse(held, [guess])).text)[0]?.status, 403, 'the budget\'s one refusal');
      const guesses = [converse(held, [guess]), converse(held, [guess])];
      await sleep(200);
      const started = Date.now();
      assertSuccess(await held.request('GET', '/healthz'), 200);
      assert.ok(Date.now() - started < 1000, `the address's next request answered after ${Date.now() - started} ms`);
      for (const { text } of await Promise.all(guesses)) assert.equal(parseRaw(text)[0]?.status, 429, text);
    } finally {
      await held.stop();
    }
  });

  test('a body still arriving does not count: the address\'s others are served while it trickles', async () => {
    const slow = converse(service, [
      `POST /v1/key HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${project.key}\r\nContent-Type: application/json\r\nContent-Length: 20\r\nConnection: close\r\n\r\n`,
      '{"name":', '"trickled"', '} ',
    ], 600);
    const slower = converse(service, [
      `POST /v1/key HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${project.key}\r\nContent-Type: application/json\r\nContent-Length: 20\r\nConnection: close\r\n\r\n`,
      '{"name":', '"trickled"', '} ',
    ], 600);
    await sleep(300);
    const started = Date.now();
    assertSuccess(await service.request('GET', '/v1/key/current', { key: project.key }), 200);
    // Held back, it would wait ~1.5 s more, for the bodies' last pieces.
    assert.ok(Date.now() - started < 1000, `answered after ${Date.now() - started} ms beside ${PER_ADDRESS} bodies arriving`);
    for (const { text } of await Promise.all([slow, slower])) assert.equal(parseRaw(text)[0]?.status, 201, text);
  });

  test('an open event stream does not count: more streams than the bound, and requests beside them, are served', async () => {
    const streams = await Promise.all(Array.from({ length: PER_ADDRESS + 1 }, () => new Promise<tls.TLSSocket>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port: Number(new URL(service.baseUrl).port), ca: readFileSync(service.config.tlsCertFile!), servername: 'localhost' });
      socket.on('error', reject);
      socket.once('secureConnect', () => socket.write(`GET /v1/event/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${project.key}\r\n\r\n`));
      socket.once('data', (chunk: Buffer) => {
        assert.match(chunk.toString('latin1'), /^HTTP\/1\.1 200 /);
        resolve(socket);
      });
    })));
    try {
      for (let i = 0; i < PER_ADDRESS + 1; i++) assertSuccess(await service.request('GET', '/v1/key/current', { key: project.key }), 200);
    } finally {
      for (const socket of streams) socket.destroy();
    }
  });
});

describe('guessing keys: refused authentications are throttled per address', () => {
  const PER_MINUTE = 3;
  let service: TestService;
  let project: TestProject;
  let lookups: LookupCounter;

  const unknownKey = () => `sk-project-${randomBytes(32).toString('base64url').replace(/[-_]/g, 'a').slice(0, 43)}`;

  before(async () => {
    // The 429s are answered at once here; the held answer is the next test's.
    service = await TestService.start({ jobWorkers: false, env: { AUTH_REFUSALS_PER_MINUTE: String(PER_MINUTE), AUTH_REFUSAL_DELAY_MS: '0' } });
    project = await service.createProject();
    lookups = await LookupCounter.open(service.databaseUrl);
  });
  after(async () => {
    await lookups?.close();
    await service?.stop();
  });

  test('past the budget: 429 with Retry-After, without a lookup; a recognised key keeps working', async (t) => {
    // Recognised: this key has authenticated through this process before the guessing starts.
    assertSuccess(await service.request('GET', '/v1/key/current', { key: project.key }), 200);
    const second = await createKey(service, project.key, { name: 'recognised, then revoked' });
    assertSuccess(await service.request('GET', '/v1/key/current', { key: second.key }), 200);
    for (let i = 0; i < PER_MINUTE; i++) {
      assertError(await service.request('GET', '/v1/key/current', { key: unknownKey() }), 403, MESSAGES.refused, `refusal ${i + 1}`);
    }
    const before = lookups.available ? await lookups.count() : 0;
    let throttled: Reply | undefined;
    for (let i = 0; i < 20; i++) {
      throttled = await service.request('GET', '/v1/key/current', { key: unknownKey() });
      assertError(throttled, 429, MESSAGES.tooManyRefusals, `guess ${i + 1} past the budget`);
      assert.equal(throttled.headers['retry-after'], String(60 / PER_MINUTE), 'Retry-After: seconds until the budget allows one more');
    }
    if (lookups.available) assert.equal(await lookups.count(), before, 'the 429s made no database lookup');
    else t.diagnostic('pg_stat_statements is not available on this PostgreSQL: the lookup count was not checked');

    assertSuccess(await service.request('GET', '/v1/key/current', { key: project.key }), 200);
    assertError(await service.request('GET', '/v1/key'), 401, MESSAGES.noKey, 'no key at all is still 401');
    // A key this process has not seen succeed is refused like a guess while the address is over budget.
    const fresh = await service.createProject('Not yet seen');
    assertError(await service.request('GET', '/v1/key/current', { key: fresh.key }), 429, MESSAGES.tooManyRefusals, 'an unseen key');
    // Recognition never outlives the key: revoked, it is refused exactly as before, then forgotten.
    assertSuccess(await service.request('DELETE', `/v1/key/${second.id}`, { key: project.key }), 200);
    assertError(await service.request('GET', '/v1/key/current', { key: second.key }), 403, MESSAGES.refused, 'revoked, looked up');
    assertError(await service.request('GET', '/v1/key/current', { key: second.key }), 429, MESSAGES.tooManyRefusals, 'revoked, forgotten');
  });

  test('a value that cannot be a secret (another shape, a wrong checksum) is refused without a lookup and spends the budget like a guess', async (t) => {
    const strict = await TestService.start({ jobWorkers: false, env: { AUTH_REFUSALS_PER_MINUTE: '2', AUTH_REFUSAL_DELAY_MS: '0' } });
    const counter = await LookupCounter.open(strict.databaseUrl);
    try {
      const own = await strict.createProject();
      assertSuccess(await strict.request('GET', '/v1/key/current', { key: own.key }), 200);
      // The secret's last character is part of its checksum: another one breaks it.
      const wrongChecksum = `${own.key.slice(0, -1)}${own.key.endsWith('A') ? 'B' : 'A'}`;
      const before = counter.available ? await counter.count() : 0;
      assertError(await strict.request('GET', '/v1/key/current', { key: 'not-a-key' }), 403, MESSAGES.refused, 'another shape');
      assertError(await strict.request('GET', '/v1/key/current', { key: wrongChecksum }), 403, MESSAGES.refused, 'a wrong checksum');
      if (counter.available) assert.equal(await counter.count(), before, 'neither was looked up');
      else t.diagnostic('pg_stat_statements is not available on this PostgreSQL: the lookup count was not checked');
      for (const key of ['not-a-key', wrongChecksum, `sk-project-${'a'.repeat(43)}`]) {
        const reply = await strict.request('GET', '/v1/key/current', { key });
        assertError(reply, 429, MESSAGES.tooManyRefusals, `${key.slice(0, 16)}… past the budget of 2`);
        // 30 s for one refusal at 2 a minute; a second less if the run took one.
        assert.match(String(reply.headers['retry-after']), /^(29|30)$/, 'Retry-After: seconds until the budget allows one more');
      }
      assertSuccess(await strict.request('GET', '/v1/key/current', { key: own.key }), 200);
    } finally {
      await counter.close();
      await strict.stop();
    }
  });

  test('behind a trusted proxy the budget is per forwarded client address; a 429 is held a second before it is answered', async () => {
    const proxied = await TestService.start({ jobWorkers: false, env: { AUTH_REFUSALS_PER_MINUTE: '1', TRUST_PROXY: 'true' } });
    try {
      const from = (address: string) => ({ key: unknownKey(), headers: { 'x-forwarded-for': address } });
      assertError(await proxied.request('GET', '/v1/key', from('198.51.100.7')), 403, MESSAGES.refused);
      const started = Date.now();
      assertError(await proxied.request('GET', '/v1/key', from('198.51.100.7')), 429, MESSAGES.tooManyRefusals);
      assert.ok(Date.now() - started >= 950, `the 429 was held ${Date.now() - started} ms (AUTH_REFUSAL_DELAY_MS 1000)`);
      assertError(await proxied.request('GET', '/v1/key', from('203.0.113.9')), 403, MESSAGES.refused, 'another client');
      // The proxy appends the address it saw: what comes before it the client sent, and may vary at will.
      for (const sent of ['10.0.0.1', '10.0.0.2', 'ff', 'not an address'])
        assertError(await proxied.request('GET', '/v1/key', from(`${sent}, 198.51.100.7`)), 429, MESSAGES.tooManyRefusals, `${sent}, 198.51.100.7`);
      // As proxies also write it: with the port it came from, an IPv6 address in brackets.
      assertError(await proxied.request('GET', '/v1/key', from('198.51.100.7:50123')), 429, MESSAGES.tooManyRefusals, 'with its port');
      assertError(await proxied.request('GET', '/v1/key', from('[2001:db8::7]:443')), 403, MESSAGES.refused, 'an IPv6 client');
      assertError(await proxied.request('GET', '/v1/key', from('[2001:db8::7]')), 429, MESSAGES.tooManyRefusals, 'the same IPv6 client');
    } finally {
      await proxied.stop();
    }
  });
});
