// The write side of the audit trail (api.md 6; decisions.md "Events"): every committed change has
// exactly one event of the right type, related record, origin, address and details; a change that
// rolls back leaves neither event nor outbox row; the audit writer is idempotent.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import { writeEvents, writeEventsApart } from '../../domain/audit.ts';
import type { AuditJob } from '../../domain/jobs.ts';
import { expireDueKeys, insertKey } from '../../domain/keys.ts';
import { disableConsumer, disableProject } from '../../domain/projects.ts';
import { change } from '../../domain/services.ts';
import { newId } from '../../lib/ids.ts';
import { envelope, MESSAGES } from '../support/assertions.ts';
import { ID } from '../support/ids.ts';
import { Secrets } from '../support/secrets.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { nowSeconds, sleep, waitFor } from '../support/wait.ts';

let service: TestService;
/** Every secret this file has seen: none may appear in an event or in the log. */
const secrets = new Secrets();

const WORKSPACE = { origin: 'workspace', ip: '127.0.0.1' } as const;
const KEY_REFUSED = envelope(403, MESSAGES.refused);

before(async () => {
  service = await TestService.start();
});
after(() => service.stop());

const project = (name: string) => secrets.project(service, name);
const createKey = (owner: TestProject, body: Record<string, unknown>) => secrets.key(service, owner.key, body);

interface EventRow {
  id: string;
  project_id: string;
  type_id: string;
  type_name: string;
  related_table: string;
  related_id: string;
  origin: string;
  ip_address: string;
  details: unknown;
  created_at: number;
  sequence: number;
  actor_id: string | null;
  hash: string;
  raw: string;
}

/** Every event touching a record, oldest first, straight from the database. */
async function eventsOf(relatedId: string): Promise<EventRow[]> {
  const { rows } = await service.db.query(
    `SELECT e.id, e.project_id, t.id AS type_id, t.name AS type_name, e.related_table, e.related_id, e.origin,
            e.ip_address, e.details, extract(epoch FROM e.created_at)::bigint AS created_at, e.sequence::int AS sequence,
            e.actor_id, e.hash, row_to_json(e)::text AS raw
     FROM events e JOIN event_types t ON t.id = e.type_id
     WHERE e.related_id = $1 ORDER BY e.created_at, e.id`, [relatedId]);
  return rows.map((r) => ({ ...r, created_at: Number(r.created_at) }));
}

async function projectEventCount(projectId: string): Promise<{ rows: number; counter: number }> {
  const { rows: [a] } = await service.db.query('SELECT count(*)::int AS n FROM events WHERE project_id = $1', [projectId]);
  const { rows: [b] } = await service.db.query('SELECT total FROM project_event_counts WHERE project_id = $1', [projectId]);
  return { rows: a.n, counter: b ? Number(b.total) : 0 };
}

async function typeId(name: string): Promise<string> {
  const { rows: [row] } = await service.db.query('SELECT id FROM event_types WHERE name = $1', [name]);
  assert.ok(row, `event type ${name} is seeded`);
  return row.id;
}

function unixOf(value: Date): number {
  return Math.floor(value.getTime() / 1000);
}

/**
 * The one event of `type` for a record, checked field by field against the database and, when the
 * project can still read its trail, against GET /v1/event/<id>.
 */
async function expectOneEvent(relatedId: string, expected: {
  type: string; projectId: string; table: string; origin: string; ip: string; details: unknown; createdAt: number; readWith?: string;
  /** The key that made an API change. */
  actorKey?: string;
}): Promise<EventRow> {
  await service.waitForJobsDrained();
  const all = await eventsOf(relatedId);
  const matching = all.filter((e) => e.type_name === expected.type);
  assert.equal(matching.length, 1, `exactly one ${expected.type} for ${relatedId}, found ${matching.length}`);
  const event = matching[0]!;
  assert.match(event.id, ID.event);
  assert.equal(event.project_id, expected.projectId);
  assert.equal(event.type_id, await typeId(expected.type));
  assert.equal(event.related_table, expected.table);
  assert.equal(event.origin, expected.origin);
  assert.equal(event.ip_address, expected.ip);
  assert.deepEqual(event.details, expected.details);
  assert.equal(event.created_at, expected.createdAt);
  assert.equal(event.actor_id, expected.origin === 'api' ? expected.actorKey : null);
  assert.ok(Number.isInteger(event.sequence) && event.sequence >= 1);
  assert.match(event.hash, /^[0-9a-f]{64}$/);
  secrets.assertNoneIn(event.raw, `the ${expected.type} event row`);

  if (expected.readWith) {
    const reply = await service.request('GET', `/v1/event/${event.id}`, { key: expected.readWith });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, {
      code: 200,
      title: 'OK',
      response: {
        id: event.id,
        object: 'event',
        type: { id: event.type_id, name: expected.type },
        related: { table: expected.table, id: relatedId },
        origin: expected.origin,
        ip_address: expected.ip,
        details: expected.details,
        created_at: expected.createdAt,
        sequence: event.sequence,
        actor: expected.origin === 'api' ? { type: 'key', id: expected.actorKey } : { type: expected.origin, id: null },
        hash: event.hash,
      },
    });
    secrets.assertNoneIn(reply.text, `GET /v1/event/${event.id}`);
  }
  return event;
}

