// What a domain handler is given: the database, the job producer, a logger. Nothing of HTTP.
import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { bossDb, requestJob, wakeWorkers } from '../lib/jobs.ts';
import { withTransaction, type Database, type Queryable } from '../lib/pool.ts';
import type { Config } from '../lib/config.ts';
import type { Logger } from '../lib/log.ts';
import { SQLSTATE } from '../lib/sqlstate.ts';
import { DRAIN_QUEUE, type JobPayloads, type QueueName } from './jobs.ts';
import { isDatabaseUnavailable } from './errors.ts';
import { changeKeyOf, changeKeyRefusal, checkedByChange } from './key-check.ts';

export interface Services {
  /** The process's (or thread's) pool: jobs, wake-ups, what belongs to no request. */
  pool: pg.Pool;
  /** What domain code reads and changes through: the pool, or an API request's key-checked view of it. */
  db: Database;
  boss: PgBoss;
  log: Logger;
  config: Config;
}

/** A change in progress: its transaction's client, and ways to hand work to the job workers. */
export interface Tx {
  client: pg.PoolClient;
  /** Enqueues a job inside the transaction; its workers are woken once the change commits. */
  send<N extends QueueName>(queue: N, data: JobPayloads[N], options?: { singletonKey?: string }): Promise<void>;
  /** Once the change commits, a job on `queue`, whose work the change left in its own rows. */
  requestJob(queue: QueueName): void;
  /** A statement run in the COMMIT's own message, in order; its error rolls the change back. */
  commitAfter(statement: string): void;
}

/** Two changes revoking each other's key deadlock; the one run again finds its own key revoked. */
const DEADLOCK_ATTEMPTS = 3;

/** Runs `attempt` again when PostgreSQL aborted it to break a deadlock. */
async function retryingDeadlocks<T>(attempt: () => Promise<T>): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if ((err as { code?: unknown } | null)?.code === SQLSTATE.deadlockDetected && n < DEADLOCK_ATTEMPTS) continue;
      throw err;
    }
  }
}

/** Runs one change in one transaction; jobs and rows it hands over commit or roll back with it. */
export async function change<T>(services: Services, fn: (tx: Tx) => Promise<T>): Promise<T> {
  let woken = new Set<string>();
  let requested = new Set<string>();
  const result = await retryingDeadlocks(() => {
    woken = new Set();
    requested = new Set();
    return withTransaction(services.db, (client, end) => fn({
      client,
      async send(queue, data, options = {}) {
        // No id: no job was made (a stately queue already holds one), so there is nothing to wake.
        if (await services.boss.send(queue, data as object, { ...options, db: bossDb(client) })) woken.add(queue);
      },
      requestJob(queue) {
        requested.add(queue);
      },
      commitAfter(statement) {
        end.statements.push(statement);
      },
    }));
  });
  for (const queue of woken) wakeWorkers(services.pool, queue);
  for (const queue of requested) requestJob(services.pool, services.boss, queue);
  return result;
}

/**
 * A change of one statement that checks its key and hands its event over itself, committing in
 * one round trip. `checkedKey` is null when no key makes the change.
 */
export async function changeByStatement<T>(services: Services, fn: (db: Queryable, checkedKey: string | null) => Promise<T>): Promise<T> {
  // In an idempotent request's transaction the statement is one of its own (domain/idempotency.ts).
  const alone: Queryable = services.db.nested
    ? { query: async (config) => (await services.db.connect()).query(config) }
    : { query: (config) => statementAlone(services.pool, config) };
  const result = await retryingDeadlocks(() => fn(alone, changeKeyOf(services.db))).catch((err: unknown) => {
    throw changeKeyRefusal(err);
  });
  checkedByChange(services.db);
  requestJob(services.pool, services.boss, DRAIN_QUEUE);
  return result;
}

/**
 * One statement on a pooled client, kept after its own error (a refused key, a deadlock): pg-pool
 * would close it, and the reconnect's delay would tell a refused change from an unknown key.
 */
async function statementAlone(pool: pg.Pool, config: pg.QueryConfig): Promise<pg.QueryResult> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    return await client.query(config);
  } catch (err) {
    // A deadlock or statement timeout leaves the connection intact too, though answered as a 503.
    const code = (err as { code?: unknown }).code;
    if (isDatabaseUnavailable(err) && code !== SQLSTATE.deadlockDetected && code !== SQLSTATE.queryCanceled) broken = err as Error;
    throw err;
  } finally {
    client.release(broken);
  }
}
