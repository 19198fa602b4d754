// The read side of the audit trail (api.md 2.3, 4.3, 6, 8; decisions.md "Lists", "Events"):
// GET /v1/event and GET /v1/event/<id> against the real database over real HTTPS.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { envelope, MESSAGES } from '../support/assertions.ts';
import { ID } from '../support/ids.ts';
import { canClearStatistics, clearStatistics, planNodes, scansOf } from '../support/plans.ts';
import { isSuperuser } from '../support/postgres.ts';
import { Secrets } from '../support/secrets.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { nowSeconds, sleep } from '../support/wait.ts';

let service: TestService;
/** Every secret this file has seen, checked against the logs at the end. */
const secrets = new Secrets();

const EVENT_FIELDS = ['id', 'object', 'type', 'related', 'origin', 'ip_address', 'details', 'created_at', 'sequence', 'actor', 'hash'];
const EVENT_NOT_FOUND = envelope(404, MESSAGES.eventNotFound);
/** Back-dating an event with SQL: its stored JSON (what the API answers) gets the new time ($2) too. */
const BODY_CREATED_AT = `body = regexp_replace(body, '"created_at":\\d+,"sequence":', '"created_at":' || $2::bigint || ',"sequence":')`;

before(async () => {
  service = await TestService.start();
});
after(() => service.stop());

const project = (name: string) => secrets.project(service, name);
const createKey = (owner: TestProject, body: Record<string, unknown>) => secrets.key(service, owner.key, body);

/** The project's events as SQL orders them: newest first, created_at desc then sequence desc. */
async function sqlFeed(projectId: string): Promise<Array<{ id: string; created_at: number }>> {
  const { rows } = await service.db.query(
    `SELECT id, extract(epoch FROM created_at)::bigint AS created_at FROM events
     WHERE project_id = $1 ORDER BY created_at DESC, sequence DESC`, [projectId]);
  return rows.map((r) => ({ id: r.id, created_at: Number(r.created_at) }));
}

async function eventCount(projectId: string): Promise<number> {
  const { rows } = await service.db.query('SELECT count(*)::int AS n FROM events WHERE project_id = $1', [projectId]);
  return rows[0].n;
}

async function typeIds(): Promise<Map<string, string>> {
  const { rows } = await service.db.query('SELECT id, name FROM event_types');
  return new Map(rows.map((r) => [r.name as string, r.id as string]));
}

function assertEventShape(event: any): void {
  assert.deepEqual(Object.keys(event), EVENT_FIELDS);
  assert.equal(event.object, 'event');
  assert.match(event.id, ID.event);
  assert.deepEqual(Object.keys(event.type), ['id', 'name']);
  assert.match(event.type.id, ID.eventType);
  assert.equal(typeof event.type.name, 'string');
  assert.deepEqual(Object.keys(event.related), ['table', 'id']);
  assert.equal(typeof event.related.table, 'string');
  assert.equal(typeof event.related.id, 'string');
  assert.equal(typeof event.origin, 'string');
  assert.equal(typeof event.ip_address, 'string');
  assert.equal(typeof event.details, 'object');
  assert.notEqual(event.details, null);
  assert.ok(Number.isInteger(event.created_at));
  assert.ok(!('updated_at' in event));
}