test('createProject records project.created and its first key.created, origin workspace', async () => {
  const p = await project('Recorded project');
  await service.waitForEvents(p.projectId, 2);
  const { rows: [projectRow] } = await service.db.query('SELECT created_at FROM projects WHERE id = $1', [p.projectId]);
  const { rows: [keyRow] } = await service.db.query('SELECT created_at FROM api_keys WHERE id = $1', [p.keyId]);

  await expectOneEvent(p.projectId, {
    type: 'project.created', projectId: p.projectId, table: 'project', origin: 'workspace', ip: '127.0.0.1',
    details: { name: 'Recorded project', consumer_id: p.consumerId }, createdAt: unixOf(projectRow.created_at), readWith: p.key,
  });
  await expectOneEvent(p.keyId, {
    type: 'key.created', projectId: p.projectId, table: 'key', origin: 'workspace', ip: '127.0.0.1',
    details: { name: 'Default key', scope: ['*'], expires_at: null }, createdAt: unixOf(keyRow.created_at), readWith: p.key,
  });
  assert.equal((await eventsOf(p.projectId)).length, 1);
  assert.equal((await eventsOf(p.keyId)).length, 1);
  assert.equal((await eventsOf(p.consumerId)).length, 0);
  assert.deepEqual(await projectEventCount(p.projectId), { rows: 2, counter: 2 });
});

test('POST /v1/key records one key.created with origin api, the caller\'s address and no secret', async () => {
  const p = await project('Key created');
  await service.waitForEvents(p.projectId, 2);
  const expiresAt = nowSeconds() + 86_400;
  const made = await createKey(p, { name: 'Recorded key', scope: ['key:read', 'event:read', 'key:read'], expires_at: expiresAt });
  const never = await createKey(p, { name: 'Never expires', scope: ['app:*'], expires_at: 0 });

  await expectOneEvent(made.id, {
    type: 'key.created', projectId: p.projectId, table: 'key', origin: 'api', ip: '127.0.0.1',
    details: { name: 'Recorded key', scope: ['key:read', 'event:read'], expires_at: expiresAt }, createdAt: made.object.created_at, readWith: p.key,
    actorKey: p.keyId,
  });
  await expectOneEvent(never.id, {
    type: 'key.created', projectId: p.projectId, table: 'key', origin: 'api', ip: '127.0.0.1',
    details: { name: 'Never expires', scope: ['app:*'], expires_at: null }, createdAt: never.object.created_at, readWith: made.key,
    actorKey: p.keyId,
  });
  assert.equal((await eventsOf(made.id)).length, 1);
  assert.equal((await eventsOf(never.id)).length, 1);

  // The hash really is in the database, so the check above could have found it.
  const { rows: [hashRow] } = await service.db.query("SELECT encode(secret_hash, 'hex') AS hex FROM api_keys WHERE id = $1", [made.id]);
  assert.equal(hashRow.hex, createHash('sha256').update(made.key).digest('hex'));

  // Refused requests and reads change nothing, so they record nothing.
  const refused = [
    await service.request('POST', '/v1/key', { key: p.key, body: {} }),
    await service.request('POST', '/v1/key', { key: p.key, body: { name: 'bad', scope: 'key:read' } }),
    await service.request('POST', '/v1/key', { key: made.key, body: { name: 'wider', scope: ['*'] } }),
    await service.request('DELETE', `/v1/key/${p.keyId}`, { key: p.key }),
    await service.request('DELETE', '/v1/key/papi_00000000000000000000', { key: p.key }),
  ];
  assert.deepEqual(refused.map((r) => r.status), [422, 400, 403, 422, 404]);
  await service.request('GET', '/v1/key', { key: p.key });
  await service.request('GET', '/v1/event', { key: p.key });
  await service.waitForJobsDrained();
  assert.deepEqual(await projectEventCount(p.projectId), { rows: 4, counter: 4 });
});

