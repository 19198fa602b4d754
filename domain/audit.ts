// The audit trail's write side: a change enqueues its event in its own transaction (the id is
// fixed then), and the `audit.write` worker inserts it, idempotently.
import { newId } from '../lib/ids.ts';
import { run, type Queryable } from '../lib/db.ts';
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
    ip_address: actor.ip,
    details: spec.details ?? [],
    created_at: spec.at,
  };
  await tx.send('audit.write', job);
  return job.id;
}

/**
 * The worker's side: a batch of jobs in one statement and one round trip. Returns how many events
 * this call wrote (a redelivered job's event is already there and is not counted again).
 */
export async function writeEvents(db: Queryable, jobs: AuditJob[]): Promise<number> {
  if (jobs.length === 0) return 0;
  const [result] = await run<{ written: number }>(db, 'events_insert', [JSON.stringify(jobs)]);
  return result!.written;
}

/**
 * The audit worker's write: the batch in one statement, or, when that fails for a reason other
 * than an outage (a job no statement can take), each job alone, so that one bad job does not hold
 * back the events of the rest; the first failure is then thrown for pg-boss to retry the batch
 * (the written events are not written again).
 */
export async function writeEventsApart(db: Queryable, jobs: AuditJob[]): Promise<number> {
  try {
    return await writeEvents(db, jobs);
  } catch (err) {
    if (isDatabaseUnavailable(err) || jobs.length === 1) throw err;
  }
  let written = 0;
  let failure: unknown;
  for (const job of jobs) {
    try {
      written += await writeEvents(db, [job]);
    } catch (err) {
      failure ??= err;
    }
  }
  if (failure !== undefined) throw failure;
  return written;
}
