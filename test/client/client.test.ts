// The typed client (client/index.ts) against the real service over real HTTPS: one method per
// endpoint, typed results, ApiError with the envelope's members and the request id, lists as
// async iterators over limit/offset, and TLS with the service's self-signed certificate.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { ApiError, Client, ROUTES, type ApiKeyWithSecret, type App } from '../../client/index.ts';
import { ENDPOINTS } from '../../workers/endpoints/registry.ts';
import { appBody } from '../apps/helpers.ts';
import { MESSAGES } from '../support/assertions.ts';
import { TestService, type TestProject } from '../support/service.ts';

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
