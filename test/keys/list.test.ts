// GET /v1/key: the project's keys, newest first, paged; never a secret.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertError, assertSuccess } from '../support/assertions.ts';
import { ID } from '../support/ids.ts';
import { createKey } from '../support/keys.ts';
import { canClearStatistics, clearStatistics, planNodes, scansOf } from '../support/plans.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { nowSeconds } from '../support/wait.ts';
import { KEY_FIELDS } from './helpers.ts';

let service: TestService;

before(async () => {
  service = await TestService.start();
});
after(() => service.stop());

/** Sets a key's created_at to `secondsAgo` whole seconds before now. */
async function backDate(id: string, secondsAgo: number): Promise<void> {
  const { rowCount } = await service.db.query(
    "UPDATE api_keys SET created_at = date_trunc('second', now()) - make_interval(secs => $2) WHERE id = $1", [id, secondsAgo]);
  assert.equal(rowCount, 1);
}

async function listOf(project: TestProject, query = '') {
  return assertSuccess(await service.request('GET', `/v1/key${query}`, { key: project.key }));
}

test('a list object of the project\'s keys, newest first by created_at, without any secret', async () => {
  const project = await service.createProject();
  const made = [];
  for (const name of ['first', 'second', 'third']) made.push(await createKey(service, project.key, { name }));
  // Distinct creation times, newest for the smallest id: ordering by id alone would give the
  // exact reverse, so only created_at descending passes.
  const byId = [project.keyId, ...made.map((m) => m.id)].sort();
  for (const [i, id] of byId.entries()) await backDate(id, 100 * (i + 1));
  const reply = await service.request('GET', '/v1/key', { key: project.key });
  const list = assertSuccess(reply);
  assert.deepEqual(Object.keys(list).sort(), ['data', 'object', 'total']);
  assert.equal(list.object, 'list');
  assert.equal(list.total, 4);
  assert.deepEqual(list.data.map((k: any) => k.id), byId);
  for (const key of list.data) {
    assert.deepEqual(Object.keys(key).sort(), KEY_FIELDS);
    assert.match(key.id, ID.key);
    assert.equal(key.object, 'api_key');
    assert.equal(key.status, 'activated');
  }
  // created_at in the response is the stored second, descending.
  const times = list.data.map((k: any) => k.created_at);
  assert.deepEqual([...times].sort((a, b) => b - a), times);
  assert.equal(new Set(times).size, 4);
  for (const { key } of made) assert.ok(!reply.text.includes(key), 'a secret appears in the list');
  assert.ok(!reply.text.includes(project.key), 'the calling secret appears in the list');
  assert.ok(!reply.text.includes('"key":'), 'a `key` member appears in the list');
});

test('keys created in the same second are ordered by id descending', async () => {
  const project = await service.createProject();
  const made = [];
  for (let i = 0; i < 5; i++) made.push(await createKey(service, project.key, { name: `same second ${i}` }));
  await service.db.query(
    "UPDATE api_keys SET created_at = date_trunc('second', now()) - interval '1 hour' WHERE project_id = $1", [project.projectId]);
  const list = await listOf(project);
  const ids = [project.keyId, ...made.map((m) => m.id)].sort().reverse();
  assert.deepEqual(list.data.map((k: any) => k.id), ids);
  assert.equal(new Set(list.data.map((k: any) => k.created_at)).size, 1);
});

