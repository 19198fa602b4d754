// The `worker` process: the job handlers of every queue in registry.ts, each batch riding out a
// database outage and completing itself.
import type pg from 'pg';
import type { JobPayloads, QueueName } from '../domain/jobs.ts';
import type { Config } from '../lib/config.ts';
import { createPool, SILENCE_BEYOND_STATEMENT_TIMEOUT_MS } from '../lib/pool.ts';
import { startConsumer } from '../lib/jobs.ts';
import { errorFields, type Logger } from '../lib/log.ts';
import { counted, WorkerMetrics } from './metrics.ts';
import type { JobQueue } from './queue.ts';
import { JOB_QUEUES } from './registry.ts';
import { rideOutFromNow, rideOutOutage } from './ride-out.ts';

export interface JobWorkers {
  /** The metrics listener's, when WORKER_METRICS_PORT is set. */
  metricsPort: number | undefined;
  stop(): Promise<void>;
}

/** How long a graceful stop waits for the jobs in hand. */
const STOP_GRACE_MS = 8000;

export async function startJobWorkers(config: Config, log: Logger, databaseUrl: string): Promise<JobWorkers> {
  const metrics = config.workerMetricsPort === undefined ? undefined : new WorkerMetrics(JOB_QUEUES.map((queue) => queue.name), log);
  // First: a metrics port already taken stops the start before any job is taken.
  const metricsListener = await metrics?.serve(config, log);
  const pool: pg.Pool = createPool(config, log, databaseUrl, 4);
  const boss = await startConsumer(databaseUrl, log, config.dbStatementTimeoutMs + SILENCE_BEYOND_STATEMENT_TIMEOUT_MS);
  metrics?.watch(pool, boss);
  const services = { pool, db: pool, boss, log, config };
  const stopping = new AbortController();

  /**
   * The batch's work, then its completion, riding out an outage: a lost completion would leave the
   * jobs active until expiry. Fenced by attempt, so only this claim is settled.
   */
  const work = <N extends QueueName>(queue: JobQueue<N>) => boss.work<JobPayloads[N]>(queue.name, queue.fetch, counted(metrics, queue.name, async (jobs) => {
    const ended = AbortSignal.any([stopping.signal, ...jobs.map((job) => job.signal)]);
    const rideOut = rideOutFromNow(ended);
    await rideOutOutage(() => queue.handle(services, jobs, ended), rideOut);
    await rideOutOutage(() => boss.complete(queue.name, jobs.map(({ id, retryCount }) => ({ id, retryCount }))), rideOut);
  }));
  for (const queue of JOB_QUEUES) await queue.prepare?.(services);
  for (const queue of JOB_QUEUES) await work(queue);

  // A failed sweep (the database away) is tried again at the next tick.
  const sweeps = JOB_QUEUES.flatMap((queue) => queue.sweep ? [setInterval(() => {
    queue.sweep!.pending(services).then((pending) => pending && !stopping.signal.aborted ? boss.send(queue.name, {}) : null)
      .catch((err: unknown) => log.debug({ err: errorFields(err), queue: queue.name }, 'sweep failed'));
  }, queue.sweep.intervalMs)] : []);

  log.info('job workers started');
  return {
    metricsPort: metricsListener?.port,
    async stop() {
      stopping.abort();
      await metricsListener?.stop();
      for (const sweep of sweeps) clearInterval(sweep);
      for (const queue of JOB_QUEUES) await queue.stop?.(services);
      // Graceful: jobs in hand finish (or go back to the queue) before the pool closes.
      await boss.stop({ graceful: true, timeout: STOP_GRACE_MS });
      await pool.end();
    },
  };
}