test('GET /v1/event lists the project\'s events as exact event objects, each readable by id', async () => {
  const p = await project('Feed shape');
  const made = await createKey(p, { name: 'Shape key', scope: ['key:read', 'event:read'], expires_at: 4_102_444_800 });
  const other = await createKey(p, { name: 'Shape other', scope: ['event:read'] });
  await service.waitForEvents(p.projectId, 4);
  await service.waitForJobsDrained();

  const reply = await service.request('GET', '/v1/event', { key: p.key });
  assert.equal(reply.status, 200, reply.text);
  assert.equal(reply.body.code, 200);
  assert.equal(reply.body.title, 'OK');
  assert.deepEqual(Object.keys(reply.body), ['code', 'title', 'response']);
  const feed = reply.body.response;
  assert.deepEqual(Object.keys(feed), ['object', 'data', 'total']);
  assert.equal(feed.object, 'list');
  assert.equal(feed.total, 4);
  assert.equal(feed.data.length, 4);
  for (const event of feed.data) assertEventShape(event);

  const types = await typeIds();
  const byRelated = (id: string, name: string) => feed.data.filter((e: any) => e.related.id === id && e.type.name === name);
  const { rows: [keyRow] } = await service.db.query(
    'SELECT floor(extract(epoch FROM created_at))::bigint AS created_at FROM api_keys WHERE id = $1', [made.id]);

  // The key created through the API, in full.
  const [created] = byRelated(made.id, 'key.created');
  assert.ok(created, 'key.created for the API-made key is listed');
  assert.deepEqual({ ...created, id: undefined, sequence: undefined, hash: undefined }, {
    id: undefined,
    sequence: undefined,
    hash: undefined,
    object: 'event',
    type: { id: types.get('key.created'), name: 'key.created' },
    related: { table: 'key', id: made.id },
    origin: 'api',
    ip_address: '127.0.0.1',
    details: { name: 'Shape key', scope: ['key:read', 'event:read'], expires_at: 4_102_444_800 },
    created_at: Number(keyRow.created_at),
    actor: { type: 'key', id: p.keyId },
  });
  // Numbered 1 to 4 without gaps; the workspace's changes are attributed to it.
  assert.deepEqual(feed.data.map((e: any) => e.sequence).sort(), [1, 2, 3, 4]);
  assert.deepEqual(feed.data.find((e: any) => e.type.name === 'project.created').actor, { type: 'workspace', id: null });
  // The workspace-made project and its first key.
  const [projectCreated] = byRelated(p.projectId, 'project.created');
  assert.equal(projectCreated.origin, 'workspace');
  assert.deepEqual(projectCreated.related, { table: 'project', id: p.projectId });
  assert.equal(projectCreated.type.id, types.get('project.created'));
  assert.equal(byRelated(p.keyId, 'key.created').length, 1);
  const [otherCreated] = byRelated(other.id, 'key.created');
  assert.deepEqual(otherCreated.details, { name: 'Shape other', scope: ['event:read'], expires_at: null });
  assert.deepEqual(feed.data.map((e: any) => e.type.name).sort(), ['key.created', 'key.created', 'key.created', 'project.created']);

  // Every listed event reads back identically by its id.
  for (const event of feed.data) {
    const one = await service.request('GET', `/v1/event/${event.id}`, { key: p.key });
    assert.equal(one.status, 200, one.text);
    assert.deepEqual(one.body, { code: 200, title: 'OK', response: event });
  }
  // Nothing in a response carries a secret.
  assert.ok(!reply.text.includes(made.key) && !reply.text.includes(other.key) && !reply.text.includes(p.key));
});

test('the feed is newest first: created_at descending, then sequence descending', async () => {
  const p = await project('Feed order');
  for (let i = 0; i < 4; i += 1) await createKey(p, { name: `Order ${i}` });
  await service.waitForEvents(p.projectId, 6);
  await service.waitForJobsDrained();

  // Back-date with SQL so that the order by time differs from both id order and insertion order,
  // with one tie that the sequence (the order the events were written) must break.
  const { rows } = await service.db.query('SELECT id, sequence::int AS sequence FROM events WHERE project_id = $1 ORDER BY id', [p.projectId]);
  const ids: string[] = rows.map((r) => r.id);
  const sequences: number[] = rows.map((r) => r.sequence);
  assert.equal(ids.length, 6);
  const base = nowSeconds() - 1000;
  const offsets = [10, 50, 30, 30, 40, 20];
  for (const [i, id] of ids.entries()) {
    await service.db.query(`UPDATE events SET created_at = to_timestamp($2), ${BODY_CREATED_AT} WHERE id = $1`, [id, base - offsets[i]!]);
  }
  const tie = sequences[2]! > sequences[3]! ? [ids[2], ids[3]] : [ids[3], ids[2]];
  const expected = [ids[0], ids[5], ...tie, ids[4], ids[1]];

  const reply = await service.request('GET', '/v1/event', { key: p.key });
  assert.equal(reply.status, 200, reply.text);
  assert.deepEqual(reply.body.response.data.map((e: any) => e.id), expected);
  assert.deepEqual(reply.body.response.data.map((e: any) => e.created_at), [10, 20, 30, 30, 40, 50].map((o) => base - o));
  assert.equal(reply.body.response.total, 6);
});

