// The audit trail in order, attributed and verifiable (README, "The audit trail"): each project's
// events are numbered 1, 2, 3 … without gaps or repeats in the order the audit writer commits
// them, also when writers race; each names its actor; each chains the previous event's hash, so
// a client can verify the whole trail from the API's own answers, and an edit is caught.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import canonicalize from 'canonicalize';
import { backfillChains, chainHash, GENESIS_HASH, verifyChain } from '../../domain/audit-chain.ts';
import { writeEvents } from '../../domain/audit.ts';
import { eventJson, eventView } from '../../domain/events.ts';
import type { AuditJob } from '../../domain/jobs.ts';
import { newId } from '../../lib/ids.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { Secrets } from '../support/secrets.ts';

const secrets = new Secrets();

let service: TestService;

before(async () => {
  service = await TestService.start();
});
after(() => service.stop());

const project = (name: string) => secrets.project(service, name);

async function sequences(projectId: string): Promise<number[]> {
  const { rows } = await service.db.query('SELECT sequence::int AS s FROM events WHERE project_id = $1 ORDER BY sequence', [projectId]);
  return rows.map((r) => r.s);
}

function job(p: TestProject, name: string, createdAt = Math.floor(Date.now() / 1000)): AuditJob {
  return {
    id: newId('evnt'), project_id: p.projectId, type: 'key.created', related_table: 'key', related_id: newId('papi'),
    origin: 'api', actor_id: p.keyId, ip_address: '127.0.0.1', details: { name, scope: ['*'], expires_at: null }, created_at: createdAt,
  };
}

/** A client's own check, as README "The audit trail" tells it: ten lines over GET /v1/event. */
function clientVerifies(events: Array<Record<string, any>>): boolean {
  let previous = '0'.repeat(64);
  for (const event of [...events].sort((a, b) => a.sequence - b.sequence)) {
    const { hash, ...rest } = event;
    const expected = createHash('sha256').update(previous + canonicalize(rest), 'utf8').digest('hex');
    if (hash !== expected) return false;
    previous = hash;
  }
  return true;
}

test('a project\'s events are numbered 1..n without gaps, in the order of its changes, and the API\'s own answers verify', async () => {
  const p = await project('Ordered');
  const made = await secrets.key(service, p.key, { name: 'made then revoked', scope: ['key:read'] });
  const del = await service.request('DELETE', `/v1/key/${made.id}`, { key: p.key });
  assert.equal(del.status, 200, del.text);
  await service.waitForEvents(p.projectId, 4);
  await service.waitForJobsDrained();
  assert.deepEqual(await sequences(p.projectId), [1, 2, 3, 4]);

  const feed = (await service.request('GET', '/v1/event', { key: p.key })).body.response;
  // Newest first; within one second the order the changes happened: revoked above created.
  assert.deepEqual(feed.data.slice(0, 2).map((e: any) => [e.sequence, e.type.name, e.related.id]),
    [[4, 'key.revoked', made.id], [3, 'key.created', made.id]]);
  // The project and its first key are one change: its two events are 1 and 2.
  assert.deepEqual(feed.data.slice(2).map((e: any) => e.sequence), [2, 1]);
  assert.deepEqual(feed.data.map((e: any) => e.actor), [
    { type: 'key', id: p.keyId }, { type: 'key', id: p.keyId }, { type: 'workspace', id: null }, { type: 'workspace', id: null },
  ]);
  assert.equal(feed.data.at(-1).hash, createHash('sha256')
    .update(GENESIS_HASH + canonicalize({ ...feed.data.at(-1), hash: undefined }), 'utf8').digest('hex'));
  assert.ok(clientVerifies(feed.data), 'the chain verifies from the API\'s answers alone');
  assert.deepEqual(await verifyChain(service.db, p.projectId), { events: 4, verified: true });
});

test('the README\'s worked example holds', () => {
  const example = {
    id: 'evnt_5f0c1e7a9b2d4c6e8a10', object: 'event' as const, type: { id: 'evty_a507b62d394c8e7af5bb', name: 'project.created' },
    related: { table: 'project', id: 'proj_1b2c3d4e5f60718293a4' }, origin: 'workspace' as const, ip_address: '127.0.0.1',
    details: { name: 'Acme', consumer_id: 'cons_9a8b7c6d5e4f30211203' }, created_at: 1795420933, sequence: 1,
    actor: { type: 'workspace' as const, id: null }, hash: null,
  };
  assert.equal(chainHash(GENESIS_HASH, example), '2c84bd1a56f76f5ecc5042178b90a59f55ddcb780feb73be04779af334a31f76');
});

