// What a job queue is: one module per queue (this folder) holds its name, its pg-boss options,
// how the worker fetches it and its handler; its payload is the one domain/jobs.ts names for it.
// `release` creates the queues from these (lib/jobs.ts migrateJobs), the worker runs them (start.ts).
import type { Job, WorkOptions } from 'pg-boss';
import type { JobPayloads, QueueName } from '../domain/jobs.ts';
import type { Services } from '../domain/services.ts';
import type { QueueSpec } from '../lib/jobs.ts';

export interface JobQueue<N extends QueueName = QueueName> extends QueueSpec {
  name: N;
  /** How the worker fetches: batch size, concurrency, polling. */
  fetch: WorkOptions;
  /**
   * The batch's work; the worker completes the batch itself once it returns (start.ts). `signal`
   * aborts when the worker stops or the batch's claim is lost: work that waits watches it.
   */
  handle(services: Services, jobs: Array<Job<JobPayloads[N]>>, signal: AbortSignal): Promise<void>;
  /**
   * For a queue whose work waits in rows the changes leave (audit_outbox), each change sending a job
   * after its commit: every `intervalMs` the worker asks `pending` and sends the queue a job when it
   * answers true, so work whose job was never sent is found all the same.
   */
  /** Work done once when the worker starts, before any job: a failure stops the start. */
  prepare?(services: Services): Promise<void>;
  sweep?: { intervalMs: number; pending(services: Services): Promise<boolean> };
}

/**
 * NOTIFY wakes a worker the moment a job is sent, but notifications sent while the listener
 * reconnects (a database restart) are lost, and a backlog left by a stopped worker sends none:
 * the fallback poll stays short, and a full batch fetches again at once.
 */
export const FETCHING = { pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 1, burstWhenBatchFull: true } as const;
