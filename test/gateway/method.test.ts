// Step 2 of decisions.md: any method but GET, POST, PATCH, DELETE, HEAD and OPTIONS is 405 on
// every path, before the key is looked at.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { after, before, test } from 'node:test';
import { MESSAGES } from '../support/assertions.ts';
import { TestService, type Reply, type TestProject } from '../support/service.ts';
import { assertError } from './helpers.ts';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start({ jobWorkers: false });
  project = await service.createProject();
});
after(() => service.stop());

const REFUSED_METHODS = ['PUT', 'TRACE', 'PROPFIND', 'PROPPATCH', 'MKCOL', 'COPY', 'MOVE', 'LOCK', 'UNLOCK', 'PURGE', 'SEARCH', 'REPORT'];
const PATHS = [
  '/v1/key',
  '/v1/key/current',
  '/v1/key/papi_00000000000000000000',
  '/v1/app/detail/mapp_00000000000000000000',
  '/v1/event',
  '/v1/run/run_00000000000000000000',
  '/v1/run-usage/summary',
  '/v1/no/such/path?x=1',
  '/healthz',
  '/',
];

test('a method the gateway never accepts is 405 on any path, with a valid key', async () => {
  for (const method of REFUSED_METHODS) {
    for (const path of PATHS) {
      const reply = await service.request(method, path, { key: project.key });
      assertError(reply, 405, MESSAGES.methodNotAllowed, `${method} ${path}`);
    }
  }
});

test('405 comes before authentication: no key, a non-Bearer header, an unknown key', async () => {
  for (const method of REFUSED_METHODS) {
    for (const path of ['/v1/key', '/v1/unknown']) {
      assertError(await service.request(method, path), 405, MESSAGES.methodNotAllowed, `${method} ${path}, no key`);
      assertError(await service.request(method, path, { headers: { authorization: 'Basic Zm9vOmJhcg==' } }),
        405, MESSAGES.methodNotAllowed, `${method} ${path}, Basic`);
      assertError(await service.request(method, path, { key: 'sk-project-nosuchkey' }),
        405, MESSAGES.methodNotAllowed, `${method} ${path}, unknown key`);
    }
  }
});

test('PUT with a JSON body is still 405, even to a path that takes POST', async () => {
  const reply = await service.request('PUT', '/v1/key', { key: project.key, body: { name: 'put' } });
  assertError(reply, 405, MESSAGES.methodNotAllowed);
  const { rows } = await service.db.query("SELECT count(*)::int AS n FROM api_keys WHERE name = 'put'");
  assert.equal(rows[0].n, 0, 'nothing was created');
});

/**
 * CONNECT written by hand: Node's HTTP client hands any answer to CONNECT over as a tunnel rather
 * than a response. Resolves with the parsed answer, or with the reason there was none.
 */
async function connectRequest(path: string, headers: Record<string, string>): Promise<Reply | string> {
  const raw = net.connect(Number(new URL(service.baseUrl).port), '127.0.0.1');
  raw.on('error', () => {});
  await new Promise((resolve) => raw.once('connect', resolve));
  const socket = tls.connect({ socket: raw, servername: 'localhost', ca: readFileSync(service.config.tlsCertFile!) });
  socket.on('error', () => {});
  let received = Buffer.alloc(0);
  const outcome = await new Promise<Reply | string>((resolve) => {
    const timer = setTimeout(() => resolve('no answer within 3000 ms'), 3000);
    const parse = (): Reply | undefined => {
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return undefined;
      const [statusLine, ...lines] = received.subarray(0, end).toString('latin1').split('\r\n');
      const parsedHeaders: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        parsedHeaders[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const text = received.subarray(end + 4).toString('utf8');
      if (Buffer.byteLength(text) < Number(parsedHeaders['content-length'] ?? 0)) return undefined;
      let body: unknown;
      try { body = JSON.parse(text); } catch { body = undefined; }
      return { status: Number(statusLine!.split(' ')[1]), headers: parsedHeaders, text, body };
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const reply = parse();
      if (reply) { clearTimeout(timer); resolve(reply); }
    });
    socket.on('close', () => { clearTimeout(timer); resolve(parse() ?? `the connection was closed without an answer (${received.length} bytes received)`); });
    socket.write(`CONNECT ${path} HTTP/1.1\r\nHost: localhost\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`);
  });
  if (typeof outcome === 'string') raw.resetAndDestroy();
  else socket.destroy();
  return outcome;
}

test('CONNECT is a method the gateway never accepts: 405, not a dropped connection', async () => {
  const variants: Array<Record<string, string>> = [{ authorization: `Bearer ${project.key}` }, {}];
  for (const headers of variants) {
    const reply = await connectRequest('/v1/key', headers);
    assert.notEqual(typeof reply, 'string', `CONNECT ${headers.authorization ? 'with' : 'without'} a key: ${reply as string}`);
    assertError(reply as Reply, 405, MESSAGES.methodNotAllowed);
  }
});

test('the accepted methods are not refused with 405 (they reach authentication)', async () => {
  for (const method of ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS']) {
    assertError(await service.request(method, '/v1/key'), 401, MESSAGES.noKey, method);
  }
  const head = await service.request('HEAD', '/v1/key');
  assert.equal(head.status, 401, 'HEAD reaches authentication');
  assert.equal(head.text, '', 'HEAD has no body');
});