test('writers racing on one project number its events without gaps or repeats, and the chain holds', async () => {
  const p = await project('Raced');
  await service.waitForEvents(p.projectId, 2);
  await service.waitForJobsDrained();
  const batches = Array.from({ length: 8 }, (_, b) => Array.from({ length: 5 }, (_, i) => job(p, `raced ${b}-${i}`)));
  // One job in two batches at once: written once, numbered once.
  batches[1]!.push(batches[0]![0]!);
  const written = await Promise.all(batches.map((batch) => writeEvents(service.db, batch)));
  assert.equal(written.reduce((a, b) => a + b, 0), 40);
  assert.deepEqual(await sequences(p.projectId), Array.from({ length: 42 }, (_, i) => i + 1));
  assert.deepEqual(await verifyChain(service.db, p.projectId), { events: 42, verified: true });
  const { rows: [head] } = await service.db.query('SELECT total::int AS total FROM project_event_counts WHERE project_id = $1', [p.projectId]);
  assert.equal(head.total, 42, 'the feed\'s total is the last sequence');
});

test('expiry is attributed to the system', async () => {
  const p = await project('Expired');
  const doomed = await secrets.key(service, p.key, { name: 'doomed', scope: ['key:read'], expires_at: Math.floor(Date.now() / 1000) + 3600 });
  await service.db.query("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", [doomed.id]);
  const { expireDueKeys } = await import('../../domain/keys.ts');
  await expireDueKeys(service.services);
  await service.waitForEvents(p.projectId, 4);
  await service.waitForJobsDrained();
  const feed = (await service.request('GET', '/v1/event', { key: p.key })).body.response;
  const expired = feed.data.find((e: any) => e.type.name === 'key.expired');
  assert.deepEqual([expired.origin, expired.actor], ['system', { type: 'system', id: null }]);
});

/** A project whose chain holds five events (its creation, its key, three keys made), verified whole. */
async function projectOfFiveEvents(name: string): Promise<TestProject> {
  const p = await project(name);
  for (let i = 0; i < 3; i++) await secrets.key(service, p.key, { name: `key ${i}`, scope: ['key:read'] });
  await service.waitForEvents(p.projectId, 5);
  await service.waitForJobsDrained();
  assert.deepEqual(await verifyChain(service.db, p.projectId), { events: 5, verified: true });
  return p;
}

test('an event edited in the database breaks the chain at its sequence', async () => {
  const p = await projectOfFiveEvents('Tampered');
  await service.db.query(`UPDATE events SET details = '{"name":"someone else"}' WHERE project_id = $1 AND sequence = 3`, [p.projectId]);
  assert.deepEqual(await verifyChain(service.db, p.projectId),
    { events: 2, verified: false, sequence: 3, reason: 'its hash does not match its content and the previous hash' });
  await service.db.query('DELETE FROM events WHERE project_id = $1 AND sequence = 3', [p.projectId]);
  assert.deepEqual(await verifyChain(service.db, p.projectId), { events: 2, verified: false, sequence: 3, reason: 'sequence 3 is missing' });
});

test('the chain is held to the head the writer keeps: events deleted from its end, or a chain rewritten whole, are caught', async () => {
  const p = await projectOfFiveEvents('Rewritten');

  // Event 3 rewritten, and every hash from it on recomputed, as one who knows the rule would: each
  // event agrees with the one before it, and only the head the writer recorded tells.
  const { rows } = await service.db.query('SELECT * FROM event_view WHERE project_id = $1 ORDER BY sequence', [p.projectId]);
  let previous = rows[1].hash as string;
  for (const row of rows.slice(2)) {
    const event = eventView(Number(row.sequence) === 3 ? { ...row, details: { name: 'someone else', scope: ['key:read'], expires_at: null } } : row);
    previous = chainHash(previous, event);
    await service.db.query('UPDATE events SET details = $2, hash = $3, body = $4 WHERE id = $1',
      [row.id, JSON.stringify(event.details), previous, eventJson(event, previous)]);
  }
  assert.deepEqual(await verifyChain(service.db, p.projectId),
    { events: 4, verified: false, sequence: 5, reason: "its hash is not the one the chain's head recorded" });
  const answered = (await service.request('GET', '/v1/event', { key: p.key })).body.response.data;
  assert.equal(clientVerifies(answered), true, 'a chain rewritten whole still verifies on its own: the head is what catches it');

  // The newest event deleted: nothing before it breaks, but the head says the chain goes on to 5.
  await service.db.query('DELETE FROM events WHERE project_id = $1 AND sequence = 5', [p.projectId]);
  assert.deepEqual(await verifyChain(service.db, p.projectId), { events: 4, verified: false, sequence: 5, reason: 'sequence 5 is missing' });
});

