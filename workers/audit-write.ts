// `audit.write`: one job per change, as older releases handed events over; kept so jobs queued at
// an upgrade, or sent by old web processes during a rollover, are still written (idempotently).
import { writeEventsApart } from '../domain/audit.ts';
import { QUICK_JOB } from '../lib/jobs.ts';
import { FETCHING, type JobQueue } from './queue.ts';

/** Batches, so a burst of changes costs few round trips. */
const AUDIT_BATCH_SIZE = 50;
const AUDIT_CONCURRENCY = 2;

export const auditWrite: JobQueue<'audit.write'> = {
  name: 'audit.write',
  // Woken after the change committed (wakeWorkers), not by a NOTIFY in its transaction.
  options: { ...QUICK_JOB, notify: false },
  fetch: { ...FETCHING, batchSize: AUDIT_BATCH_SIZE, localConcurrency: AUDIT_CONCURRENCY },
  async handle(services, jobs) {
    await writeEventsApart(services.pool, jobs.map((job) => job.data));
  },
};
