// The typed client against the real service over real HTTPS, as node.ts sends it (index.ts's
// Client over node:https): one method per endpoint, typed results, ApiError with the envelope's
// members and the request id, lists as async iterators over limit/offset, and TLS with the
// service's self-signed certificate. test/client/package.test.ts runs the global fetch's way.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { ApiError, Client, NotAnApiAnswer, ROUTES, type ApiKeyWithSecret, type App } from '../../client/node.ts';
import { ENDPOINTS } from '../../gateway/endpoints/registry.ts';
import { appBody } from '../apps/helpers.ts';
import { MESSAGES } from '../support/assertions.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { stubServer } from '../support/stub-server.ts';
import { sleep, waitFor } from '../support/wait.ts';

let service: TestService;
let project: TestProject;
let client: Client;

before(async () => {
  service = await TestService.start();
  project = await service.createProject();
  client = new Client({ baseUrl: service.baseUrl, apiKey: project.key, ca: readFileSync(service.config.tlsCertFile!) });
});

after(async () => {
  client?.close();
  await service?.stop();
});

async function failure(promise: Promise<unknown>): Promise<ApiError> {
  const err = await promise.then(() => assert.fail('expected a failure'), (e: unknown) => e);
  assert.ok(err instanceof ApiError, String(err));
  return err;
}

test('the client has a route for every endpoint of the registry, with its method and path', () => {
  assert.deepEqual(
    Object.fromEntries(Object.entries(ENDPOINTS).map(([name, e]) => [name, { method: e.method, path: e.path }])),
    ROUTES,
  );
});

test('keys: create, current, get, list, revoke; results typed as the registry says', async () => {
  const created: ApiKeyWithSecret = await client.keys.create({ name: 'from the client', scope: ['key:read'] });
  assert.match(created.key, /^sk-project-/);
  assert.equal(created.object, 'api_key');
  assert.equal((await client.keys.current()).id, project.keyId);
  assert.equal((await client.keys.get(created.id)).name, 'from the client');
  const page = await client.keys.list({ limit: 1 });
  assert.equal(page.data.length, 1);
  assert.equal(page.total, 2);
  assert.deepEqual(await client.keys.revoke(created.id), { deleted: true, id: created.id });
});

test('failures: ApiError with the envelope\'s code, title, message, the status and the request id', async () => {
  const missing = await failure(client.keys.get('papi_00000000000000000000'));
  assert.equal(missing.code, 404);
  assert.equal(missing.status, 404);
  assert.equal(missing.title, 'Not Found');
  assert.equal(missing.message, MESSAGES.keyNotFound);
  assert.match(missing.requestId ?? '', /^[0-9a-f-]{36}$/);

  const invalid = await failure(client.keys.create({ name: '' }));
  assert.deepEqual([invalid.code, invalid.title, invalid.message], [422, 'Unprocessable entity', 'name is required.']);

  const stranger = new Client({ baseUrl: service.baseUrl, apiKey: 'sk-project-unknown', ca: readFileSync(service.config.tlsCertFile!) });
  try {
    const refused = await failure(stranger.keys.current());
    assert.deepEqual([refused.code, refused.message], [403, MESSAGES.refused]);
  } finally {
    stranger.close();
  }
});

test('lists page with limit/offset as async iterators, every record once', async () => {
  const made: string[] = [];
  for (let i = 0; i < 7; i++) made.push((await client.keys.create({ name: `iterated ${i}` })).id);
  const seen: string[] = [];
  for await (const key of client.keys.iterate(3)) seen.push(key.id);
  assert.equal(new Set(seen).size, seen.length, 'no key twice');
  for (const id of made) assert.ok(seen.includes(id), `${id} was listed`);
  assert.equal(seen.length, (await client.keys.list()).total);
});

test('apps and events through the client', async () => {
  const created = await client.apps.create(appBody({ name: 'Client app' }) as never);
  assert.equal(created.object, 'app');
  const app: App = await client.apps.get(created.id);
  assert.equal(app.data.length, 1);
  // Typed to their members, as the registry's schema gives them.
  const field: { name: string; type: string; placeholder: string; required: boolean } = app.data[0]!;
  assert.equal(field.name, created.data[Object.keys(created.data)[0]!]!.value);
  const instruction: string = app.instruction![0]!.instruction;
  assert.equal(typeof instruction, 'string');
  const status: 'draft' | 'activated' = app.status;
  assert.equal(status, 'activated');
  // @ts-expect-error the event stream answers no envelope: events.follow reads it, call() does not take it
  assert.equal(typeof (() => client.call('eventStream')), 'function');
  assert.equal((await client.apps.update(created.id, { name: 'Renamed' })).name, 'Renamed');
  const names: string[] = [];
  for await (const entry of client.apps.iterate(1)) names.push(entry.name);
  assert.deepEqual(names, ['Renamed']);
  assert.deepEqual(await client.apps.delete(created.id), { deleted: true, id: created.id });
  assert.equal((await failure(client.apps.get(created.id))).message, MESSAGES.appNotFound);

  await service.waitForJobsDrained();
  const feed = await client.events.list();
  assert.ok(feed.total >= 3);
  const newest = feed.data[0]!;
  assert.equal((await client.events.get(newest.id)).id, newest.id);
});

