// The job queues the domain sends to, with each payload. A queue's rules are its module in
// workers/; a name missing on either side fails the type check.
/** Where a change came from. */
export type Origin = 'api' | 'workspace' | 'system';

/** Every event type, as the seed migration names them. */
export const EVENT_TYPES = [
  'key.created', 'key.revoked', 'key.expired', 'key.rolled',
  'app.created', 'app.updated', 'app.published', 'app.unpublished', 'app.activated', 'app.logo_changed', 'app.deleted',
  'project.created', 'project.disabled', 'consumer.disabled', 'plan.changed',
  'webhook.created', 'webhook.updated', 'webhook.deleted', 'webhook.disabled', 'webhook.secret_rotated',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];


export type RelatedTable = 'key' | 'app' | 'file' | 'membership' | 'project' | 'consumer' | 'webhook';

export interface AuditJob {
  id: string;
  project_id: string;
  type: EventType;
  related_table: RelatedTable;
  related_id: string;
  origin: Origin;
  /** The key that made an API change; null for the workspace and the service's own changes. */
  actor_id: string | null;
  ip_address: string;
  /** Never a secret or a hash. `[]` when there is nothing to record. */
  details: Record<string, unknown> | [];
  /** Unix seconds of the change, not of the job. */
  created_at: number;
}

/** A run the run engine reports as finished. */
export interface RunFinished {
  run_id: string;
  app_id: string;
  project_id: string;
  status: 'succeeded' | 'error';
  tokens: { input: number; output: number } | null;
}

export interface TotalsJob {
  app_id: string;
  project_id: string;
}

export interface JobPayloads {
  /** Events handed over by older releases, before audit_outbox; still written. */
  'audit.write': AuditJob;
  /** Carries nothing: the events wait in audit_outbox. */
  'audit.drain': object;
  'key.expire': object;
  'run.finished': RunFinished;
  'app.totals': TotalsJob;
  /** Carries nothing: the heads to sign are read when it runs. */
  'audit.checkpoint': object;
  'idempotency.purge': object;
  /** Carries nothing: the deliveries wait in webhook_deliveries. */
  'webhook.deliver': object;
}

export type QueueName = keyof JobPayloads;

/** The queue of the job that drains audit_outbox (workers/audit-drain.ts). */
export const DRAIN_QUEUE = 'audit.drain' satisfies QueueName;