test('keys made within one second are listed in the order they were made, not by id, each shown in the second it was made', async () => {
  const project = await service.createProject();
  const made = [];
  for (let i = 0; i < 6; i++) made.push((await createKey(service, project.key, { name: `made ${i}` })).id);
  const list = await listOf(project);
  assert.deepEqual(list.data.map((k: any) => k.id), [...made].reverse().concat(project.keyId));
  const { rows } = await service.db.query(
    'SELECT id, floor(extract(epoch FROM created_at))::bigint AS second FROM api_keys WHERE project_id = $1', [project.projectId]);
  const shown = Object.fromEntries(list.data.map((k: any) => [k.id, k.created_at]));
  for (const { id, second } of rows) assert.equal(shown[id], Number(second), `${id}: shown in the second it was made`);

  // Within one second, made in the reverse of their ids' order: the list follows the making.
  const byId = [...made].sort();
  // The second is read first and the times formed from numbers: Citus takes no STABLE function
  // over a column in an UPDATE, and names the project so that the UPDATE reads one shard.
  const { rows: [{ second }] } = await service.db.query("SELECT extract(epoch FROM date_trunc('second', now()))::bigint - 3600 AS second");
  await service.db.query(
    `UPDATE api_keys k SET created_at = to_timestamp($2::bigint + v.rank / 1000.0)
     FROM unnest($1::text[]) WITH ORDINALITY AS v (id, rank) WHERE k.id = v.id AND k.project_id = $3`, [[...byId].reverse(), second, project.projectId]);
  const reordered = await listOf(project);
  assert.deepEqual(reordered.data.map((k: any) => k.id), [project.keyId, ...byId]);
  assert.equal(new Set(reordered.data.slice(1).map((k: any) => k.created_at)).size, 1, 'all six shown in one second');
});

test('limit defaults to 20; total counts every listed key, not the page; offset pages through', async () => {
  const project = await service.createProject();
  for (let i = 0; i < 24; i++) await createKey(service, project.key, { name: `key ${i}` });
  // 25 keys, each in its own second: key i is i+1 minutes old, the project key the oldest.
  const { rows } = await service.db.query(
    'SELECT id FROM api_keys WHERE project_id = $1 ORDER BY id', [project.projectId]);
  const expected: string[] = [];
  for (const [i, row] of rows.entries()) {
    await backDate(row.id, 60 * (i + 1));
    expected.push(row.id);
  }
  // Newest first = smallest age first = the order of `rows`.

  const first = await listOf(project);
  assert.equal(first.total, 25);
  assert.equal(first.data.length, 20);
  assert.deepEqual(first.data.map((k: any) => k.id), expected.slice(0, 20));

  const second = await listOf(project, '?offset=20');
  assert.equal(second.total, 25);
  assert.deepEqual(second.data.map((k: any) => k.id), expected.slice(20));

  const page = await listOf(project, '?limit=3&offset=5');
  assert.equal(page.total, 25);
  assert.deepEqual(page.data.map((k: any) => k.id), expected.slice(5, 8));

  const one = await listOf(project, '?limit=1');
  assert.deepEqual(one.data.map((k: any) => k.id), expected.slice(0, 1));

  const all = await listOf(project, '?limit=100&offset=0');
  assert.equal(all.total, 25);
  assert.deepEqual(all.data.map((k: any) => k.id), expected);

  const beyond = await listOf(project, '?offset=25');
  assert.deepEqual(beyond.data, []);
  assert.equal(beyond.total, 25);

  // Leading zeros name the same integers (the document's `integer`): 0003 is 3, 0005 is 5.
  const zeros = await listOf(project, '?limit=0003&offset=0000000000000000005');
  assert.deepEqual(zeros.data.map((k: any) => k.id), expected.slice(5, 8));
  // Any integer >= 0 is an offset (decisions.md), however long: past the end, an empty page.
  for (const offset of ['999999999999999', '9007199254740993', '1'.repeat(40)]) {
    const past = await listOf(project, `?limit=0100&offset=${offset}`);
    assert.deepEqual([past.data, past.total], [[], 25], offset);
  }
});

test('an invalid limit answers 422 `limit must be an integer from 1 to 100.`', async () => {
  const project = await service.createProject();
  for (const query of ['limit=0', 'limit=101', 'limit=-1', 'limit=1.5', 'limit=abc', 'limit=', 'limit=2&limit=3', 'limit=1000', 'limit=000', 'limit=0101', 'limit=+5']) {
    const reply = await service.request('GET', `/v1/key?${query}`, { key: project.key });
    assertError(reply, 422, 'limit must be an integer from 1 to 100.');
  }
});

test('an invalid offset answers 422 `offset must be a non-negative integer.`', async () => {
  const project = await service.createProject();
  for (const query of ['offset=-1', 'offset=1.5', 'offset=abc', 'offset=', 'offset=0&offset=1', 'limit=5&offset=-3', 'offset=+1', 'offset=1e3']) {
    const reply = await service.request('GET', `/v1/key?${query}`, { key: project.key });
    assertError(reply, 422, 'offset must be a non-negative integer.');
  }
});

