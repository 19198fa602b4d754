// The audit trail's write side: a change hands its event over as an audit_outbox row in its own
// transaction; the `audit.drain` job moves rows into `events`, numbered and chained, exactly once.
import type pg from 'pg';
import { newId } from '../lib/ids.ts';
import { queryFile, withTransaction } from '../lib/pool.ts';
import { fillTemplate, queryText } from '../lib/sql-files.ts';
import { chainHash, GENESIS_HASH } from './audit-chain.ts';
import type { DrainPace } from './drain-pace.ts';
import { eventJson, eventView } from './events.ts';
import { isDatabaseUnavailable } from './errors.ts';
import { DRAIN_QUEUE, type AuditJob, type EventType, type RelatedTable } from './jobs.ts';
import type { Actor } from './actor.ts';
import type { Tx } from './services.ts';


export interface EventSpec {
  projectId: string;
  type: EventType;
  related: { table: RelatedTable; id: string };
  details?: Record<string, unknown>;
  at: number;
}

/** The prepared statement that hands an event over, run in its change's COMMIT message. */
export const OUTBOX_INSERT = 'pms_outbox_insert';

/** OUTBOX_INSERT's PREPARE, once per connection (it outlives a rollback); forgotten if it fails. */
const prepared = new WeakMap<pg.PoolClient, Promise<unknown>>();

function prepareHandOff(client: pg.PoolClient): Promise<unknown> {
  let done = prepared.get(client);
  if (!done) {
    done = client.query(queryText('audit_outbox_prepare'));
    done.catch(() => prepared.delete(client));
    prepared.set(client, done);
  }
  return done;
}

export async function recordEvent(tx: Tx, actor: Actor, spec: EventSpec): Promise<string> {
  const id = newId('evnt');
  if (!Number.isSafeInteger(spec.at)) throw new Error(`event time is not whole seconds: ${spec.at}`);
  await prepareHandOff(tx.client);
  const literal = (value: string | null) => (value === null ? 'NULL' : tx.client.escapeLiteral(value));
  tx.commitAfter(fillTemplate('audit_outbox_insert', {
    id: literal(id),
    project: literal(spec.projectId),
    type: literal(spec.type),
    table: literal(spec.related.table),
    related: literal(spec.related.id),
    origin: literal(actor.origin),
    actor: literal(actor.keyId ?? null),
    ip: literal(actor.ip),
    details: literal(JSON.stringify(spec.details ?? [])),
    at: String(spec.at),
  }));
  tx.requestJob(DRAIN_QUEUE);
  return id;
}

/** The channel the writer notifies when a project's chain moves (`<project_id>:<last sequence>`). */
export const EVENTS_CHANNEL = 'pms_events';
/** The channel a replay notifies when it keeps a range for the workers to queue (`<project_id>`). */
export const REPLAYS_CHANNEL = 'pms_webhook_replays';

const typeIdsByPool = new WeakMap<pg.Pool, Promise<Map<string, string>>>();

/** The event types' fixed ids by name, read once per pool. */
function eventTypeIds(pool: pg.Pool): Promise<Map<string, string>> {
  let ids = typeIdsByPool.get(pool);
  if (!ids) {
    ids = queryFile<{ id: string; name: string }>(pool, 'event_types').then((rows) => new Map(rows.map((r) => [r.name, r.id])));
    ids.catch(() => typeIdsByPool.delete(pool));
    typeIdsByPool.set(pool, ids);
  }
  return ids;
}

/**
 * Writes a batch in the caller's transaction, numbered and hashed under each chain head's lock.
 * `redelivered`: the batch may hold events already written (a job delivered again); they are skipped.
 */
