// A request asking to switch protocols (websocket, h2c) is still an HTTP request: same checks, same
// envelope with X-Request-Id, promptly; a client giving up on it must not take the process down.
// Each request has its own socket, reset (RST) when no answer comes so none holds up shutdown.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import { after, before, test } from 'node:test';
import { MESSAGES } from '../support/assertions.ts';
import { readReply, TestService, type Reply, type TestProject } from '../support/service.ts';
import { sleep } from '../support/wait.ts';
import { assertError, assertGatewayNotFound, assertSuccess } from './helpers.ts';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start({ jobWorkers: false });
  project = await service.createProject();
});
after(() => service.stop());

const WEBSOCKET = { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' };
const H2C = { connection: 'Upgrade, HTTP2-Settings', upgrade: 'h2c', 'http2-settings': 'AAMAAABkAARAAAAAAAIAAAAA' };
const ANSWER_MS = 3000;

/** The reply, or undefined when none came within ANSWER_MS (and then the socket is reset). */
async function upgradeRequest(options: { plain?: boolean; path: string; headers: Record<string, string> }): Promise<Reply | undefined> {
  const port = Number(new URL(options.plain ? service.httpUrl : service.baseUrl).port);
  const raw = net.connect(port, '127.0.0.1');
  raw.on('error', () => {});
  await new Promise((resolve) => raw.once('connect', resolve));
  const ca = readFileSync(service.config.tlsCertFile!);
  const connection = options.plain ? raw : tls.connect({ socket: raw, servername: 'localhost', ca });
  connection.on('error', () => {});
  let reply: Reply | undefined;
  const req = http.request({ method: 'GET', path: options.path, headers: { host: 'localhost', ...options.headers }, createConnection: () => connection });
  try {
    reply = await new Promise<Reply | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), ANSWER_MS);
      req.on('error', () => {});
      req.on('upgrade', (res) => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: '', body: undefined });
      });
      req.on('response', (res) => {
        readReply(res).then((answer) => { clearTimeout(timer); resolve(answer); }, () => {});
      });
      req.end();
    });
    return reply;
  } finally {
    if (reply) raw.destroy();
    else raw.resetAndDestroy();
  }
}

function answered(reply: Reply | undefined, what: string): Reply {
  assert.ok(reply, `${what}: no answer within ${ANSWER_MS} ms (the gateway left the Upgrade request hanging)`);
  return reply;
}

test('an Upgrade request over HTTPS without a key is answered 401', async () => {
  for (const headers of [WEBSOCKET, H2C]) {
    const reply = answered(await upgradeRequest({ path: '/v1/key', headers }), headers.upgrade);
    assertError(reply, 401, MESSAGES.noKey, headers.upgrade);
  }
});

test('an Upgrade request over HTTPS with a key is answered like any GET', async () => {
  for (const headers of [WEBSOCKET, H2C]) {
    const reply = answered(await upgradeRequest({
      path: '/v1/key/current', headers: { ...headers, authorization: `Bearer ${project.key}` },
    }), headers.upgrade);
    assertSuccess(reply, 200, headers.upgrade);
    assert.equal(reply.body.response.id, project.keyId);
  }
});

test('an Upgrade request over HTTPS to an unknown path gets the gateway 404', async () => {
  const reply = answered(await upgradeRequest({ path: '/socket', headers: { ...WEBSOCKET, authorization: `Bearer ${project.key}` } }), 'websocket');
  assertGatewayNotFound(reply);
});

test('an Upgrade request over plain HTTP gets the 301, and a client giving up on it does not crash the process', async () => {
  const crashes: Error[] = [];
  const onCrash = (err: Error) => crashes.push(err);
  process.on('uncaughtException', onCrash);
  let reply: Reply | undefined;
  try {
    reply = await upgradeRequest({ plain: true, path: '/v1/key?x=1', headers: WEBSOCKET });
    // Give a socket error raised by a reset the time to surface.
    await sleep(300);
  } finally {
    process.removeListener('uncaughtException', onCrash);
  }
  assert.deepEqual(crashes.map((err) => err.message), [], 'the reset socket raised an unhandled error (the web process would exit)');
  reply = answered(reply, 'plain websocket');
  assertError(reply, 301, MESSAGES.movedPermanently);
  assert.equal(reply.headers.location, `${service.baseUrl}/v1/key?x=1`);
});

/**
 * A TLS connection offering these application protocols (ALPN), with one request sent as
 * `version` once it is up: the protocol the service chose and the raw answer, or the handshake's
 * error code.
 */
function negotiate(offered: string[], version: string): Promise<{ chosen: string | false | null; text: string } | { error: string }> {
  return new Promise((resolve) => {
    const socket = tls.connect({
      host: '127.0.0.1', port: Number(new URL(service.baseUrl).port), servername: 'localhost',
      ca: readFileSync(service.config.tlsCertFile!), ALPNProtocols: offered,
    });
    let text = '';
    socket.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    socket.once('secureConnect', () => {
      socket.write(`GET /v1/key/current ${version}\r\nHost: localhost\r\nAuthorization: Bearer ${project.key}\r\nConnection: close\r\n\r\n`);
    });
    socket.on('data', (chunk: Buffer) => { text += chunk.toString('utf8'); });
    socket.on('end', () => resolve({ chosen: socket.alpnProtocol, text }));
  });
}

test('ALPN: a client offering http/1.0 (curl --http1.0) or http/1.1 is served in it; one offering only h2 is refused in the handshake', async () => {
  const cases: Array<[string[], string, string]> = [[['http/1.1'], 'HTTP/1.1', 'http/1.1'], [['http/1.0'], 'HTTP/1.0', 'http/1.0'], [['h2', 'http/1.1'], 'HTTP/1.1', 'http/1.1']];
  for (const [offered, version, chosen] of cases) {
    const outcome = await negotiate(offered, version);
    assert.ok('chosen' in outcome, `${offered.join(',')}: ${JSON.stringify(outcome)}`);
    assert.equal(outcome.chosen, chosen, offered.join(','));
    assert.match(outcome.text, /^HTTP\/1\.1 200 OK\r\n/, offered.join(','));
    assert.equal(JSON.parse(outcome.text.slice(outcome.text.indexOf('\r\n\r\n') + 4)).code, 200);
  }
  assert.deepEqual(await negotiate(['h2'], 'HTTP/1.1'), { error: 'ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL' });
});

test('the gateway still answers after the Upgrade requests', async () => {
  assertSuccess(await service.request('GET', '/v1/key/current', { key: project.key }), 200);
});
