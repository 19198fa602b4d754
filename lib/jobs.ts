// pg-boss: queue names, their options, and the instances each kind of process needs.
import { PgBoss } from 'pg-boss';
import type pg from 'pg';
import { errorFields, type Logger } from './log.ts';

export const QUEUES = {
  /** One job per change; the worker writes the event. Notify: an event is readable within ms. */
  auditWrite: 'audit.write',
  /** Scheduled every minute: marks keys past expires_at `expired` and records `key.expired`. */
  keyExpire: 'key.expire',
  /** Reported by the run engine: { run_id, app_id, project_id, status, tokens }. */
  runFinished: 'run.finished',
  /** Recomputes one (app, project)'s totals; at most one queued and one active per pair. */
  appTotals: 'app.totals',
} as const;

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

const QUICK_JOB = {
  expireInSeconds: JOB_EXPIRE_SECONDS,
  retryLimit: RETRY_LIMIT, retryDelay: 1, retryBackoff: true, retryDelayMax: RETRY_DELAY_MAX_SECONDS,
};

const QUEUE_OPTIONS: Record<string, { policy?: string } & Record<string, unknown>> = {
  [QUEUES.auditWrite]: { ...QUICK_JOB, notify: true },
  [QUEUES.keyExpire]: { expireInSeconds: 120, retryLimit: 2, retryDelay: 5 },
  [QUEUES.runFinished]: { ...QUICK_JOB, notify: true },
  [QUEUES.appTotals]: { ...QUICK_JOB, policy: 'stately', notify: true },
};

export const KEY_EXPIRE_CRON = '* * * * *';

/** pg-boss's view of a pool or a transaction's client. */
export function bossDb(client: Pick<pg.Pool | pg.ClientBase, 'query'>) {
  return { executeSql: (text: string, values?: unknown[]) => client.query(text, values) };
}

function watch(boss: PgBoss, log: Logger): PgBoss {
  boss.on('error', (err: Error) => log.error({ err: errorFields(err) }, 'pg-boss error'));
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
    connectionString, max: 6, migrate: false, supervise: true, schedule: true, useListenNotify: true,
    superviseIntervalSeconds: SUPERVISE_INTERVAL_SECONDS, monitorIntervalSeconds: SUPERVISE_INTERVAL_SECONDS,
  }), log);
  // Every 2 s while a worker holds jobs: its state, last fetch and last error (LOG_LEVEL=debug).
  boss.on('wip', (wip: unknown) => log.debug({ wip }, 'pg-boss workers holding jobs'));
  await boss.start();
  return boss;
}

/** Release step: pg-boss's own schema, our queues and schedules. Safe to run concurrently and again. */
export async function migrateJobs(connectionString: string, log: Logger): Promise<void> {
  const boss = watch(new PgBoss({ connectionString, max: 2, migrate: true, supervise: false, schedule: false }), log);
  await boss.start();
  try {
    for (const [name, options] of Object.entries(QUEUE_OPTIONS)) {
      await boss.createQueue(name, options as never);
      // createQueue leaves an existing queue as it was; its options follow this file's.
      const { policy: _policy, ...changeable } = options;
      await boss.updateQueue(name, changeable as never);
    }
    await boss.schedule(QUEUES.keyExpire, KEY_EXPIRE_CRON);
  } finally {
    await boss.stop({ graceful: false });
  }
}