async function writeEventsIn(client: pg.PoolClient, typeIds: Map<string, string>, jobs: AuditJob[], redelivered: boolean): Promise<number> {
  if (jobs.length === 0) return 0;
  const projects = [...new Set(jobs.map((job) => job.project_id))].sort();
  const heads = await queryFile<{ project_id: string; last_sequence: string; last_hash: string | null }>(client, 'event_chain_lock', [projects]);
  const written = new Set(redelivered
    ? (await queryFile<{ id: string }>(client, 'events_existing', [jobs.map((job) => job.id)])).map((row) => row.id)
    : []);
  const chains = new Map(heads.map((head) => {
    const sequence = Number(head.last_sequence);
    // Release hashes the events of before the chain (backfillChains) before any writer runs.
    if (sequence > 0 && head.last_hash === null) throw new Error(`project ${head.project_id}: events not yet hashed; run release`);
    return [head.project_id, { sequence, hash: head.last_hash ?? GENESIS_HASH, moved: false }];
  }));
  const rows: Array<AuditJob & { sequence: number; hash: string; body: string }> = [];
  // Stable: events of one second keep the order they were handed over in.
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
    rows.push({ ...job, actor_id: actorId, created_at: createdAt, sequence: chain.sequence, hash: chain.hash, body: eventJson(event, chain.hash) });
  }
  if (rows.length === 0) return 0;
  // An unknown type name fails here (type_id NOT NULL), rolling the batch back.
  await queryFile(client, 'events_insert', [JSON.stringify(rows)]);
  const moved = [...chains].filter(([, chain]) => chain.moved);
  await queryFile(client, 'event_chain_advance', [
    moved.map(([project]) => project), moved.map(([, chain]) => chain.sequence), moved.map(([, chain]) => chain.hash), EVENTS_CHANNEL,
  ]);
  return rows.length;
}

/** A batch of `audit.write` jobs (sent before audit_outbox existed) in one transaction. */
export async function writeEvents(pool: pg.Pool, jobs: AuditJob[]): Promise<number> {
  if (jobs.length === 0) return 0;
  const typeIds = await eventTypeIds(pool);
  return withTransaction(pool, (client) => writeEventsIn(client, typeIds, jobs, true));
}

/** Events one drain transaction takes from audit_outbox. */
export const DRAIN_BATCH_SIZE = 500;
/** How often a lingering drain looks for events. */
const LINGER_POLL_MS = 2;

export interface Lingering {
  /** How long the drain stays once the outbox is empty. */
  ms: number;
  /** The process's drains share it: one batch at a time, spaced under a heavy stream. */
  pace?: DrainPace;
  /** Ends the lingering at once (the worker stopping, the job's claim lost). */
  signal?: AbortSignal;
}

/** Told of each drain batch once committed, per pool: its events, by their changes' times (the worker's metrics). */
const drained = new WeakMap<pg.Pool, (events: readonly AuditJob[]) => void>();

export function onEventsDrained(pool: pg.Pool, listener: (events: readonly AuditJob[]) => void): void {
  drained.set(pool, listener);
}

/**
 * Moves outbox rows to `events`, a batch per transaction (a drain that dies or runs twice writes
 * none twice), until it is empty after lingering or `until` passes.
 */
export async function drainOutbox(
  pool: pg.Pool, until = Infinity, batchSize = DRAIN_BATCH_SIZE, lingering: Lingering = { ms: 0 },
): Promise<{ written: number; more: boolean }> {
  const typeIds = await eventTypeIds(pool);
  let written = 0;
  for (;;) {
    // Told to stop: what is left goes to the next job, not to batches no longer paced.
    if (lingering.signal?.aborted) return { written, more: true };
    const ended = await lingering.pace?.begin(lingering.signal);
    let taken = 0;
    const batch = await withTransaction(pool, async (client) => {
      await queryFile(client, 'audit_outbox_lock');
      const events = await queryFile<AuditJob>(client, 'audit_outbox_take', [batchSize]);
      taken = events.length;
      return { events, written: await writeEventsIn(client, typeIds, events, false) };
    }).finally(() => ended?.(taken, taken === batchSize));
    written += batch.written;
    if (batch.written > 0) drained.get(pool)?.(batch.events);
    if (batch.events.length > 0) {
      if (Date.now() >= until) return { written, more: true };
    } else if (!(await eventsArrive(pool, Math.min(Date.now() + lingering.ms, until), lingering.signal))) {
      return { written, more: false };
    }
  }
}

/** Whether an event arrives before `deadline`: a drain that stays saves a whole new job's round trips. */
async function eventsArrive(pool: pg.Pool, deadline: number, signal: AbortSignal | undefined): Promise<boolean> {
  while (Date.now() < deadline && !signal?.aborted) {
    await new Promise((resolve) => setTimeout(resolve, LINGER_POLL_MS));
    if (await outboxPending(pool)) return true;
  }
  return false;
}

/** Whether audit_outbox holds an event (the sweep that finds events whose wake-up was lost). */
export async function outboxPending(pool: pg.Pool): Promise<boolean> {
  const [row] = await queryFile<{ pending: boolean }>(pool, 'audit_outbox_pending');
  return row!.pending;
}

/** Writes the batch, or on a non-outage failure each job alone so one bad job does not hold back the rest. */
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
