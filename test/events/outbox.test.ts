// How a change hands its event over (README, "The audit trail"): a row of audit_outbox in the
// change's own transaction, drained by the `audit.drain` job. Each event is written exactly once,
// in the order of hand-over, however many drains run and wherever one dies; an event whose job was
// never sent is found by the worker's sweep; jobs of the earlier hand-over (`audit.write`) are
// still written; an event the drain could not write fails its change instead.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { drainOutbox, recordEvent } from '../../domain/audit.ts';
import type { AuditJob, EventType } from '../../domain/jobs.ts';
import { change, type Services } from '../../domain/services.ts';
import { queryFile } from '../../lib/pool.ts';
import { newId } from '../../lib/ids.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { nowSeconds, waitFor } from '../support/wait.ts';

/** No job workers: the drains here are run by hand. */
let idle: TestService;
/** With the worker's job handlers, as the `worker` process runs them. */
let live: TestService;

before(async () => {
  [idle, live] = await Promise.all([TestService.start({ jobWorkers: false }), TestService.start()]);
});
after(() => Promise.all([idle.stop(), live.stop()]));

const WORKSPACE = { origin: 'workspace', ip: '127.0.0.1' } as const;

/** `count` changes of one project, one after another, each handing over an event; their related ids in order. */
async function handOver(services: Services, p: TestProject, count: number, type: EventType = 'plan.changed'): Promise<string[]> {
  const related: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = newId('papi');
    await change(services, (tx) => recordEvent(tx, WORKSPACE, {
      projectId: p.projectId, type, related: { table: 'key', id }, details: { n: i }, at: nowSeconds(),
    }));
    related.push(id);
  }
  return related;
}

/** The project's events by sequence: their related ids, and whether the sequences run 1..n. */
async function trail(db: pg.Pool, projectId: string): Promise<{ related: string[]; gapless: boolean }> {
  const { rows } = await db.query<{ related_id: string; sequence: string }>(
    'SELECT related_id, sequence FROM events WHERE project_id = $1 ORDER BY sequence', [projectId]);
  return { related: rows.map((r) => r.related_id), gapless: rows.every((r, i) => Number(r.sequence) === i + 1) };
}

const outboxRows = async (db: pg.Pool) => (await db.query('SELECT count(*)::int AS n FROM audit_outbox')).rows[0].n as number;

test('drains run many at once write each event once, numbered in the order the changes handed them over', async () => {
  const p = await idle.createProject('Drains at once');
  const related = await handOver(idle.services, p, 120);
  assert.equal(await outboxRows(idle.db), 122, 'the project\'s two and the 120 wait in the outbox');

  const results = await Promise.all(Array.from({ length: 4 }, () => drainOutbox(idle.db, Infinity, 25)));
  assert.equal(results.reduce((sum, r) => sum + r.written, 0), 122, JSON.stringify(results));
  assert.equal(await outboxRows(idle.db), 0);
  const { related: written, gapless } = await trail(idle.db, p.projectId);
  assert.deepEqual(written.slice(2), related, 'in hand-over order');
  assert.ok(gapless, 'sequences 1..n');

  assert.deepEqual(await drainOutbox(idle.db), { written: 0, more: false }, 'a drain run again finds nothing');
  assert.equal((await trail(idle.db, p.projectId)).related.length, 122);
});

test('a lingering drain takes an event handed over while it lingers, ends once none comes, and ends at once when told to stop', async () => {
  const p = await idle.createProject('Lingering drain');
  await drainOutbox(idle.db);

  // The outbox is empty when it starts: it stays, and writes the change made 100 ms later.
  const lingering = drainOutbox(idle.db, Infinity, undefined, { ms: 1000 });
  await new Promise((resolve) => setTimeout(resolve, 100));
  const [related] = await handOver(idle.services, p, 1);
  const started = Date.now();
  assert.deepEqual(await lingering, { written: 1, more: false });
  const waited = Date.now() - started;
  assert.ok(waited >= 900, `it lingered a second after the last event before ending (${waited} ms)`);
  assert.deepEqual((await trail(idle.db, p.projectId)).related.slice(2), [related]);

  const stop = new AbortController();
  const stopped = drainOutbox(idle.db, Infinity, undefined, { ms: 60_000, signal: stop.signal });
  await new Promise((resolve) => setTimeout(resolve, 50));
  const asked = Date.now();
  stop.abort();
  assert.deepEqual(await stopped, { written: 0, more: false });
  assert.ok(Date.now() - asked < 500, 'a stopping worker is not held by a lingering drain');
});