test('events.follow: the trail live as an async iterator, from a sequence on, in order', async () => {
  await service.waitForJobsDrained();
  const { total } = await client.events.list();
  const controller = new AbortController();
  const seen: number[] = [];
  const following = (async () => {
    for await (const event of client.events.follow({ after: total - 2, signal: controller.signal })) {
      seen.push(event.sequence);
      if (seen.length === 3) controller.abort();
    }
  })();
  await client.keys.create({ name: 'followed', scope: ['key:read'] });
  await following;
  assert.deepEqual(seen, [total - 1, total, total + 1]);
  const wrong = await failure((async () => { for await (const _ of client.events.follow({ types: ['key.renamed'] })) break; })());
  assert.deepEqual([wrong.code, wrong.message], [422, 'Unknown event type: key.renamed.']);
});

test('TLS: a self-signed certificate is refused unless trusted with `ca` (or, for tests, rejectUnauthorized: false)', async () => {
  const untrusting = new Client({ baseUrl: service.baseUrl, apiKey: project.key });
  const lax = new Client({ baseUrl: service.baseUrl, apiKey: project.key, rejectUnauthorized: false });
  try {
    await assert.rejects(untrusting.keys.current(), (err: NodeJS.ErrnoException) => /self-signed|SELF_SIGNED|unable to verify/i.test(`${err.code} ${err.message}`));
    assert.equal((await lax.keys.current()).id, project.keyId);
  } finally {
    untrusting.close();
    lax.close();
  }
});

/** A client of a stub that sends each call once: what one answer does (retries: retries.test.ts). */
const stubClient = (baseUrl: string, timeoutMs?: number) =>
  new Client({ baseUrl, apiKey: project.key, ca: readFileSync(service.config.tlsCertFile!), maxRetries: 0, ...(timeoutMs ? { timeoutMs } : {}) });

test('an answer that is not this API\'s envelope rejects with NotAnApiAnswer, and never throws past the caller', async () => {
  for (const [status, body] of [[200, 'null'], [500, 'null'], [200, '{"error":1}'], [502, '<html>bad gateway</html>'], [200, ''], [200, '"text"']] as const) {
    const stub = await stubServer((_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(body);
    });
    const odd = stubClient(stub.baseUrl);
    try {
      const err = await odd.keys.current().then(() => assert.fail(`${status} ${body}: expected a failure`), (e: unknown) => e);
      assert.ok(err instanceof NotAnApiAnswer, `${status} ${body}: ${String(err)}`);
      assert.equal(err.status, status);
      assert.equal(err.message, `Not an answer of this API: ${body}`);
    } finally {
      odd.close();
      await stub.close();
    }
  }
});

test('a body cut off mid-answer rejects with NotAnApiAnswer, its cause what cut it', async () => {
  const stub = await stubServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
    res.write('{"code":200,"title":"OK","resp');
    setTimeout(() => res.socket?.destroy(), 50);
  });
  const cut = stubClient(stub.baseUrl);
  try {
    const err = await cut.keys.current().then(() => assert.fail('expected a failure'), (e: unknown) => e);
    assert.ok(err instanceof NotAnApiAnswer, String(err));
    assert.equal(err.status, 200);
    assert.match(err.message, /^Not an answer of this API: the answer was cut off \(/);
    assert.ok(err.cause instanceof Error);
  } finally {
    cut.close();
    await stub.close();
  }
});

test('a path parameter stays one segment (`/`, `?`, `#`, `%` encoded); `.`, `..` and nothing, which name other paths, are refused unsent', async () => {
  const stub = await stubServer((_req, res) => {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"code":404,"title":"Not Found","response":"x"}');
  });
  const recording = stubClient(stub.baseUrl);
  try {
    await failure(recording.keys.revoke('a/b?c#d%'));
    for (const [call, text] of [[() => recording.keys.get('.'), 'key_id must be an identifier, not "."'], [() => recording.apps.update('..', { name: 'n' }), 'app_id must be an identifier, not ".."'], [() => recording.events.get(''), 'event_id must be an identifier, not ""']] as const) {
      await assert.rejects(call(), (err: Error) => err instanceof RangeError && err.message === text);
    }
    assert.deepEqual(stub.urls, ['/v1/key/a%2Fb%3Fc%23d%25']);
  } finally {
    recording.close();
    await stub.close();
  }
});

