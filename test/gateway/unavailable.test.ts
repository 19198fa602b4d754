// decisions.md, Operations: a database that cannot be reached answers 503 `Service temporarily
// unavailable. Please retry.` with Retry-After, quickly, never a hang and never a 500; /readyz
// says so too while /healthz (the process alone) stays 200.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { MESSAGES } from '../support/assertions.ts';
import { TestService, type Reply, type TestProject } from '../support/service.ts';
import { assertError, assertSuccess } from './helpers.ts';

// A loopback port nothing listens on: connections are refused at once.
const UNREACHABLE = 'postgres://x:y@127.0.0.1:1/none';
const PROMPT_MS = 5000;

let healthy: TestService;
let broken: TestService;
let silent: TestService;
let project: TestProject;
// A "database" that accepts connections and then never says a word.
const blackHole = net.createServer((socket) => { sockets.add(socket); socket.on('close', () => sockets.delete(socket)); });
const sockets = new Set<net.Socket>();

before(async () => {
  healthy = await TestService.start({ jobWorkers: false });
  project = await healthy.createProject();
  broken = await TestService.start({ jobWorkers: false, databaseUrl: UNREACHABLE });
  await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
  const { port } = blackHole.address() as net.AddressInfo;
  silent = await TestService.start({ jobWorkers: false, databaseUrl: `postgres://x:y@127.0.0.1:${port}/none` });
});
after(async () => {
  await broken?.stop();
  for (const socket of sockets) socket.destroy();
  await silent?.stop();
  blackHole.close();
  await healthy?.stop();
});

async function timed(call: () => Promise<Reply>): Promise<[Reply, number]> {
  const started = Date.now();
  const reply = await call();
  return [reply, Date.now() - started];
}

function assertUnavailable(reply: Reply, ms: number, what: string): void {
  assertError(reply, 503, MESSAGES.unavailable, what);
  const retryAfter = reply.headers['retry-after'];
  assert.ok(typeof retryAfter === 'string' && /^[1-9][0-9]*$/.test(retryAfter), `${what}: Retry-After in seconds, got ${retryAfter}`);
  assert.ok(ms < PROMPT_MS, `${what}: answered in ${ms} ms`);
}

test('an authenticated request while the database is unreachable: 503 with Retry-After, promptly', async () => {
  for (const [method, path, body] of [
    ['GET', '/v1/key/current', undefined],
    ['GET', '/v1/event', undefined],
    ['POST', '/v1/key', { name: 'x' }],
    ['GET', '/v1/nothing-here', undefined],
  ] as const) {
    const [reply, ms] = await timed(() => broken.request(method, path, { key: project.key, body }));
    assertUnavailable(reply, ms, `${method} ${path}`);
  }
});

test('an unknown key cannot be told from a known one while the database is away: 503, not 403', async () => {
  // A secret's shape (43 base62 characters, as secrets made before checksums are): only a lookup can tell.
  const [reply, ms] = await timed(() => broken.request('GET', '/v1/key', { key: `sk-project-${'NoSuchKey0'.repeat(4)}abc` }));
  assertUnavailable(reply, ms, 'unknown key');
});

test('a bearer value that cannot be a secret is refused without the database: 403', async () => {
  assertError(await broken.request('GET', '/v1/key', { key: 'sk-project-nosuchkey' }), 403, MESSAGES.refused, 'malformed key');
});

test('the checks before authentication need no database', async () => {
  assertError(await broken.request('GET', '/v1/key'), 401, MESSAGES.noKey, 'no key');
  assertError(await broken.request('PUT', '/v1/key', { key: project.key }), 405, MESSAGES.methodNotAllowed, 'PUT');
  const plain = await broken.plainRequest('GET', '/v1/key');
  assert.equal(plain.status, 301);
});

test('/readyz answers 503 while the database is unreachable', async () => {
  const [reply, ms] = await timed(() => broken.request('GET', '/readyz'));
  assertUnavailable(reply, ms, '/readyz');
});

test('/healthz answers 200 while the database is unreachable', async () => {
  const [reply, ms] = await timed(() => broken.request('GET', '/healthz'));
  assertSuccess(reply, 200);
  assert.ok(ms < PROMPT_MS);
});

test('the same requests against the reachable database succeed', async () => {
  assertSuccess(await healthy.request('GET', '/v1/key/current', { key: project.key }), 200, 'GET /v1/key/current');
  assertSuccess(await healthy.request('GET', '/readyz'), 200, '/readyz');
});

test('a database that accepts connections but never answers: 503 within a few seconds, not a hang', async () => {
  const [reply, ms] = await timed(() => silent.request('GET', '/v1/key/current', { key: project.key }));
  assertUnavailable(reply, ms, 'silent database');
  const [ready, readyMs] = await timed(() => silent.request('GET', '/readyz'));
  assertUnavailable(ready, readyMs, 'silent database, /readyz');
  assertSuccess(await silent.request('GET', '/healthz'), 200, 'silent database, /healthz');
});