test('DELETE /v1/key/<id> records one key.revoked; revoking again records nothing', async () => {
  const p = await project('Key revoked');
  const doomed = await createKey(p, { name: 'To revoke', scope: ['key:read'] });
  await service.waitForEvents(p.projectId, 3);

  const del = await service.request('DELETE', `/v1/key/${doomed.id}`, { key: p.key });
  assert.equal(del.status, 200, del.text);
  assert.deepEqual(del.body, { code: 200, title: 'OK', response: { deleted: true, id: doomed.id } });
  const { rows: [row] } = await service.db.query('SELECT status, updated_at FROM api_keys WHERE id = $1', [doomed.id]);
  assert.equal(row.status, 'revoked');

  await expectOneEvent(doomed.id, {
    type: 'key.revoked', projectId: p.projectId, table: 'key', origin: 'api', ip: '127.0.0.1',
    details: { name: 'To revoke' }, createdAt: unixOf(row.updated_at), readWith: p.key,
    actorKey: p.keyId,
  });
  const again = await service.request('DELETE', `/v1/key/${doomed.id}`, { key: p.key });
  assert.equal(again.status, 404, again.text);
  await service.waitForJobsDrained();
  assert.deepEqual((await eventsOf(doomed.id)).map((e) => e.type_name).sort(), ['key.created', 'key.revoked']);
  assert.deepEqual(await projectEventCount(p.projectId), { rows: 4, counter: 4 });
});

test('expiry records one key.expired with origin system', async () => {
  const p = await project('Key expired');
  const doomed = await createKey(p, { name: 'To expire', expires_at: nowSeconds() + 3600 });
  const survivor = await createKey(p, { name: 'Stays', expires_at: nowSeconds() + 3600 });
  await service.waitForEvents(p.projectId, 4);
  await service.db.query("UPDATE api_keys SET expires_at = now_seconds() - interval '30 seconds' WHERE id = $1", [doomed.id]);
  const { rows: [due] } = await service.db.query('SELECT expires_at FROM api_keys WHERE id = $1', [doomed.id]);

  // The scheduled key.expire job may get there first, and may still be committing when this runs
  // (SKIP LOCKED passes the key it holds over): either way the key ends expired, with one event.
  await expireDueKeys(service.services);
  const row = await waitFor('the key marked expired', async () => {
    const { rows: [r] } = await service.db.query('SELECT status, updated_at FROM api_keys WHERE id = $1', [doomed.id]);
    return r.status === 'expired' ? r : undefined;
  });
  await service.waitForEvents(p.projectId, 5);
  await expectOneEvent(doomed.id, {
    type: 'key.expired', projectId: p.projectId, table: 'key', origin: 'system', ip: '127.0.0.1',
    details: { expires_at: unixOf(due.expires_at) }, createdAt: unixOf(row.updated_at), readWith: p.key,
  });

  assert.equal(await expireDueKeys(service.services), 0, 'nothing left to expire');
  await service.waitForJobsDrained();
  assert.deepEqual((await eventsOf(doomed.id)).map((e) => e.type_name).sort(), ['key.created', 'key.expired']);
  assert.deepEqual((await eventsOf(survivor.id)).map((e) => e.type_name).sort(), ['key.created']);
  assert.deepEqual(await projectEventCount(p.projectId), { rows: 5, counter: 5 });
  const expired = await service.request('GET', '/v1/key/current', { key: doomed.key });
  assert.deepEqual(expired.body, { code: 401, title: 'Unauthorized', response: 'The API key has expired.' });
});

test('disableProject records one project.disabled; disabling again records nothing', async () => {
  const p = await project('Project disabled');
  await service.waitForEvents(p.projectId, 2);
  const ok = await service.request('GET', '/v1/key/current', { key: p.key });
  assert.equal(ok.status, 200, ok.text);

  await disableProject(service.services, WORKSPACE, p.projectId);
  const { rows: [row] } = await service.db.query('SELECT status, updated_at FROM projects WHERE id = $1', [p.projectId]);
  assert.equal(row.status, 'disabled');
  await expectOneEvent(p.projectId, {
    type: 'project.disabled', projectId: p.projectId, table: 'project', origin: 'workspace', ip: '127.0.0.1',
    details: [], createdAt: unixOf(row.updated_at),
  });

  await disableProject(service.services, WORKSPACE, p.projectId);
  await service.waitForJobsDrained();
  assert.deepEqual((await eventsOf(p.projectId)).map((e) => e.type_name).sort(), ['project.created', 'project.disabled']);
  assert.deepEqual(await projectEventCount(p.projectId), { rows: 3, counter: 3 });
  const refused = await service.request('GET', '/v1/event', { key: p.key });
  assert.deepEqual(refused.body, KEY_REFUSED);
});

