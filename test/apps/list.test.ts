import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertError, assertSuccess } from '../support/assertions.ts';
import { ID } from '../support/ids.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { nowSeconds } from '../support/wait.ts';
import { backdateApp, createApp, MODELS } from './helpers.ts';

let service: TestService;

before(async () => {
  service = await TestService.start();
});
after(() => service.stop());

const LIST_MEMBERS = ['id', 'object', 'name', 'description', 'type', 'status', 'model', 'model_library', 'runs', 'tokens', 'created_at', 'updated_at'];
const list = async (p: TestProject, query = '') => assertSuccess(await service.request('GET', `/v1/app/list${query}`, { key: p.key }));

test('an empty project lists no apps', async () => {
  const p = await service.createProject('Empty');
  assert.deepEqual(await list(p), { object: 'list', data: [], total: 0 });
});

test('entries carry exactly the list members, newest first', async () => {
  const p = await service.createProject('Shapes');
  const oldest = await createApp(service, p.key, { name: 'oldest', description: 'd1' });
  const middle = await createApp(service, p.key, { name: 'middle', description: 'd2', status: 'draft', category: 'coding' });
  const newest = await createApp(service, p.key, { name: 'newest', description: 'd3', type: 'public' });
  const at = {
    [oldest.id]: await backdateApp(service, oldest.id, 300),
    [middle.id]: await backdateApp(service, middle.id, 200),
    [newest.id]: await backdateApp(service, newest.id, 100),
  };

  const result = await list(p);
  assert.deepEqual(Object.keys(result), ['object', 'data', 'total']);
  assert.equal(result.object, 'list');
  assert.equal(result.total, 3);
  assert.deepEqual(result.data.map((e: any) => e.name), ['newest', 'middle', 'oldest']);
  for (const entry of result.data) {
    assert.deepEqual(Object.keys(entry).sort(), [...LIST_MEMBERS].sort(), 'no data, instruction or logo');
    assert.match(entry.id, ID.app);
    assert.equal(entry.object, 'app');
    assert.deepEqual(entry.runs, { private: 0, public: 0 });
    assert.deepEqual(entry.tokens, { input: 0, output: 0, total: 0 }, 'an app that never ran: zeros');
    assert.equal(entry.created_at, at[entry.id]);
    assert.equal(entry.updated_at, at[entry.id]);
  }
  const [n, m, o] = result.data;
  assert.deepEqual([n.description, n.type, n.status, n.model, n.model_library], ['d3', 'public', 'activated', MODELS.text.model, MODELS.text.build]);
  assert.deepEqual([m.description, m.type, m.status, m.model, m.model_library], ['d2', 'private', 'draft', MODELS.code.model, MODELS.code.build]);
  assert.deepEqual([o.description, o.type, o.status, o.id], ['d1', 'private', 'activated', oldest.id]);
});

test('apps created in the same second are ordered by id descending', async () => {
  const p = await service.createProject('Ties');
  const apps = [];
  for (let i = 0; i < 4; i++) apps.push(await createApp(service, p.key, { name: `tie ${i}` }));
  // One clock reading for all four: read per app, a second could turn between two of them.
  const now = nowSeconds();
  for (const a of apps) await backdateApp(service, a.id, 50, now);
  const result = await list(p);
  assert.deepEqual(result.data.map((e: any) => e.id), apps.map((a) => a.id).sort().reverse());
});

test('apps made within one second are listed in the order they were made, not by id, each shown in the second it was made', async () => {
  const p = await service.createProject('Made in order');
  const made: string[] = [];
  for (let i = 0; i < 5; i++) made.push((await createApp(service, p.key, { name: `made ${i}` })).id);
  const result = await list(p);
  assert.deepEqual(result.data.map((e: any) => e.id), [...made].reverse());
  const { rows } = await service.db.query(
    'SELECT id, floor(extract(epoch FROM created_at))::bigint AS second FROM apps WHERE project_id = $1', [p.projectId]);
  const shown = Object.fromEntries(result.data.map((e: any) => [e.id, e.created_at]));
  for (const { id, second } of rows) assert.equal(shown[id], Number(second), `${id}: shown in the second it was made`);

  // Within one second, made in the reverse of their ids' order: the list follows the making.
  const byId = [...made].sort();
  // The second is read first and the times formed from numbers: Citus takes no STABLE function
  // over a column in an UPDATE, and names the project so that the UPDATE reads one shard.
  const { rows: [{ second }] } = await service.db.query("SELECT extract(epoch FROM date_trunc('second', now()))::bigint - 3600 AS second");
  await service.db.query(
    `UPDATE apps a SET created_at = to_timestamp($2::bigint + v.rank / 1000.0)
     FROM unnest($1::text[]) WITH ORDINALITY AS v (id, rank) WHERE a.id = v.id AND a.project_id = $3`, [[...byId].reverse(), second, p.projectId]);
  const reordered = await list(p);
  assert.deepEqual(reordered.data.map((e: any) => e.id), byId);
  assert.equal(new Set(reordered.data.map((e: any) => e.created_at)).size, 1, 'all five shown in one second');
});