test('a drain that dies mid-transaction writes nothing; the drain waiting behind it writes every event once', async () => {
  const p = await idle.createProject('Killed drain');
  await drainOutbox(idle.db);
  const related = await handOver(idle.services, p, 30);

  const dying = new pg.Client({ connectionString: idle.databaseUrl });
  dying.on('error', () => undefined);
  await dying.connect();
  const pid = (await dying.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
  await dying.query('BEGIN');
  await queryFile(dying, 'audit_outbox_lock');
  const taken = await queryFile<AuditJob>(dying, 'audit_outbox_take', [10]);
  assert.equal(taken.length, 10, 'the dying drain holds the first ten');

  // Waits for the dying drain's lock; then takes what that drain took, as its death returns it.
  const waiting = drainOutbox(idle.db);
  await new Promise((resolve) => setTimeout(resolve, 200));
  await idle.db.query('SELECT pg_terminate_backend($1::int)', [pid]);
  await dying.end().catch(() => undefined);

  assert.equal((await waiting).written, 30);
  assert.equal(await outboxRows(idle.db), 0);
  const { related: written, gapless } = await trail(idle.db, p.projectId);
  assert.deepEqual(written.slice(2), related);
  assert.ok(gapless);
});

test('an event whose drain job was never sent (its process died after the commit) is found by the worker\'s sweep', async () => {
  const p = await live.createProject('Lost wake-up');
  await live.waitForJobsDrained();
  // The change commits, and nothing is sent after it.
  const silent: Services = { ...live.services, boss: { send: async () => null } as unknown as PgBoss };
  const [related] = await handOver(silent, p, 1);
  await waitFor('the event of the silent change', async () => {
    const { rows } = await live.db.query('SELECT 1 FROM events WHERE related_id = $1', [related]);
    return rows.length > 0 ? true : undefined;
  }, 5000, 50);
  assert.equal(await outboxRows(live.db), 0);
});

test('an audit.write job queued by an earlier release is still written', async () => {
  const p = await live.createProject('Earlier release');
  await live.waitForJobsDrained();
  const job: AuditJob = {
    id: newId('evnt'), project_id: p.projectId, type: 'key.revoked', related_table: 'key', related_id: newId('papi'),
    origin: 'api', actor_id: p.keyId, ip_address: '127.0.0.1', details: { name: 'queued before the upgrade' }, created_at: nowSeconds(),
  };
  assert.ok(await live.services.boss.send('audit.write', job));
  await live.waitForEvents(p.projectId, 3);
  await live.waitForJobsDrained();
  const { rows } = await live.db.query('SELECT id, sequence::int AS sequence FROM events WHERE related_id = $1', [job.related_id]);
  assert.deepEqual(rows, [{ id: job.id, sequence: 3 }]);
});

test('an event the drain could not write fails its own change, and leaves nothing behind', async () => {
  const p = await idle.createProject('Unknown type');
  await drainOutbox(idle.db);
  const keyId = newId('papi');
  await assert.rejects(change(idle.services, async (tx) => {
    await recordEvent(tx, WORKSPACE, { projectId: p.projectId, type: 'key.melted' as EventType, related: { table: 'key', id: keyId }, at: nowSeconds() });
  }), { code: '23502' });
  assert.equal(await outboxRows(idle.db), 0);
  const after = await handOver(idle.services, p, 1);
  assert.equal((await drainOutbox(idle.db)).written, 1, 'the events behind it are written');
  assert.deepEqual((await trail(idle.db, p.projectId)).related.slice(2), after);
});

test('two events handed over at once on a new connection both commit: the hand-off is prepared once', async () => {
  // On a connection that has never handed an event over, both wait on one PREPARE; sending it
  // twice would fail the change (the statement already exists).
  const fresh = new pg.Pool({ connectionString: idle.databaseUrl, max: 1 });
  try {
    const p = await idle.createProject('Concurrent hand-off');
    await drainOutbox(idle.db);
    const ids = [newId('papi'), newId('papi')];
    await change({ ...idle.services, pool: fresh, db: fresh }, (tx) => Promise.all(ids.map((id) => recordEvent(tx, WORKSPACE, {
      projectId: p.projectId, type: 'plan.changed', related: { table: 'key', id }, at: nowSeconds(),
    }))));
    assert.equal((await drainOutbox(idle.db)).written, 2);
    assert.deepEqual((await trail(idle.db, p.projectId)).related.slice(-2), ids);
  } finally {
    await fresh.end();
  }
});