test('timeoutMs bounds each attempt, however slowly its answer trickles in', async () => {
  const stub = await stubServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const drip = setInterval(() => res.write(' '), 100);
    res.on('close', () => clearInterval(drip));
  });
  const slow = stubClient(stub.baseUrl, 600);
  try {
    const started = Date.now();
    await assert.rejects(slow.keys.current(), /no answer within 600 ms/);
    assert.ok(Date.now() - started < 2000, `gave up after ${Date.now() - started} ms`);
  } finally {
    slow.close();
    await stub.close();
  }
});

test('events.follow decodes a character split between two chunks whole', async () => {
  const event = { id: 'evnt_00000000000000000001', object: 'event', sequence: 1, details: { name: 'é€'.repeat(50) } };
  const frame = Buffer.from(`id: 1\nevent: key.created\ndata: ${JSON.stringify(event)}\n\n`, 'utf8');
  const cut = frame.indexOf(Buffer.from('€', 'utf8')) + 1;
  const stub = await stubServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(frame.subarray(0, cut));
    setTimeout(() => res.write(frame.subarray(cut)), 50);
  });
  const streaming = stubClient(stub.baseUrl);
  const controller = new AbortController();
  try {
    for await (const received of streaming.events.follow({ after: 0, signal: controller.signal })) {
      assert.deepEqual(received, event);
      controller.abort();
    }
  } finally {
    streaming.close();
    await stub.close();
  }
});

test('events.follow without `after`, cut before its first event, misses nothing of what came meanwhile', async () => {
  await service.waitForJobsDrained();
  // A connection the test can cut: a TCP relay to the service.
  const sockets = new Set<net.Socket>();
  const relay = net.createServer((inbound) => {
    const outbound = net.connect(Number(new URL(service.baseUrl).port), '127.0.0.1');
    for (const socket of [inbound, outbound]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => sockets.delete(socket));
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const relayed = new Client({ baseUrl: `https://localhost:${(relay.address() as AddressInfo).port}`, apiKey: project.key, ca: readFileSync(service.config.tlsCertFile!) });
  const controller = new AbortController();
  const names: string[] = [];
  try {
    const iterator = relayed.events.follow({ types: ['key.created'], signal: controller.signal, retryMs: 200 });
    const first = iterator.next();
    await waitFor('a connection through the relay', async () => (sockets.size >= 2 ? true : undefined));
    await sleep(300);
    for (const socket of sockets) socket.destroy();
    for (const name of ['made while cut 1', 'made while cut 2']) await client.keys.create({ name, scope: ['key:read'] });
    await client.keys.create({ name: 'made after', scope: ['key:read'] });
    names.push(((await first).value as any).details.name);
    for await (const event of iterator) {
      names.push((event as any).details.name);
      if (names.length === 3) controller.abort();
    }
    assert.deepEqual(names, ['made while cut 1', 'made while cut 2', 'made after']);
  } finally {
    controller.abort();
    relayed.close();
    await new Promise((resolve) => relay.close(resolve));
  }
});

test('events.follow ends with the error when the certificate is not trusted, instead of retrying for good', async () => {
  const untrusting = new Client({ baseUrl: service.baseUrl, apiKey: project.key });
  try {
    const follow = (async () => { for await (const _ of untrusting.events.follow({ after: 0 })) break; })();
    await assert.rejects(follow, (err: NodeJS.ErrnoException) => /self-signed|SELF_SIGNED|unable to verify/i.test(`${err.code} ${err.message}`));
  } finally {
    untrusting.close();
  }
});

test('events.follow waits out a proxy\'s 502 page and a connection gone silent, and resumes by its last id', async () => {
  const event = { id: 'evnt_00000000000000000008', object: 'event', sequence: 8 };
  const lastIds: Array<string | undefined> = [];
  const stub = await stubServer((req, res) => {
    lastIds.push(req.headers['last-event-id'] as string | undefined);
    if (lastIds.length === 1) {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html>502 Bad Gateway</html>');
    } else {
      // Its head sent at once: else the second stream is never opened, and ends by timeoutMs (30 s), not idleMs.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      // The second stream says nothing at all: the client must give it up and open a third.
      if (lastIds.length >= 3) res.write(`id: 8\nevent: key.created\ndata: ${JSON.stringify(event)}\n\n`);
    }
  });
  const following = stubClient(stub.baseUrl);
  const controller = new AbortController();
  try {
    for await (const received of following.events.follow({ after: 7, signal: controller.signal, retryMs: 100, idleMs: 300 })) {
      assert.deepEqual(received, event);
      controller.abort();
    }
    assert.deepEqual(lastIds, ['7', '7', '7']);
  } finally {
    following.close();
    await stub.close();
  }
});
