// pg-boss: queue names, their options, and the instances each kind of process needs.
import { createHash } from 'node:crypto';
import { PgBoss, type Queue } from 'pg-boss';
import type pg from 'pg';
import { errorFields, type Logger } from './log.ts';
import { BossPool, notifyChannelSql } from './pg-boss-internals.ts';

/** Jobs take milliseconds: one still active this long belongs to a dead worker and is handed on. */
export const JOB_EXPIRE_SECONDS = 30;
/** How often the worker process's supervisor looks for such jobs. */
export const SUPERVISE_INTERVAL_SECONDS = 10;

/** Capped backoff: retries span over an hour of outage, and the delay never outgrows the outage. */
export const RETRY_DELAY_MAX_SECONDS = 5;
const RETRY_LIMIT = 1000;
/** Longest wait after the database returns: a job whose claim was lost waits out all three. */
export const WORST_RECOVERY_SECONDS = JOB_EXPIRE_SECONDS + SUPERVISE_INTERVAL_SECONDS + RETRY_DELAY_MAX_SECONDS;

/** The options of a queue whose jobs take milliseconds. */
export const QUICK_JOB = {
  expireInSeconds: JOB_EXPIRE_SECONDS,
  retryLimit: RETRY_LIMIT, retryDelay: 1, retryBackoff: true, retryDelayMax: RETRY_DELAY_MAX_SECONDS,
};

/** pg-boss's wake-up without a WAL flush wait, so the NOTIFY lock is brief; a lost one costs a poll. */
const WAKE_SQL = `SELECT pg_notify(${notifyChannelSql('pgboss')}, $1), set_config('synchronous_commit', 'off', true)`;
type PendingState = 'running' | 'again';
const pending = new WeakMap<pg.Pool, Map<string, PendingState>>();

/**
 * Runs `send` after a commit, coalesced per pool and key so every commit is still followed by one.
 * Failures are dropped: a lost hint costs latency (polling finds the work), never work.
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
 * Wakes `queue`'s workers after a commit. Not a NOTIFY inside the change: PostgreSQL holds one lock
 * through every notifying commit's WAL flush, serialising all such commits.
 */
export function wakeWorkers(pool: pg.Pool, queue: string): void {
  afterCommit(pool, `wake ${queue}`, 0, () => pool.query({ name: 'pgboss_wake', text: WAKE_SQL, values: [queue] }));
}

/** Least time between two job requests of one pool, so one job insert covers a burst of commits. */
const REQUEST_GAP_MS = 25;

/** Sends `queue` a job after a commit that left it work in rows; policy `short` makes most a no-op. */
export function requestJob(pool: pg.Pool, boss: PgBoss, queue: string): void {
  afterCommit(pool, `job ${queue}`, REQUEST_GAP_MS, () => boss.send(queue, {}));
}

/**
 * pg-boss's statements run as named prepared statements, not re-planned on every change. The cap
 * guards each connection's statement cache against an unforeseen varying text.
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
  // stop() does not wait for its connections to close: one cut by a server stopping after is no error.
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

/**
 * For the `worker` process: supervision, cron and LISTEN/NOTIFY wake-ups. `silenceMs`: how long a
 * statement may hear nothing from the server before its connection is closed (lib/pool.ts).
 */
export async function startConsumer(connectionString: string, log: Logger, silenceMs: number): Promise<PgBoss> {
  const boss = watch(new PgBoss({
    db: new BossPool({ connectionString, max: 6 }, prepared, silenceMs),
    migrate: false, supervise: true, schedule: true, useListenNotify: true,
    // Rebuilding a bloated index is DDL, which the worker's role (pms_app) may not do.
    reindex: false,
    superviseIntervalSeconds: SUPERVISE_INTERVAL_SECONDS, monitorIntervalSeconds: SUPERVISE_INTERVAL_SECONDS,
  }), log);
  boss.on('wip', (wip: unknown) => log.debug({ wip }, 'pg-boss workers holding jobs'));
  await boss.start();
  return boss;
}

/** What `release` needs of a queue. */
export interface QueueSpec {
  name: string;
  /** pg-boss's queue options, applied by every release. */
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