test('the feed holds at most the 100 newest events while total counts them all; query parameters are ignored', async () => {
  const p = await project('Feed limit');
  const KEYS = 105;
  for (let i = 0; i < KEYS; i += 15) {
    await Promise.all(Array.from({ length: Math.min(15, KEYS - i) }, (_, j) => createKey(p, { name: `Bulk ${i + j}` })));
  }
  const expectedTotal = KEYS + 2; // project.created and the first key's key.created
  await service.waitForEvents(p.projectId, expectedTotal);
  await service.waitForJobsDrained();
  assert.equal(await eventCount(p.projectId), expectedTotal);

  // Distinct times in an order unrelated to ids or insertion, so "newest" is decided by created_at.
  await service.db.query(
    `UPDATE events e SET created_at = to_timestamp(r.at), ${BODY_CREATED_AT.replace('$2::bigint', 'r.at::text')}
     FROM (SELECT id, extract(epoch FROM now_seconds())::bigint - 5000 + row_number() OVER (ORDER BY md5(id)) * 7 AS at
           FROM events WHERE project_id = $1) r
     WHERE e.id = r.id AND e.project_id = $1`, [p.projectId]);
  const all = await sqlFeed(p.projectId);
  assert.equal(new Set(all.map((e) => e.created_at)).size, expectedTotal, 'every event has its own second');

  const reply = await service.request('GET', '/v1/event', { key: p.key });
  assert.equal(reply.status, 200, reply.text);
  const feed = reply.body.response;
  assert.equal(feed.object, 'list');
  assert.equal(feed.total, expectedTotal);
  assert.equal(feed.data.length, 100);
  assert.deepEqual(feed.data.map((e: any) => e.id), all.slice(0, 100).map((e) => e.id));
  assert.deepEqual(feed.data.map((e: any) => e.created_at), all.slice(0, 100).map((e) => e.created_at));
  for (const event of feed.data) assertEventShape(event);

  const { rows: [counted] } = await service.db.query('SELECT total FROM project_event_counts WHERE project_id = $1', [p.projectId]);
  assert.equal(Number(counted.total), expectedTotal);

  for (const query of ['?limit=5', '?limit=5&offset=10', '?offset=100', '?limit=abc&offset=-1', '?page=2&sort=asc&order=created_at', '?limit=1000']) {
    const other = await service.request('GET', `/v1/event${query}`, { key: p.key });
    assert.equal(other.status, 200, `${query}: ${other.text}`);
    assert.deepEqual(other.body, reply.body, `query ${query} changes nothing`);
  }
  const oldest = all.at(-1)!;
  const single = await service.request('GET', `/v1/event/${oldest.id}?fields=id&limit=1`, { key: p.key });
  assert.equal(single.status, 200, single.text);
  assert.equal(single.body.response.id, oldest.id, 'an event beyond the newest 100 is still readable by id');
  assert.deepEqual(Object.keys(single.body.response), EVENT_FIELDS);
});

test('another project\'s event, a made-up evnt_ id and a malformed id give the identical 404', async () => {
  const mine = await project('404 mine');
  const theirs = await project('404 theirs');
  await service.waitForEvents(mine.projectId, 2);
  await service.waitForEvents(theirs.projectId, 2);
  await service.waitForJobsDrained();
  const [theirEvent] = await sqlFeed(theirs.projectId);
  const [myEvent] = await sqlFeed(mine.projectId);

  // Control: each project reads its own event.
  const own = await service.request('GET', `/v1/event/${myEvent!.id}`, { key: mine.key });
  assert.equal(own.status, 200, own.text);
  const theirsOwn = await service.request('GET', `/v1/event/${theirEvent!.id}`, { key: theirs.key });
  assert.equal(theirsOwn.status, 200, theirsOwn.text);

  // The list of one project holds none of another's events.
  const feed = await service.request('GET', '/v1/event', { key: mine.key });
  const theirIds = new Set((await sqlFeed(theirs.projectId)).map((e) => e.id));
  assert.equal(feed.body.response.total, 2);
  assert.ok(feed.body.response.data.every((e: any) => !theirIds.has(e.id)));

  const invisible = [
    theirEvent!.id,
    'evnt_00000000000000000000',
    'evnt_0123456789abcdef0123',
    'evnt_123',
    'evnt_',
    `${myEvent!.id}0`,
    myEvent!.id.toUpperCase(),
    `evnt_${'g'.repeat(20)}`,
    mine.keyId,
    mine.projectId,
    'current',
    'not-an-id',
    '%27%20OR%201%3D1--',
    'x'.repeat(90),
  ];
  for (const id of invisible) {
    const reply = await service.request('GET', `/v1/event/${id}`, { key: mine.key });
    assert.equal(reply.status, 404, `${id}: ${reply.text}`);
    assert.deepEqual(reply.body, EVENT_NOT_FOUND, id);
  }
});

test('a very long id under /v1/event/ is still a known path: 404 Event not found.', async () => {
  const p = await project('404 long');
  for (const id of ['x'.repeat(300), `evnt_${'0'.repeat(200)}`]) {
    const reply = await service.request('GET', `/v1/event/${id}`, { key: p.key });
    assert.equal(reply.status, 404, reply.text);
    assert.deepEqual(reply.body, EVENT_NOT_FOUND, `an id of ${id.length} characters`);
  }
});

