// `audit.drain`: moves the events changes hand over in audit_outbox (domain/audit.ts) into the
// audit trail, in batches. Sent by each change once it has committed (domain/services.ts change()),
// coalesced, and by the worker's sweep when events wait with no job to drain them (their change's
// process died between its commit and that send, or the database went away meanwhile).
import { DRAIN_BATCH_SIZE, drainOutbox, outboxPending } from '../domain/audit.ts';
import { DRAIN_QUEUE } from '../domain/jobs.ts';
import { JOB_EXPIRE_SECONDS, QUICK_JOB } from '../lib/jobs.ts';
import { FETCHING, type JobQueue } from './queue.ts';

/** How often the worker looks for events left without a drain; the latency of a lost wake-up. */
const SWEEP_INTERVAL_MS = 1000;
/**
 * A drain stops taking batches after this long and hands the rest to a job of its own, well inside
 * the job's expiry, so a large backlog (after an outage) never looks like a dead worker's job.
 */
const DRAIN_SLICE_MS = (JOB_EXPIRE_SECONDS / 3) * 1000;
/**
 * How long a drain stays once it has found the outbox empty. Under a steady stream of changes
 * (one every few milliseconds) it never leaves, and each event is written moments after its change
 * commits, without a job of its own; after the last change it ends, so an idle worker holds no job.
 */
const DRAIN_LINGER_MS = 100;

export const auditDrain: JobQueue<'audit.drain'> = {
  name: DRAIN_QUEUE,
  // `short`: at most one job waits, so the changes of a burst share it. It is sent after the
  // change's commit, in a transaction of its own, so its NOTIFY holds back no change's commit. Two
  // drains that run at once (two workers) take turns under the drain's lock (audit_outbox_lock.sql).
  options: { ...QUICK_JOB, policy: 'short', notify: true },
  // Two at once: one drains while the other waits for the next job, so a job sent meanwhile is
  // fetched the moment it is notified, not after the first one's turn (they take turns on the lock).
  fetch: { ...FETCHING, localConcurrency: 2 },
  sweep: { intervalMs: SWEEP_INTERVAL_MS, pending: (services) => outboxPending(services.pool) },
  async handle(services, _jobs, signal) {
    const { more } = await drainOutbox(services.pool, Date.now() + DRAIN_SLICE_MS, DRAIN_BATCH_SIZE, { ms: DRAIN_LINGER_MS, signal });
    if (more) await services.boss.send(DRAIN_QUEUE, {});
  },
};
