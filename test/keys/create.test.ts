// POST /v1/key: the new key, its secret once, only its SHA-256 stored; every validation answer.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import { assertError, assertSuccess } from '../support/assertions.ts';
import { ID, SECRET } from '../support/ids.ts';
import { createKey } from '../support/keys.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { nowSeconds } from '../support/wait.ts';
import { KEY_FIELDS, keyRow } from './helpers.ts';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start();
  project = await service.createProject();
});
after(() => service.stop());

const post = (body: unknown, key = project.key) => service.request('POST', '/v1/key', { key, body });

async function keyCount(projectId = project.projectId): Promise<number> {
  const { rows } = await service.db.query('SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1', [projectId]);
  return rows[0].n;
}

test('201 `Created` with the key object, the secret once, and defaults', async () => {
  const before = nowSeconds();
  const reply = await post({ name: 'Deploy key' });
  const after = nowSeconds();
  const key = assertSuccess(reply, 201);
  assert.deepEqual(Object.keys(key).sort(), [...KEY_FIELDS, 'key'].sort());
  assert.match(key.id, ID.key);
  assert.equal(key.object, 'api_key');
  assert.equal(key.name, 'Deploy key');
  assert.match(key.key, SECRET);
  assert.equal(key.key_preview, `sk-project-...${key.key.slice(-4)}`);
  assert.deepEqual(key.scope, ['*']);
  assert.equal(key.status, 'activated');
  assert.equal(key.expires_at, null);
  assert.equal(key.last_used_at, null);
  assert.equal(key.created_by, project.consumerId);
  assert.ok(Number.isInteger(key.created_at) && key.created_at >= before - 1 && key.created_at <= after, `created_at ${key.created_at}`);
  assert.ok(Number.isInteger(key.updated_at) && key.updated_at >= key.created_at && key.updated_at <= after);
});

test('every secret is different and at least 43 base62 characters after the prefix', async () => {
  const secrets = new Set<string>();
  for (let i = 0; i < 5; i++) {
    const { key } = await createKey(service, project.key, { name: `k${i}` });
    assert.match(key, SECRET);
    secrets.add(key);
  }
  assert.equal(secrets.size, 5);
});

test('the new secret authenticates at once', async () => {
  const made = await createKey(service, project.key, { name: 'fresh', scope: ['key:read'] });
  const current = assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));
  assert.equal(current.id, made.id);
  assert.equal(current.name, 'fresh');
  assert.ok(!('key' in current));
});

test('the database keeps only the SHA-256 of the secret; the secret is in no column, job or event', async () => {
  const made = await createKey(service, project.key, { name: 'hashed' });
  const sha256 = createHash('sha256').update(made.key, 'utf8').digest();
  const { rows } = await service.db.query('SELECT secret_hash FROM api_keys WHERE id = $1', [made.id]);
  assert.equal(rows.length, 1);
  assert.ok(Buffer.isBuffer(rows[0].secret_hash));
  assert.ok(rows[0].secret_hash.equals(sha256), 'secret_hash is not the SHA-256 of the secret');

  const body = made.key.slice('sk-project-'.length);
  const { rows: [row] } = await service.db.query('SELECT row_to_json(k)::text AS text FROM api_keys k WHERE id = $1', [made.id]);
  assert.ok(!row.text.includes(body), 'a column of api_keys holds the secret');
  for (const [table, column] of await textColumns()) {
    const { rows: hits } = await service.db.query(
      `SELECT count(*)::int AS n FROM ${table} WHERE ${column}::text LIKE '%' || $1 || '%'`, [body]);
    assert.equal(hits[0].n, 0, `${table}.${column} holds the secret`);
  }
  // The audit job and event carry neither the secret nor its hash.
  await service.waitForJobsDrained();
  const hex = sha256.toString('hex');
  const { rows: events } = await service.db.query(
    "SELECT details::text AS details FROM events WHERE related_id = $1", [made.id]);
  assert.equal(events.length, 1);
  assert.ok(!events[0].details.includes(body) && !events[0].details.includes(hex));
  assert.ok(!events[0].details.includes(sha256.toString('base64')));
});