test('reading events needs event:read; event:* and * also pass', async () => {
  const p = await project('Feed scope');
  const keyOnly = await createKey(p, { name: 'key only', scope: ['key:read', 'key:write'] });
  const eventRead = await createKey(p, { name: 'event read', scope: ['event:read'] });
  const eventAll = await createKey(p, { name: 'event all', scope: ['event:*'] });
  await service.waitForEvents(p.projectId, 5);
  await service.waitForJobsDrained();
  const [event] = await sqlFeed(p.projectId);

  for (const path of ['/v1/event', `/v1/event/${event!.id}`, '/v1/event/evnt_00000000000000000000']) {
    const refused = await service.request('GET', path, { key: keyOnly.key });
    assert.equal(refused.status, 403, refused.text);
    assert.deepEqual(refused.body, { code: 403, title: 'Forbidden', response: 'The API key is missing the required scope: event:read' });
  }
  for (const key of [eventRead.key, eventAll.key, p.key]) {
    const listed = await service.request('GET', '/v1/event', { key });
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.body.response.total, 5);
    const one = await service.request('GET', `/v1/event/${event!.id}`, { key });
    assert.equal(one.status, 200, one.text);
  }
  // Reads are not changes: still five events.
  await service.waitForJobsDrained();
  assert.equal(await eventCount(p.projectId), 5);
});

test('no endpoint creates, changes or deletes an event', async () => {
  const p = await project('Feed read-only');
  await service.waitForEvents(p.projectId, 2);
  await service.waitForJobsDrained();
  const [event] = await sqlFeed(p.projectId);
  const before = await service.request('GET', `/v1/event/${event!.id}`, { key: p.key });
  for (const [method, path] of [['POST', '/v1/event'], ['PATCH', `/v1/event/${event!.id}`], ['DELETE', `/v1/event/${event!.id}`], ['POST', `/v1/event/${event!.id}`]] as const) {
    const reply = await service.request(method, path, { key: p.key, body: method === 'DELETE' ? undefined : { type: 'key.created' } });
    assert.equal(reply.status, 422, `${method} ${path}: ${reply.text}`);
    assert.deepEqual(reply.body, { code: 422, title: 'Unprocessable entity', response: 'The parameters were valid but the request failed.' });
  }
  const afterwards = await service.request('GET', `/v1/event/${event!.id}`, { key: p.key });
  assert.deepEqual(afterwards.body, before.body);
  assert.equal(await eventCount(p.projectId), 2);
});

test("a page is answered again until the project's events move or are edited, and only then read anew", async (t) => {
  if (!(await isSuperuser(service.db))) return t.skip('needs a superuser: SET session_replication_role = replica edits events with their triggers off');
  const p = await project('Kept page');
  await service.waitForEvents(p.projectId, 2);
  await service.waitForJobsDrained();
  const feed = async () => {
    const reply = await service.request('GET', '/v1/event', { key: p.key });
    assert.equal(reply.status, 200, reply.text);
    return reply.body.response as { data: Array<{ id: string; details: Record<string, unknown> }>; total: number };
  };
  const first = await feed();
  assert.equal(first.total, 2);

  // An edit that moves no counter row (triggers off, as only a superuser can have them) is not
  // seen: the page was kept, not read again.
  const [newest] = first.data;
  const edit = async (label: string, triggers: boolean) => {
    const client = await service.db.connect();
    try {
      await client.query('BEGIN');
      // On Citus the triggers run on the workers: the setting goes with the transaction there.
      if (!triggers) await client.query("SET LOCAL citus.propagate_set_commands = 'local'; SET LOCAL session_replication_role = replica");
      await client.query(`UPDATE events SET body = replace(body, '"details":{', '"details":{"' || $2 || '":true,') WHERE id = $1`, [newest!.id, label]);
      await client.query('COMMIT');
    } catch (err) {
      // Not back to the pool inside the failed transaction: the next test would get it.
      client.release(err as Error);
      throw err;
    }
    client.release();
  };
  await edit('unseen', false);
  assert.deepEqual(await feed(), first);
  // Any other edit of events moves the rows of the projects it touched (sql/migrations/0019): read anew.
  await edit('seen', true);
  const edited = (await feed()).data[0]!.details;
  assert.equal(edited.seen, true);
  assert.equal(edited.unseen, true);

  // A change's event, once written, is in the next page.
  const made = await createKey(p, { name: 'After the kept page' });
  await service.waitForEvents(p.projectId, 3);
  const after = await feed();
  assert.equal(after.total, 3);
  assert.equal(after.data.length, 3);
  assert.equal(after.data[0]!.details.name, 'After the kept page');
  assert.ok(!JSON.stringify(after).includes(made.key));
});