test('disableConsumer records one consumer.disabled in the consumer\'s project', async () => {
  const p = await project('Consumer disabled');
  const bystander = await project('Bystander');
  await service.waitForEvents(p.projectId, 2);
  await service.waitForEvents(bystander.projectId, 2);

  await disableConsumer(service.services, { origin: 'workspace', ip: '192.0.2.10' }, p.consumerId);
  const { rows: [row] } = await service.db.query('SELECT status, updated_at FROM consumers WHERE id = $1', [p.consumerId]);
  assert.equal(row.status, 'disabled');
  await expectOneEvent(p.consumerId, {
    type: 'consumer.disabled', projectId: p.projectId, table: 'consumer', origin: 'workspace', ip: '192.0.2.10',
    details: [], createdAt: unixOf(row.updated_at),
  });
  await disableConsumer(service.services, WORKSPACE, p.consumerId);
  await service.waitForJobsDrained();
  assert.equal((await eventsOf(p.consumerId)).length, 1);
  assert.deepEqual(await projectEventCount(p.projectId), { rows: 3, counter: 3 });
  assert.deepEqual(await projectEventCount(bystander.projectId), { rows: 2, counter: 2 });

  assert.deepEqual((await service.request('GET', '/v1/key/current', { key: p.key })).body, KEY_REFUSED);
  assert.equal((await service.request('GET', '/v1/key/current', { key: bystander.key })).status, 200);
});

test('a change that rolls back leaves no key, no outbox row and no event', async () => {
  const p = await project('Rollback');
  await service.waitForEvents(p.projectId, 2);
  await service.waitForJobsDrained();
  const input = { name: 'Never committed', scope: ['*'], expiresAt: null };

  let rolledBackId = '';
  await assert.rejects(change(service.services, async (tx) => {
    const { row, secret } = await insertKey(tx, { origin: 'api', ip: '127.0.0.1' }, p.projectId, p.consumerId, input);
    rolledBackId = row.id;
    secrets.add(secret);
    throw new Error('rollback');
  }), /rollback/);
  assert.match(rolledBackId, ID.key);

  // Control: the same change, committed, leaves all three.
  const committed = await change(service.services, (tx) =>
    insertKey(tx, { origin: 'api', ip: '127.0.0.1' }, p.projectId, p.consumerId, { ...input, name: 'Committed' }));
  secrets.add(committed.secret);

  await service.waitForJobsDrained();
  await sleep(1500);
  await service.waitForJobsDrained();

  const keys = async (id: string) => (await service.db.query('SELECT count(*)::int AS n FROM api_keys WHERE id = $1', [id])).rows[0].n;
  const handedOver = async (id: string) => (await service.db.query(
    `SELECT (SELECT count(*) FROM audit_outbox WHERE related_id = $1)::int AS outbox,
            (SELECT count(*) FROM pgboss.job WHERE name = 'audit.write' AND data->>'related_id' = $1)::int AS jobs`, [id])).rows[0];

  assert.equal(await keys(committed.row.id), 1);
  assert.deepEqual(await handedOver(committed.row.id), { outbox: 0, jobs: 0 }, 'drained, and no job per change');
  assert.equal((await eventsOf(committed.row.id)).length, 1);

  assert.equal(await keys(rolledBackId), 0, 'no api_keys row');
  assert.deepEqual(await handedOver(rolledBackId), { outbox: 0, jobs: 0 }, 'no outbox row, no audit.write job');
  assert.equal((await eventsOf(rolledBackId)).length, 0, 'no event');
  assert.deepEqual(await projectEventCount(p.projectId), { rows: 3, counter: 3 });
});

