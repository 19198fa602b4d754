// A job queue: one module per queue holds its name, pg-boss options, fetching and handler.
// `release` creates the queues from these, the worker runs them.
import type { Job, WorkOptions } from 'pg-boss';
import type { JobPayloads, QueueName } from '../domain/jobs.ts';
import type { Services } from '../domain/services.ts';
import type { QueueSpec } from '../lib/jobs.ts';

export interface JobQueue<N extends QueueName = QueueName> extends QueueSpec {
  name: N;
  /** How the worker fetches: batch size, concurrency, polling. */
  fetch: WorkOptions;
  /** The batch's work (the worker completes it). `signal` aborts on stop or a lost claim. */
  handle(services: Services, jobs: Array<Job<JobPayloads[N]>>, signal: AbortSignal): Promise<void>;
  /** Work done once when the worker starts, before any job: a failure stops the start. */
  prepare?(services: Services): Promise<void>;
  /** Work of its own the queue ends when the worker stops, before its jobs are let go. */
  stop?(services: Services): Promise<void>;
  /** For work left in rows (audit_outbox): a job is sent whenever `pending`, so a lost request is found. */
  sweep?: { intervalMs: number; pending(services: Services): Promise<boolean> };
}

/** Notifications are lost while the listener reconnects, and a backlog sends none: so a short poll. */
export const FETCHING = { pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 1, burstWhenBatchFull: true } as const;
