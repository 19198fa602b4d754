// The worker process's metrics: jobs handled and failed by queue and how long a batch took, the
// audit events the drain wrote and how long after their change, the checkpoints signed, and each
// queue's jobs by state as pg-boss's monitor last counted them (read when scraped).
import type pg from 'pg';
import type { PgBoss, QueueResult } from 'pg-boss';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { onEventsDrained } from '../domain/audit.ts';
import type { Config } from '../lib/config.ts';
import { errorFields, type Logger } from '../lib/log.ts';
import { newRegistry, PREFIX, serveMetrics, type MetricsListener } from '../lib/metrics.ts';

/** A job's batch takes milliseconds; a drain lingers 100 ms and runs up to a third of its expiry. */
const BATCH_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** A change's time is whole seconds, so an event written at once shows up to 1 s. */
const LAG_BUCKETS = [0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600];
/** pg-boss's monitor counts every 10 s; a scrape each second reads its table no more than this often. */
const QUEUE_STATS_CACHE_MS = 5000;
const STATES = { ready: 'readyCount', deferred: 'deferredCount', active: 'activeCount', failed: 'failedCount' } as const;

const byPool = new WeakMap<pg.Pool, WorkerMetrics>();

/** Checkpoints a worker's batch signed (workers/audit-checkpoint.ts), counted where that worker has metrics. */
export function countCheckpoints(pool: pg.Pool, signed: number): void {
  byPool.get(pool)?.checkpoints.inc(signed);
}

/** A queue's handler, counted and timed when the worker has metrics. */
export function counted<J extends readonly unknown[]>(
  metrics: WorkerMetrics | undefined, queue: string, handle: (jobs: J) => Promise<void>,
): (jobs: J) => Promise<void> {
  return metrics ? metrics.handler(queue, handle) : handle;
}

export class WorkerMetrics {
  readonly registry: Registry = newRegistry();
  readonly checkpoints: Counter;
  private readonly completed: Counter<'queue'>;
  private readonly failed: Counter<'queue'>;
  private readonly batchSeconds: Histogram<'queue'>;
  private readonly eventsWritten: Counter;
  private readonly eventLag: Histogram;
  private boss: PgBoss | undefined;
  private stats: { at: number; queues: Promise<QueueResult[]> } | undefined;

  constructor(queues: readonly string[], log: Logger) {
    const registers = [this.registry];
    const byQueue = { labelNames: ['queue'] as const, registers };
    this.completed = new Counter({ name: `${PREFIX}jobs_completed_total`, help: 'Jobs handled, by queue.', ...byQueue });
    this.failed = new Counter({ name: `${PREFIX}jobs_failed_total`, help: 'Jobs whose handling failed (pg-boss retries them), by queue.', ...byQueue });
    this.batchSeconds = new Histogram({
      name: `${PREFIX}job_batch_duration_seconds`, help: 'How long a batch of jobs took to handle, by queue.', buckets: BATCH_BUCKETS, ...byQueue,
    });
    for (const queue of queues) {
      this.completed.labels(queue).inc(0);
      this.failed.labels(queue).inc(0);
    }
    this.eventsWritten = new Counter({ name: `${PREFIX}audit_events_written_total`, help: 'Audit events the drain wrote to the trail.', registers });
    this.eventLag = new Histogram({
      name: `${PREFIX}audit_event_lag_seconds`, help: 'From a change (its event\'s created_at, whole seconds) to its event written.',
      buckets: LAG_BUCKETS, registers,
    });
    this.checkpoints = new Counter({ name: `${PREFIX}audit_checkpoints_total`, help: 'Audit checkpoints signed.', registers });
    const metrics = this;
    new Gauge({
      name: `${PREFIX}job_queue_jobs`, help: 'Jobs in each queue by state, as pg-boss\'s monitor last counted them.',
      labelNames: ['queue', 'state'], registers,
      async collect() {
        const counted = await metrics.queueStats().catch((err: unknown) => {
          log.debug({ err: errorFields(err) }, 'queue stats could not be read');
          return [];
        });
        for (const queue of counted) {
          if (!queues.includes(queue.name)) continue;
          for (const [state, field] of Object.entries(STATES)) this.set({ queue: queue.name, state }, queue[field]);
        }
      },
    });
  }

  /** The worker's pool and pg-boss: what its handlers count by, and what the queue gauge reads. */
  watch(pool: pg.Pool, boss: PgBoss): void {
    this.boss = boss;
    byPool.set(pool, this);
    onEventsDrained(pool, (events) => {
      this.eventsWritten.inc(events.length);
      const now = Date.now() / 1000;
      for (const event of events) this.eventLag.observe(Math.max(0, now - event.created_at));
    });
  }

  /** `handle`, counted and timed for `queue`. */
  handler<J extends readonly unknown[]>(queue: string, handle: (jobs: J) => Promise<void>): (jobs: J) => Promise<void> {
    return async (jobs) => {
      const end = this.batchSeconds.startTimer({ queue });
      try {
        await handle(jobs);
        this.completed.labels(queue).inc(jobs.length);
      } catch (err) {
        this.failed.labels(queue).inc(jobs.length);
        throw err;
      } finally {
        end();
      }
    };
  }

  serve(config: Config, log: Logger): Promise<MetricsListener> {
    return serveMetrics(this.registry, config.host, config.workerMetricsPort ?? 0, 'WORKER_METRICS_PORT', log);
  }

  private queueStats(): Promise<QueueResult[]> {
    if (!this.boss) return Promise.resolve([]);
    if (!this.stats || Date.now() - this.stats.at > QUEUE_STATS_CACHE_MS) {
      this.stats = { at: Date.now(), queues: this.boss.getQueues() };
    }
    return this.stats.queues;
  }
}