/** Every text-like column in the public and pgboss schemas. */
async function textColumns(): Promise<[string, string][]> {
  const { rows } = await service.db.query(
    `SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) AS t, quote_ident(column_name) AS c
     FROM information_schema.columns c
     JOIN information_schema.tables USING (table_schema, table_name)
     WHERE table_schema IN ('public', 'pgboss') AND table_type = 'BASE TABLE'
       AND data_type IN ('text', 'character varying', 'json', 'jsonb', 'ARRAY', 'bytea')`);
  assert.ok(rows.length > 0);
  return rows.map((r) => [r.t, r.c]);
}

test('the secret never appears again: not in the list, nor reading the key', async () => {
  const made = await createKey(service, project.key, { name: 'once' });
  const listed = await service.request('GET', '/v1/key?limit=100', { key: project.key });
  assertSuccess(listed);
  assert.ok(!listed.text.includes(made.key));
  const read = await service.request('GET', `/v1/key/${made.id}`, { key: project.key });
  assertSuccess(read);
  assert.ok(!read.text.includes(made.key));
  assert.ok(!('key' in read.body.response));
});

test('name: absent, null or blank gives 422 `name is required.`', async () => {
  const count = await keyCount();
  for (const body of [{}, { name: null }, { name: '' }, { name: '   ' }, { name: '\t\n' }, { scope: ['*'] }]) {
    assertError(await post(body), 422, 'name is required.');
  }
  // An empty body counts as `{}`.
  assertError(await service.request('POST', '/v1/key', { key: project.key }), 422, 'name is required.');
  assert.equal(await keyCount(), count);
});

test('name: a non-string gives 422 `name must be a string.`', async () => {
  for (const name of [5, 0, true, false, ['a'], { a: 1 }]) {
    assertError(await post({ name }), 422, 'name must be a string.');
  }
});

test('name: over 200 characters gives 422 `name must be at most 200 characters.`; 200 is accepted', async () => {
  assertError(await post({ name: 'a'.repeat(201) }), 422, 'name must be at most 200 characters.');
  assertError(await post({ name: 'é'.repeat(300) }), 422, 'name must be at most 200 characters.');
  const made = await createKey(service, project.key, { name: 'a'.repeat(200) });
  assert.equal(made.object.name, 'a'.repeat(200));
  // Characters, not bytes: 200 two-byte characters are within the limit.
  const accents = await createKey(service, project.key, { name: 'é'.repeat(200) });
  assert.equal(accents.object.name, 'é'.repeat(200));
});

test('scope as a string or an object gives 400 `scope must be an array.`', async () => {
  const count = await keyCount();
  for (const scope of ['key:read', '*', '', { 0: 'key:read' }, {}, { scope: ['key:read'] }]) {
    assertError(await post({ name: 'n', scope }), 400, 'scope must be an array.');
  }
  assert.equal(await keyCount(), count);
});

test('an unknown scope entry gives 422 `Unknown scope: <entry>.`', async () => {
  const cases: [unknown[], string][] = [
    [['nope'], 'Unknown scope: nope.'],
    [['key:read', 'key:delete'], 'Unknown scope: key:delete.'],
    [['widget:read'], 'Unknown scope: widget:read.'],
    [['key'], 'Unknown scope: key.'],
    [['key:read:extra'], 'Unknown scope: key:read:extra.'],
    [['KEY:READ'], 'Unknown scope: KEY:READ.'],
    [[''], 'Unknown scope: .'],
    [[5], 'Unknown scope: 5.'],
    [['app:read', 7], 'Unknown scope: 7.'],
    // Line breaks are echoed as sent, and the document's pattern must allow them (a fuzz find).
    [['\n'], 'Unknown scope: \n.'],
    [['key:read\r\nx'], 'Unknown scope: key:read\r\nx.'],
  ];
  for (const [scope, message] of cases) assertError(await post({ name: 'n', scope }), 422, message);
});

test('an empty scope array gives 422 `scope must name at least one scope.`', async () => {
  assertError(await post({ name: 'n', scope: [] }), 422, 'scope must name at least one scope.');
});

