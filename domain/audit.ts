// The audit trail's write side: a change enqueues its event in its own transaction (the id is
// fixed then), and the `audit.write` worker inserts it, idempotently.
import { newId } from '../lib/ids.ts';
import { run, withTransaction } from '../lib/db.ts';
import { QUEUES } from '../lib/jobs.ts';
import type pg from 'pg';
import type { Actor, Tx } from './services.ts';

export type EventType =
  | 'key.created' | 'key.revoked' | 'key.expired'
  | 'app.created' | 'app.updated' | 'app.published' | 'app.unpublished' | 'app.activated'
  | 'app.logo_changed' | 'app.deleted'
  | 'project.created' | 'project.disabled' | 'consumer.disabled' | 'plan.changed';

export type RelatedTable = 'key' | 'app' | 'file' | 'membership' | 'project' | 'consumer';

export interface AuditJob {
  id: string;
  project_id: string;
  type: EventType;
  related_table: RelatedTable;
  related_id: string;
  origin: Actor['origin'];
  ip_address: string;
  /** Never a secret or a hash. `[]` when there is nothing to record. */
  details: Record<string, unknown> | [];
  /** Unix seconds of the change, not of the job. */
  created_at: number;
}

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
  await tx.send(QUEUES.auditWrite, job);
  return job.id;
}

/** The worker's side. Returns whether this call wrote the event (false: it was already there). */
export async function writeEvent(pool: pg.Pool, job: AuditJob): Promise<boolean> {
  return withTransaction(pool, async (client) => {
    const inserted = await run(client, 'event_insert', [
      job.id, job.project_id, job.type, job.related_table, job.related_id,
      job.origin, job.ip_address, JSON.stringify(job.details), job.created_at,
    ]);
    if (inserted.length === 0) return false;
    await run(client, 'event_count_bump', [job.project_id]);
    return true;
  });
}
