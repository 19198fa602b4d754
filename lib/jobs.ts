// pg-boss: queue names, their options, and the instances each kind of process needs.
import { createHash } from 'node:crypto';
import { PgBoss, type Queue } from 'pg-boss';
import type pg from 'pg';
import { errorFields, type Logger } from './log.ts';
import { BossPool, notifyChannelSql } from './pg-boss-internals.ts';

/**
 * Every job here takes milliseconds. A job still active after JOB_EXPIRE_SECONDS belongs to a
 * worker that died (kill -9, a lost machine); the supervisor then hands it to another worker,
 * instead of after pg-boss's default 15 minutes.
 */
export const JOB_EXPIRE_SECONDS = 30;
/** How often the worker process's supervisor looks for such jobs. */
export const SUPERVISE_INTERVAL_SECONDS = 10;

/**
 * A job that fails (the database went away mid-job) is retried with backoff capped at
 * RETRY_DELAY_MAX_SECONDS, for RETRY_LIMIT tries: over an hour of outage before any is given up.
 * Uncapped, the backoff of a job that failed a few times in one outage outgrew the outage itself.
 */
export const RETRY_DELAY_MAX_SECONDS = 5;
const RETRY_LIMIT = 1000;
/**
 * The longest a job can wait after the database comes back: one whose claim or settle was lost with
 * the connection (the handler's own retries cannot reach it) waits out its expiry, the supervisor's
 * next pass and a retry delay.
 */
export const WORST_RECOVERY_SECONDS = JOB_EXPIRE_SECONDS + SUPERVISE_INTERVAL_SECONDS + RETRY_DELAY_MAX_SECONDS;

/** The options of a queue whose jobs take milliseconds (workers/*). */
export const QUICK_JOB = {
  expireInSeconds: JOB_EXPIRE_SECONDS,
  retryLimit: RETRY_LIMIT, retryDelay: 1, retryBackoff: true, retryDelayMax: RETRY_DELAY_MAX_SECONDS,
};

/**
 * pg-boss's wake-up on its own channel, in a transaction of its own that waits for no WAL flush
 * (a lost wake-up costs one polling interval, never a job), so holding the NOTIFY lock is brief.
 */
const WAKE_SQL = `SELECT pg_notify(${notifyChannelSql('pgboss')}, $1), set_config('synchronous_commit', 'off', true)`;
type PendingState = 'running' | 'again';
const pending = new WeakMap<pg.Pool, Map<string, PendingState>>();

/**
 * Runs `send` for a commit, coalesced per pool and key: one in flight, and one more after it (and
 * `gapMs` after that) for every commit that landed meanwhile, so a burst of changes costs a few
 * round trips and every commit is still followed by one sent after it. A failure is dropped: what
 * is sent here is a hint whose loss costs latency (the workers' polling or sweep finds the work),
 * never work.
 */
function afterCommit(pool: pg.Pool, key: string, gapMs: number, send: () => Promise<unknown>): void {
  let states = pending.get(pool);
  if (!states) pending.set(pool, states = new Map());
  if (states.has(key)) {
    states.set(key, 'again');
    return;
  }
  states.set(key, 'running');
  const once = (): void => {
    send().catch(() => undefined).finally(() => {
      if (states.get(key) === 'again') {
        states.set(key, 'running');
        if (gapMs > 0) setTimeout(once, gapMs);
        else once();
      } else {
        states.delete(key);
      }
    });
  };
  once();
}

/**
 * Wakes the workers of `queue` after a commit that sent it jobs (domain/services.ts change()).
 * Those queues carry no NOTIFY of their own: PostgreSQL holds one lock across every committing
 * transaction that notifies, through its WAL flush, so a NOTIFY inside the change made every
 * change in the database commit one at a time.
 */
export function wakeWorkers(pool: pg.Pool, queue: string): void {
  afterCommit(pool, `wake ${queue}`, 0, () => pool.query({ name: 'pgboss_wake', text: WAKE_SQL, values: [queue] }));
}

/**
 * The least time between two job requests of one pool: under a stream of changes each request
 * then covers the commits of that time (pg-boss's job insert costs more than a NOTIFY), at the
 * price of as much latency for events whose changes commit back to back.
 */
const REQUEST_GAP_MS = 5;

/**
 * Sends `queue` a job after a commit that left it work in the change's own rows (audit_outbox),
 * outside the change's transaction. The queue keeps at most one job waiting (policy `short`), so
 * under load most of these find one there and insert nothing; one that inserts wakes the workers.
 */