test('an event whose stored JSON (what the API answers) was edited breaks the chain at its sequence', async () => {
  const p = await project('Tampered answer');
  await secrets.key(service, p.key, { name: 'honest', scope: ['key:read'] });
  await service.waitForEvents(p.projectId, 3);
  await service.waitForJobsDrained();
  const { rows: [row] } = await service.db.query('SELECT id FROM events WHERE project_id = $1 AND sequence = 3', [p.projectId]);
  await service.db.query(`UPDATE events SET body = replace(body, '"honest"', '"forged"') WHERE id = $1`, [row.id]);
  const answered = await service.request('GET', `/v1/event/${row.id}`, { key: p.key });
  assert.equal(answered.body.response.details.name, 'forged', 'the API answers the stored JSON');
  assert.deepEqual(await verifyChain(service.db, p.projectId),
    { events: 2, verified: false, sequence: 3, reason: 'the JSON the API answers for it does not match its content' });
});

test('release gives events written before they kept their JSON the JSON the API answers', async () => {
  const p = await project('Before stored JSON');
  await secrets.key(service, p.key, { name: 'older', scope: ['key:read'] });
  await service.waitForEvents(p.projectId, 3);
  await service.waitForJobsDrained();
  const before = (await service.request('GET', '/v1/event', { key: p.key })).body;
  // As a database migrated by 0012 holds them: the rows of before have no JSON, which the
  // constraint (NOT VALID) allows for them only.
  await service.db.query('ALTER TABLE events DROP CONSTRAINT events_body_written');
  try {
    await service.db.query('UPDATE events SET body = NULL WHERE project_id = $1', [p.projectId]);
  } finally {
    await service.db.query('ALTER TABLE events ADD CONSTRAINT events_body_written CHECK (body IS NOT NULL) NOT VALID');
  }
  await assert.rejects(service.db.query('UPDATE events SET details = details WHERE project_id = $1', [p.projectId]), /events_body_written/);
  assert.ok(await backfillChains(service.db) >= 1);
  assert.deepEqual((await service.request('GET', '/v1/event', { key: p.key })).body, before);
  // What was answered is what the backfill stored, not a page kept from before it.
  const { rows: stored } = await service.db.query(
    'SELECT body FROM events WHERE project_id = $1 ORDER BY created_at DESC, sequence DESC', [p.projectId]);
  assert.deepEqual(before.response.data, stored.map((r) => JSON.parse(r.body)));
  assert.deepEqual(await verifyChain(service.db, p.projectId), { events: 3, verified: true });
});

test('release hashes the events written before the chain existed, and the writer carries on from them', async () => {
  const p = await project('Legacy');
  await service.waitForEvents(p.projectId, 2);
  await service.waitForJobsDrained();
  // As a database migrated by 0006 holds them: the rows of before have no hash, which the
  // constraint of 0015 (NOT VALID) allows for them only.
  await service.db.query('ALTER TABLE events DROP CONSTRAINT events_hash_written');
  try {
    await service.db.query('UPDATE events SET hash = NULL WHERE project_id = $1', [p.projectId]);
  } finally {
    await service.db.query('ALTER TABLE events ADD CONSTRAINT events_hash_written CHECK (hash IS NOT NULL) NOT VALID');
  }
  await service.db.query('UPDATE project_event_counts SET last_hash = NULL WHERE project_id = $1', [p.projectId]);
  await assert.rejects(writeEvents(service.db, [job(p, 'too early')]), /not yet hashed/);
  assert.ok(await backfillChains(service.db) >= 1);
  assert.equal(await writeEvents(service.db, [job(p, 'after the backfill')]), 1);
  assert.deepEqual(await verifyChain(service.db, p.projectId), { events: 3, verified: true });
});
