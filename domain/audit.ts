// The audit trail's write side: a change enqueues its event in its own transaction (the id is
// fixed then), and the `audit.write` worker inserts it, idempotently, numbered and chained.
import type pg from 'pg';
import { newId } from '../lib/ids.ts';
import { run, withTransaction } from '../lib/db.ts';
import { chainHash, GENESIS_HASH } from './audit-chain.ts';
import { eventView } from './events.ts';
import { isDatabaseUnavailable } from './errors.ts';
import type { AuditJob, EventType, RelatedTable } from './jobs.ts';
import type { Actor, Tx } from './services.ts';


export interface EventSpec {
  projectId: string;
  type: EventType;
  related: { table: RelatedTable; id: string };
  details?: Record<string, unknown>;
  at: number;
}

export async function recordEvent(tx: Tx, actor: Actor, spec: EventSpec): Promise<string> {
  const job: AuditJob = {
    id: newId('evnt'),
    project_id: spec.projectId,
    type: spec.type,
    related_table: spec.related.table,
    related_id: spec.related.id,
    origin: actor.origin,
    actor_id: actor.keyId ?? null,
    ip_address: actor.ip,
    details: spec.details ?? [],
    created_at: spec.at,
  };
  await tx.send('audit.write', job);
  return job.id;
}

/** The channel the writer notifies when a project's chain moves (`<project_id>:<last sequence>`). */
export const EVENTS_CHANNEL = 'pms_events';

const typeIdsByPool = new WeakMap<pg.Pool, Promise<Map<string, string>>>();

/** The event types' fixed ids by name, read once per pool. */
function eventTypeIds(pool: pg.Pool): Promise<Map<string, string>> {
  let ids = typeIdsByPool.get(pool);
  if (!ids) {
    ids = run<{ id: string; name: string }>(pool, 'event_types').then((rows) => new Map(rows.map((r) => [r.name, r.id])));
    ids.catch(() => typeIdsByPool.delete(pool));
    typeIdsByPool.set(pool, ids);
  }
  return ids;
}

/**
 * The worker's side: a batch of jobs in one transaction. Under the lock of each project's chain
 * head, the events not yet written (a redelivered job's is) get the project's next sequence
 * numbers, in the order of their changes, and their hashes; then the heads move and the web
 * processes' event streams are told. Returns how many events this call wrote.
 */
export async function writeEvents(pool: pg.Pool, jobs: AuditJob[]): Promise<number> {
  if (jobs.length === 0) return 0;
  const typeIds = await eventTypeIds(pool);
  return withTransaction(pool, async (client) => {
    const projects = [...new Set(jobs.map((job) => job.project_id))].sort();
    const heads = await run<{ project_id: string; last_sequence: string; last_hash: string | null }>(client, 'event_chain_lock', [projects]);
    const written = new Set((await run<{ id: string }>(client, 'events_existing', [jobs.map((job) => job.id)])).map((row) => row.id));
    const chains = new Map(heads.map((head) => {
      const sequence = Number(head.last_sequence);
      // Release hashes the events of before the chain (backfillChains) before any writer runs.
      if (sequence > 0 && head.last_hash === null) throw new Error(`project ${head.project_id}: events not yet hashed; run release`);
      return [head.project_id, { sequence, hash: head.last_hash ?? GENESIS_HASH, moved: false }];
    }));
    const rows: Array<AuditJob & { sequence: number; hash: string }> = [];
    // Stable: jobs of one second keep the order pg-boss handed them over, the order they were sent.
    for (const job of [...jobs].sort((a, b) => a.created_at - b.created_at)) {
      if (written.has(job.id)) continue;
      written.add(job.id);
      const chain = chains.get(job.project_id)!;
      const actorId = job.origin === 'api' ? job.actor_id ?? null : null;
      const createdAt = Math.floor(job.created_at);
      const event = eventView({
        id: job.id, type_id: typeIds.get(job.type) ?? '', type_name: job.type,
        related_table: job.related_table, related_id: job.related_id, origin: job.origin, ip_address: job.ip_address,
        details: job.details, created_at: createdAt, sequence: chain.sequence + 1, actor_id: actorId, hash: null,
      });
      chain.sequence += 1;
      chain.hash = chainHash(chain.hash, event);
      chain.moved = true;
      rows.push({ ...job, actor_id: actorId, created_at: createdAt, sequence: chain.sequence, hash: chain.hash });
    }
    if (rows.length === 0) return 0;
    // An unknown type name fails here (type_id NOT NULL), rolling the batch back.
    await run(client, 'events_insert', [JSON.stringify(rows)]);
    const moved = [...chains].filter(([, chain]) => chain.moved);
    await run(client, 'event_chain_advance', [
      moved.map(([project]) => project), moved.map(([, chain]) => chain.sequence), moved.map(([, chain]) => chain.hash), EVENTS_CHANNEL,
    ]);
    return rows.length;
  });
}

/**
 * The audit worker's write: the batch in one statement, or, when that fails for a reason other
 * than an outage (a job no statement can take), each job alone, so that one bad job does not hold
 * back the events of the rest; the first failure is then thrown for pg-boss to retry the batch
 * (the written events are not written again).
 */
export async function writeEventsApart(pool: pg.Pool, jobs: AuditJob[]): Promise<number> {
  try {
    return await writeEvents(pool, jobs);
  } catch (err) {
    if (isDatabaseUnavailable(err) || jobs.length === 1) throw err;
  }
  let written = 0;
  let failure: unknown;
  for (const job of jobs) {
    try {
      written += await writeEvents(pool, [job]);
    } catch (err) {
      failure ??= err;
    }
  }
  if (failure !== undefined) throw failure;
  return written;
}