test('every resource and action in decisions.md is a known scope', async () => {
  const resources = ['key', 'app', 'event', 'run', 'file', 'team', 'feedback', 'catalog', 'usage', 'reasoning'];
  const scope = ['*', ...resources.flatMap((r) => [`${r}:read`, `${r}:write`, `${r}:*`])];
  const made = await createKey(service, project.key, { name: 'everything', scope });
  assert.deepEqual(made.object.scope, scope);
});

test('duplicate scope entries are dropped', async () => {
  const made = await createKey(service, project.key, { name: 'dups', scope: ['key:read', 'app:read', 'key:read', 'app:read', 'key:read'] });
  assert.deepEqual(made.object.scope, ['key:read', 'app:read']);
  const read = assertSuccess(await service.request('GET', `/v1/key/${made.id}`, { key: project.key }));
  assert.deepEqual(read.scope, ['key:read', 'app:read']);
  const row = await keyRow(service, made.id);
  assert.deepEqual(row!.scope, ['key:read', 'app:read']);
});

test('expires_at that is not a future Unix time in seconds gives 422', async () => {
  const now = nowSeconds();
  const count = await keyCount();
  for (const expires_at of [now - 10, 1, -5, -1, now + 100.5, 1.5, String(now + 3600), '0', true, [now + 3600], { at: now + 3600 }, 1e15, 9_999_999_999_999, Number.MAX_SAFE_INTEGER, 1e300]) {
    assertError(await post({ name: 'n', expires_at }), 422, 'expires_at must be a future Unix time in seconds.');
  }
  // Milliseconds by mistake are absurdly far away.
  assertError(await post({ name: 'n', expires_at: Date.now() + 3_600_000 }), 422, 'expires_at must be a future Unix time in seconds.');
  assert.equal(await keyCount(), count);
});

test('expires_at 0, null or absent means never (null)', async () => {
  for (const body of [{ name: 'zero', expires_at: 0 }, { name: 'null', expires_at: null }, { name: 'absent' }]) {
    const made = await createKey(service, project.key, body);
    assert.equal(made.object.expires_at, null);
    assert.equal((await keyRow(service, made.id))!.expires_at, null);
  }
});

test('a future expires_at is kept to the second and the key works until then', async () => {
  const at = nowSeconds() + 3600;
  const made = await createKey(service, project.key, { name: 'hour', scope: ['key:read'], expires_at: at });
  assert.equal(made.object.expires_at, at);
  assert.equal(made.object.status, 'activated');
  assert.equal((await keyRow(service, made.id))!.expires_at, at);
  assert.equal(assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key })).expires_at, at);
});

test('the new key belongs to the calling project, created by its consumer', async () => {
  const made = await createKey(service, project.key, { name: 'mine' });
  const row = await keyRow(service, made.id);
  assert.equal(row!.project_id, project.projectId);
  const list = assertSuccess(await service.request('GET', '/v1/key?limit=100', { key: made.key }));
  assert.ok(list.data.some((k: any) => k.id === project.keyId));
});

test('creating records one `key.created` event with origin `api`', async () => {
  const made = await createKey(service, project.key, { name: 'audited', scope: ['app:read'] });
  await service.waitForJobsDrained();
  const { rows } = await service.db.query(
    `SELECT t.name AS type, e.origin, e.related_table, e.details FROM events e JOIN event_types t ON t.id = e.type_id
     WHERE e.related_id = $1`, [made.id]);
  assert.equal(rows.length, 1);
  assert.equal(rows[0].type, 'key.created');
  assert.equal(rows[0].origin, 'api');
  assert.equal(rows[0].related_table, 'key');
});

test('a body that is not a JSON object gives 400 `Invalid JSON.`', async () => {
  for (const body of ['[]', '"name"', '{"name": ', 'null']) {
    assertError(await service.request('POST', '/v1/key', { key: project.key, body }), 400, 'Invalid JSON.');
  }
});

test('creating a key needs key:write', async () => {
  const reader = await createKey(service, project.key, { name: 'reader', scope: ['key:read'] });
  const count = await keyCount();
  assertError(await post({ name: 'n', scope: ['key:read'] }, reader.key), 403, 'The API key is missing the required scope: key:write');
  assert.equal(await keyCount(), count);
});