test("a project's kept page is never another project's", async () => {
  const a = await project('Kept A');
  const b = await project('Kept B');
  await createKey(a, { name: 'only in A' });
  await service.waitForEvents(a.projectId, 3);
  await service.waitForEvents(b.projectId, 2);
  await service.waitForJobsDrained();
  for (let i = 0; i < 2; i += 1) {
    for (const [p, total] of [[a, 3], [b, 2]] as const) {
      const reply = await service.request('GET', '/v1/event', { key: p.key });
      assert.equal(reply.body.response.total, total);
      assert.deepEqual(reply.body.response.data.map((e: any) => e.id), (await sqlFeed(p.projectId)).map((e) => e.id));
    }
  }
});

test('a key revoked after its project\'s page was kept is refused on its next read', async () => {
  const p = await project('Kept page, revoked key');
  const reader = await createKey(p, { name: 'reader', scope: ['event:read'] });
  await service.waitForEvents(p.projectId, 3);
  await service.waitForJobsDrained();
  assert.equal((await service.request('GET', '/v1/event', { key: reader.key })).status, 200);
  assert.equal((await service.request('GET', '/v1/event', { key: reader.key })).status, 200);
  const revoked = await service.request('DELETE', `/v1/key/${reader.id}`, { key: p.key });
  assert.equal(revoked.status, 200, revoked.text);
  const reply = await service.request('GET', '/v1/event', { key: reader.key });
  assert.equal(reply.status, 403, reply.text);
  assert.deepEqual(reply.body, { code: 403, title: 'Forbidden', response: MESSAGES.refused });
});

test('a project with many more events than the statistics know still gets its page from the index, newest first', async (t) => {
  if (!(await canClearStatistics(service.db))) {
    t.skip('pg_clear_relation_stats is PostgreSQL 18\'s');
    return;
  }
  const p = await project('Many events, no statistics');
  await service.waitForEvents(p.projectId, 1);
  await service.waitForJobsDrained();
  // 10,000 events older than the project's own, numbered after them, as bench/scale.ts loads its project.
  await service.db.query(`
    INSERT INTO events (id, project_id, type_id, related_table, related_id, origin, ip_address, details, created_at, sequence, actor_id, hash, body)
    SELECT e.id, $1, t.id, 'key', 'papi_00000000000000000000', 'api', '127.0.0.1', '{}', e.created_at, e.sequence, NULL, e.hash,
           '{"id":' || to_json(e.id)::text || ',"object":"event","type":{"id":' || to_json(t.id)::text || ',"name":' || to_json(t.name)::text
             || '},"related":{"table":"key","id":"papi_00000000000000000000"},"origin":"api","ip_address":"127.0.0.1","details":{},"created_at":'
             || unix_seconds(e.created_at) || ',"sequence":' || e.sequence || ',"actor":{"type":"key","id":null},"hash":"' || e.hash || '"}'
    FROM (SELECT 'evnt_' || substr(md5(g::text || $1), 1, 20) AS id, now_seconds() - make_interval(days => 1, secs => g) AS created_at,
                 head.total + g AS sequence, encode(sha256(g::text::bytea), 'hex') AS hash
          FROM generate_series(1, 10000) g, (SELECT count(*) AS total FROM events WHERE project_id = $1) head) e,
         event_types t
    WHERE t.name = 'key.created'`, [p.projectId]);
  // As a table not analyzed since those rows came, or a project outside the statistics' most common values.
  await clearStatistics(service.db, 'events');
  const plan = scansOf(await planNodes(service.db, 'event_list', ['text', 'bigint'], [p.projectId, 100]), 'events');
  assert.deepEqual(plan, { scans: [['Index Scan', 'events_project_newest']], rows: [100], sorts: 0 });

  const page = await service.request('GET', '/v1/event', { key: p.key });
  assert.equal(page.status, 200, page.text);
  const data = page.body.response.data as Array<{ id: string }>;
  assert.equal(data.length, 100);
  assert.deepEqual(data.map((e) => e.id), (await sqlFeed(p.projectId)).slice(0, 100).map((e) => e.id));
});

test('the service log holds no key secret, no secret hash and no Bearer header value', async () => {
  assert.ok(secrets.seen.length > 100, 'the file made its keys');
  // Logging is asynchronous; give the last lines time to land.
  await sleep(500);
  secrets.assertLogClean(service.logText(), /\/v1\/event/);
});