test('only the calling project\'s keys are listed', async () => {
  const mine = await service.createProject();
  const theirs = await service.createProject();
  const other = await createKey(service, theirs.key, { name: 'theirs' });
  const list = await listOf(mine);
  assert.equal(list.total, 1);
  assert.deepEqual(list.data.map((k: any) => k.id), [mine.keyId]);
  assert.ok(!list.data.some((k: any) => k.id === other.id || k.id === theirs.keyId));
});

test('a revoked key disappears from the list and from total', async () => {
  const project = await service.createProject();
  const kept = await createKey(service, project.key, { name: 'kept' });
  const gone = await createKey(service, project.key, { name: 'gone' });
  assert.equal((await listOf(project)).total, 3);
  assertSuccess(await service.request('DELETE', `/v1/key/${gone.id}`, { key: project.key }));
  const list = await listOf(project);
  assert.equal(list.total, 2);
  const ids = list.data.map((k: any) => k.id);
  assert.ok(!ids.includes(gone.id));
  assert.ok(ids.includes(kept.id) && ids.includes(project.keyId));
});

test('an expired key stays listed, with status `expired`, and counts in total', async () => {
  const project = await service.createProject();
  const expiring = await createKey(service, project.key, { name: 'expiring', expires_at: nowSeconds() + 3600 });
  const { rowCount } = await service.db.query(
    "UPDATE api_keys SET expires_at = now() - interval '5 minutes' WHERE id = $1", [expiring.id]);
  assert.equal(rowCount, 1);
  const list = await listOf(project);
  assert.equal(list.total, 2);
  const listed = list.data.find((k: any) => k.id === expiring.id);
  assert.ok(listed, 'the expired key is not listed');
  assert.equal(listed.status, 'expired');
  assert.equal(list.data.find((k: any) => k.id === project.keyId).status, 'activated');
});

test('listing needs key:read', async () => {
  const project = await service.createProject();
  const appOnly = await createKey(service, project.key, { name: 'apps', scope: ['app:read'] });
  assertError(await service.request('GET', '/v1/key', { key: appOnly.key }), 403, 'The API key is missing the required scope: key:read');
  const keyRead = await createKey(service, project.key, { name: 'reader', scope: ['key:read'] });
  assert.equal(assertSuccess(await service.request('GET', '/v1/key', { key: keyRead.key })).total, 3);
});

test('a project with many more keys than the statistics know still gets its pages from the index, deep ones too', async (t) => {
  if (!(await canClearStatistics(service.db))) {
    t.skip('pg_clear_relation_stats is PostgreSQL 18\'s');
    return;
  }
  const project = await service.createProject('Many keys, no statistics');
  // 3,000 keys older than the project's first, as bench/scale.ts loads its project.
  await service.db.query(`
    INSERT INTO api_keys (id, project_id, created_by, name, secret_hash, key_preview, scope, created_at, updated_at)
    SELECT 'papi_' || substr(md5(g::text || $1), 1, 20), $1, $2, 'bulk ' || g, sha256(convert_to('bulk-' || g || $1, 'UTF8')),
           'sk-project-...bulk', ARRAY['key:read'], now_seconds() - make_interval(days => 1, secs => g), now_seconds()
    FROM generate_series(1, 3000) g`, [project.projectId, project.consumerId]);
  // As a table not analyzed since those rows came, or a project outside the statistics' most common values.
  await clearStatistics(service.db, 'api_keys');
  for (const offset of [0, 2000]) {
    const plan = scansOf(await planNodes(service.db, 'key_list', ['text', 'bigint', 'bigint'], [project.projectId, 20, offset]), 'api_keys');
    assert.deepEqual(plan, { scans: [['Index Scan', 'api_keys_project_listed']], rows: [offset + 20], sorts: 0 }, `offset ${offset}`);
  }

  const page = await listOf(project, '?limit=20&offset=2000');
  assert.equal(page.total, 3001);
  assert.deepEqual(page.data.map((k: { name: string }) => k.name), Array.from({ length: 20 }, (_, i) => `bulk ${2000 + i}`));
});