test('limit and offset page through the list; total counts all', async () => {
  const p = await service.createProject('Paging');
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const a = await createApp(service, p.key, { name: `app ${i}` });
    await backdateApp(service, a.id, 1000 - i * 10);
    ids.unshift(a.id); // newest first
  }
  const page = async (q: string) => {
    const r = await list(p, q);
    assert.equal(r.total, 5, q);
    return r.data.map((e: any) => e.id);
  };
  assert.deepEqual(await page(''), ids);
  assert.deepEqual(await page('?limit=2'), ids.slice(0, 2));
  assert.deepEqual(await page('?limit=2&offset=2'), ids.slice(2, 4));
  assert.deepEqual(await page('?limit=2&offset=4'), ids.slice(4));
  assert.deepEqual(await page('?offset=3'), ids.slice(3));
  assert.deepEqual(await page('?offset=5'), []);
  assert.deepEqual(await page('?offset=500'), []);
  assert.deepEqual(await page('?limit=1'), ids.slice(0, 1));
  assert.deepEqual(await page('?limit=100&offset=0'), ids);
});

test('limit defaults to 20', async () => {
  const p = await service.createProject('Default limit');
  for (let i = 0; i < 22; i++) await createApp(service, p.key, { name: `app ${i}` });
  const result = await list(p);
  assert.equal(result.total, 22);
  assert.equal(result.data.length, 20);
  assert.equal((await list(p, '?offset=20')).data.length, 2);
});

test('bad limit and offset values are refused with the keys\' messages', async () => {
  const p = await service.createProject('Bad paging');
  await createApp(service, p.key);
  const LIMIT = 'limit must be an integer from 1 to 100.';
  const OFFSET = 'offset must be a non-negative integer.';
  for (const q of ['limit=0', 'limit=101', 'limit=-1', 'limit=abc', 'limit=1.5', 'limit=', 'limit=1e1']) {
    assertError(await service.request('GET', `/v1/app/list?${q}`, { key: p.key }), 422, LIMIT);
  }
  for (const q of ['offset=-1', 'offset=x', 'offset=1.5', 'offset=']) {
    assertError(await service.request('GET', `/v1/app/list?${q}`, { key: p.key }), 422, OFFSET);
  }
});

test('the list holds only the project\'s own apps, of any status and type', async () => {
  const mine = await service.createProject('Mine');
  const theirs = await service.createProject('Theirs');
  const own = await createApp(service, mine.key, { name: 'own draft', status: 'draft' });
  await createApp(service, theirs.key, { name: 'their private' });
  await createApp(service, theirs.key, { name: 'their public', type: 'public' });
  const result = await list(mine);
  assert.equal(result.total, 1);
  assert.deepEqual(result.data.map((e: any) => e.id), [own.id]);
  assert.equal((await list(theirs)).total, 2);
});

test('deleted apps vanish from the list and from total', async () => {
  const p = await service.createProject('Deletions');
  const keep = await createApp(service, p.key, { name: 'keep' });
  const gone = await createApp(service, p.key, { name: 'gone' });
  assert.equal((await list(p)).total, 2);
  assertSuccess(await service.request('DELETE', `/v1/app/detail/${gone.id}`, { key: p.key }));
  const result = await list(p);
  assert.equal(result.total, 1);
  assert.deepEqual(result.data.map((e: any) => e.id), [keep.id]);
});

test('listing needs app:read', async () => {
  const p = await service.createProject('Scopes');
  const made = assertSuccess(await service.request('POST', '/v1/key', { key: p.key, body: { name: 'keys only', scope: ['key:read'] } }), 201);
  assertError(await service.request('GET', '/v1/app/list', { key: made.key }), 403, 'The API key is missing the required scope: app:read');
  const reader = assertSuccess(await service.request('POST', '/v1/key', { key: p.key, body: { name: 'apps', scope: ['app:*'] } }), 201);
  assert.equal(assertSuccess(await service.request('GET', '/v1/app/list', { key: reader.key })).object, 'list');
});