export function requestJob(pool: pg.Pool, boss: PgBoss, queue: string): void {
  afterCommit(pool, `job ${queue}`, REQUEST_GAP_MS, () => boss.send(queue, {}));
}

/**
 * pg-boss sends its statements as text each time: PostgreSQL parsed and planned its job insert on
 * every change (0.26 ms of planning, more than the insert itself) and its fetch and completion on
 * every batch. Its parameterised statements run here as named prepared statements instead, parsed
 * once per connection and planned from the plan cache. Its texts are a small fixed set (queue
 * names and options are inlined); the cap keeps an unforeseen varying text from filling every
 * connection's statement cache.
 */
const PREPARED_TEXTS_MAX = 64;
const preparedNames = new Map<string, string>();

export function prepared(text: string, values?: unknown[]): pg.QueryConfig | string {
  if (!values || values.length === 0) return text;
  let name = preparedNames.get(text);
  if (name === undefined && preparedNames.size < PREPARED_TEXTS_MAX) {
    name = `pgboss_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    preparedNames.set(text, name);
  }
  return { name, text, values };
}

/** pg-boss's view of a pool or a transaction's client. */
export function bossDb(client: Pick<pg.Pool | pg.ClientBase, 'query'>) {
  return {
    executeSql: (text: string, values?: unknown[]) => {
      const query = prepared(text, values);
      return typeof query === 'string' ? client.query(query) : client.query(query);
    },
  };
}

function watch(boss: PgBoss, log: Logger): PgBoss {
  // Once stopped, its pool's connections are closing (stop() does not wait for them): one cut by
  // a server stopping right after (the embedded PostgreSQL, last in a shutdown) is no error.
  let stopped = false;
  boss.once('stopped', () => { stopped = true; });
  boss.on('error', (err: Error) => {
    if (!stopped) log.error({ err: errorFields(err) }, 'pg-boss error');
  });
  boss.on('warning', (warning: unknown) => log.warn({ warning }, 'pg-boss warning'));
  return boss;
}

/** For producers (web threads, the workspace CLI): sends jobs over the given pool, runs nothing. */
export async function startProducer(pool: pg.Pool, log: Logger): Promise<PgBoss> {
  const boss = watch(new PgBoss({ db: bossDb(pool), migrate: false, supervise: false, schedule: false }), log);
  await boss.start();
  return boss;
}

/** For the `worker` process: supervision, cron and LISTEN/NOTIFY wake-ups. */
export async function startConsumer(connectionString: string, log: Logger): Promise<PgBoss> {
  const boss = watch(new PgBoss({
    db: new BossPool({ connectionString, max: 6 }, prepared),
    migrate: false, supervise: true, schedule: true, useListenNotify: true,
    // Rebuilding a bloated index is DDL, which the worker's role (pms_app) may not do.
    reindex: false,
    superviseIntervalSeconds: SUPERVISE_INTERVAL_SECONDS, monitorIntervalSeconds: SUPERVISE_INTERVAL_SECONDS,
  }), log);
  // Every 2 s while a worker holds jobs: its state, last fetch and last error (LOG_LEVEL=debug).
  boss.on('wip', (wip: unknown) => log.debug({ wip }, 'pg-boss workers holding jobs'));
  await boss.start();
  return boss;
}

/** What `release` needs of a queue (workers/queue.ts JobQueue). */
export interface QueueSpec {
  name: string;
  /** pg-boss's queue options (policy, expiry, retries, notify), applied by every release. */
  options: Omit<Queue, 'name'>;
  /** A cron expression when pg-boss's clock feeds the queue. */
  schedule?: string;
}

/** Release step: pg-boss's own schema, the queues and their schedules. Safe to run concurrently and again. */
export async function migrateJobs(connectionString: string, log: Logger, queues: readonly QueueSpec[]): Promise<void> {
  const boss = watch(new PgBoss({ connectionString, max: 2, migrate: true, supervise: false, schedule: false }), log);
  await boss.start();
  try {
    for (const queue of queues) {
      await boss.createQueue(queue.name, queue.options);
      // createQueue leaves an existing queue as it was; its options follow the queue's module.
      const { policy: _policy, ...changeable } = queue.options;
      await boss.updateQueue(queue.name, changeable);
      if (queue.schedule) await boss.schedule(queue.name, queue.schedule);
    }
  } finally {
    await boss.stop({ graceful: false });
  }
}
