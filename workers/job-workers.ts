// The `worker` process's work: pg-boss handlers for the audit trail and key expiry.
import type pg from 'pg';
import { writeEventsApart, type AuditJob } from '../domain/audit.ts';
import { expireDueKeys } from '../domain/keys.ts';
import { invalidRunReport, recomputeTotals, storeRun, type RunFinished, type TotalsJob } from '../domain/runs.ts';
import type { Config } from '../lib/config.ts';
import { createPool } from '../lib/db.ts';
import { QUEUES, startConsumer } from '../lib/jobs.ts';
import type { Logger } from '../lib/log.ts';
import { rideOutFromNow, rideOutOutage } from './ride-out.ts';

export interface JobWorkers {
  stop(): Promise<void>;
}

/** Audit jobs are fetched in batches so a burst of changes costs few round trips. */
const AUDIT_BATCH_SIZE = 50;
const AUDIT_CONCURRENCY = 2;
/**
 * NOTIFY wakes a worker the moment a job is sent, but notifications sent while the listener
 * reconnects (a database restart) are lost, and a backlog left by a stopped worker sends none:
 * the fallback poll stays short, and a full batch fetches again at once.
 */
const FETCHING = { pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 1, burstWhenBatchFull: true } as const;

export async function startJobWorkers(config: Config, log: Logger, databaseUrl: string): Promise<JobWorkers> {
  const pool: pg.Pool = createPool(config, log, databaseUrl, 4);
  const boss = await startConsumer(databaseUrl, log);
  const services = { pool, boss, log };
  const stopping = new AbortController();
  /**
   * The batch's work, then its completion, waiting out an outage within one deadline. pg-boss
   * completes the batch itself once the handler returns, but a completion lost with the connection
   * leaves the jobs active until their expiry (half a minute of events missing): settled here it is
   * retried, and pg-boss's own then finds nothing left to do. Fenced by attempt, so only this claim
   * is settled. The retries stop when the worker stops or pg-boss gives up on the batch.
   */
  const settled = async (queue: string, jobs: Array<{ id: string; retryCount: number; signal: AbortSignal }>, work: () => Promise<unknown>) => {
    const rideOut = rideOutFromNow(AbortSignal.any([stopping.signal, ...jobs.map((job) => job.signal)]));
    await rideOutOutage(work, rideOut);
    await rideOutOutage(() => boss.complete(queue, jobs.map(({ id, retryCount }) => ({ id, retryCount }))), rideOut);
  };

  await boss.work<AuditJob>(QUEUES.auditWrite, {
    ...FETCHING,
    batchSize: AUDIT_BATCH_SIZE,
    localConcurrency: AUDIT_CONCURRENCY,
  }, async (jobs) => {
    await settled(QUEUES.auditWrite, jobs, () => writeEventsApart(pool, jobs.map((job) => job.data)));
  });

  await boss.work<RunFinished>(QUEUES.runFinished, { ...FETCHING, batchSize: 20 }, async (jobs) => {
    await settled(QUEUES.runFinished, jobs, async () => {
      for (const job of jobs) {
        const invalid = invalidRunReport(job.data);
        // A malformed report can never be stored; retrying it would only repeat the failure.
        if (invalid) log.error({ jobId: job.id, field: invalid }, 'run report refused');
        else await storeRun(services, job.data);
      }
    });
  });

  await boss.work<TotalsJob>(QUEUES.appTotals, { ...FETCHING, batchSize: 10 }, async (jobs) => {
    await settled(QUEUES.appTotals, jobs, async () => {
      for (const job of jobs) await recomputeTotals(services, job.data);
    });
  });

  await boss.work(QUEUES.keyExpire, async () => {
    const expired = await rideOutOutage(() => expireDueKeys(services), rideOutFromNow(stopping.signal));
    if (expired > 0) log.info({ expired }, 'keys expired');
  });

  log.info('job workers started');
  return {
    async stop() {
      stopping.abort();
      // Graceful: jobs in hand finish (or go back to the queue) before the pool closes.
      await boss.stop({ graceful: true, timeout: 8000 });
      await pool.end();
    },
  };
}
