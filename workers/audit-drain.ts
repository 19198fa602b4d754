// `audit.drain`: moves handed-over events from audit_outbox into the audit trail, in batches.
// Requested after each commit (coalesced), and by the sweep for events whose request was lost.
import { DRAIN_BATCH_SIZE, drainOutbox, outboxPending } from '../domain/audit.ts';
import { DrainPace } from '../domain/drain-pace.ts';
import { DRAIN_QUEUE } from '../domain/jobs.ts';
import { JOB_EXPIRE_SECONDS, QUICK_JOB } from '../lib/jobs.ts';
import { FETCHING, type JobQueue } from './queue.ts';

/** How often the worker looks for events left without a drain; the latency of a lost wake-up. */
const SWEEP_INTERVAL_MS = 1000;
/** After this a drain hands the rest to a new job, so a backlog never looks like a dead worker's. */
const DRAIN_SLICE_MS = (JOB_EXPIRE_SECONDS / 3) * 1000;
/** How long a drain stays on an empty outbox: a steady stream needs no new jobs, an idle worker holds none. */
const DRAIN_LINGER_MS = 100;
/**
 * Once batches of 8 or more come at 400 events a second, they begin 50 ms apart: a stream that fast
 * fills each with 20 or more, and an event waits at most 50 ms more (docs/performance.md).
 */
const pace = new DrainPace(50, 400, 8);

export const auditDrain: JobQueue<'audit.drain'> = {
  name: DRAIN_QUEUE,
  // `short`: one job waits, shared by a burst. Sent after the change's commit, so its NOTIFY holds
  // back no commit. Concurrent drains take turns under the drain's lock.
  options: { ...QUICK_JOB, policy: 'short', notify: true },
  // Two at once: while one drains, the other is ready to fetch a job the moment it is notified.
  fetch: { ...FETCHING, localConcurrency: 2 },
  sweep: { intervalMs: SWEEP_INTERVAL_MS, pending: (services) => outboxPending(services.pool) },
  async handle(services, _jobs, signal) {
    const { more } = await drainOutbox(services.pool, Date.now() + DRAIN_SLICE_MS, DRAIN_BATCH_SIZE, { ms: DRAIN_LINGER_MS, pace, signal });
    if (more) await services.boss.send(DRAIN_QUEUE, {});
  },
};