test('the audit writer is idempotent: one job written twice is one event and one count', async () => {
  const p = await project('Idempotent');
  await service.waitForEvents(p.projectId, 2);
  await service.waitForJobsDrained();
  assert.deepEqual(await projectEventCount(p.projectId), { rows: 2, counter: 2 });

  const job: AuditJob = {
    id: newId('evnt'),
    project_id: p.projectId,
    type: 'key.created',
    related_table: 'key',
    related_id: newId('papi'),
    origin: 'api',
    actor_id: p.keyId,
    ip_address: '127.0.0.1',
    details: { name: 'twice' },
    created_at: nowSeconds() - 60,
  };
  assert.equal(await writeEvents(service.db, [job]), 1);
  assert.equal(await writeEvents(service.db, [job]), 0);
  assert.deepEqual(await projectEventCount(p.projectId), { rows: 3, counter: 3 });
  const written = await eventsOf(job.related_id);
  assert.equal(written.length, 1);
  assert.equal(written[0]!.id, job.id);
  assert.equal(written[0]!.created_at, job.created_at, 'created_at is the change\'s time, not the job\'s');

  // Two deliveries at once: still one.
  const racing: AuditJob = { ...job, id: newId('evnt'), related_id: newId('papi') };
  const results = await Promise.all([writeEvents(service.db, [racing]), writeEvents(service.db, [racing]), writeEvents(service.db, [racing])]);
  assert.deepEqual(results.sort(), [0, 0, 1]);
  assert.equal((await eventsOf(racing.related_id)).length, 1);
  assert.deepEqual(await projectEventCount(p.projectId), { rows: 4, counter: 4 });

  // An event the service really wrote (drained from audit_outbox), delivered again as a job.
  const [real] = await eventsOf(p.keyId);
  assert.ok(real, 'the first key\'s event is written');
  const again: AuditJob = {
    id: real.id, project_id: real.project_id, type: real.type_name as AuditJob['type'], related_table: 'key', related_id: real.related_id,
    origin: 'workspace', actor_id: null, ip_address: real.ip_address, details: real.details as AuditJob['details'], created_at: real.created_at,
  };
  assert.equal(await writeEvents(service.db, [again]), 0);
  assert.equal((await eventsOf(p.keyId)).length, 1);
  assert.deepEqual(await projectEventCount(p.projectId), { rows: 4, counter: 4 });

  // One batch holding a new job, a written one and the new one again: one event more, counted once.
  const fresh: AuditJob = { ...job, id: newId('evnt'), related_id: newId('papi') };
  assert.equal(await writeEvents(service.db, [fresh, job, fresh]), 1);
  assert.equal((await eventsOf(fresh.related_id)).length, 1);
  assert.deepEqual(await projectEventCount(p.projectId), { rows: 5, counter: 5 });
});

test('the audit writer refuses a job of an unknown type instead of dropping its event', async () => {
  const p = await project('Unknown type');
  const job = { id: newId('evnt'), project_id: p.projectId, type: 'key.melted', related_table: 'key', related_id: newId('papi'),
    origin: 'api', ip_address: '127.0.0.1', details: [], created_at: nowSeconds() } as unknown as AuditJob;
  // By message: Citus reports the not-null violation of a shard's copy as XX000, not 23502.
  await assert.rejects(writeEvents(service.db, [job]), { message: /null value in column "type_id"/ });
  assert.equal((await eventsOf(job.related_id)).length, 0);

  // In the worker's batch, the bad job does not hold back the others' events.
  const good: AuditJob = { ...job, id: newId('evnt'), related_id: newId('papi'), type: 'key.created', details: { name: 'good' } };
  await assert.rejects(writeEventsApart(service.db, [job, good]), { message: /null value in column "type_id"/ });
  assert.equal((await eventsOf(good.related_id)).length, 1);
  assert.equal((await eventsOf(job.related_id)).length, 0);
  assert.equal(await writeEventsApart(service.db, [good]), 0, 'written once');
});

test('no event anywhere holds a secret or a secret hash', async () => {
  await service.waitForJobsDrained();
  const { rows } = await service.db.query('SELECT row_to_json(e)::text AS raw FROM events e');
  assert.ok(rows.length > 20, 'the file made events');
  secrets.assertNoneIn(rows.map((r) => r.raw).join('\n'), 'the events table');
  const { rows: jobs } = await service.db.query("SELECT data::text AS raw FROM pgboss.job WHERE name LIKE 'audit.%'");
  secrets.assertNoneIn(jobs.map((r) => r.raw).join('\n'), 'the audit jobs');
});

test('the service log holds no key secret, no secret hash and no Bearer header value', async () => {
  assert.ok(secrets.seen.length > 10, 'the file made its keys');
  await sleep(500);
  secrets.assertLogClean(service.logText(), /\/v1\/key/);
});
