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
  /**
   * A statement run at the end, in the COMMIT's own message (lib/pool.ts TransactionEnd), after
   * those given before it; its error rolls the change back.
   */
  commitAfter(statement: string): void;
}

/**
 * A change PostgreSQL aborted to break a deadlock runs again, up to this many times in all: two
 * changes that each revoke the other's key wait on each other (sql/migrations/0014), and the one
 * run again finds its own key revoked.
 */
const DEADLOCK_ATTEMPTS = 3;

/** Runs `attempt` again when PostgreSQL aborted it to break a deadlock, up to DEADLOCK_ATTEMPTS in all. */
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
 * A change made by one statement that checks the key making it and hands its event over itself
 * (change_key_check and hand_over_event, sql/migrations/0017; sql/templates/key_create.sql), sent
 * on its own: it commits without a BEGIN or a COMMIT message, in one round trip. `fn` runs it on
 * `db` with `checkedKey` (null when no key makes the change); the key's refusal is answered as
 * its own, and the drain is requested once the change has committed.
 */
export async function changeByStatement<T>(services: Services, fn: (db: Queryable, checkedKey: string | null) => Promise<T>): Promise<T> {
  const alone: Queryable = { query: (config) => statementAlone(services.pool, config) };
  const result = await retryingDeadlocks(() => fn(alone, changeKeyOf(services.db))).catch((err: unknown) => {
    throw changeKeyRefusal(err);
  });
  checkedByChange(services.db);
  requestJob(services.pool, services.boss, DRAIN_QUEUE);
  return result;
}

/**
 * One statement on a client of the pool, given back to it after the statement's own error (a
 * refused key, a plan's answer, a deadlock): such an error leaves the connection as it was, its
 * implicit transaction rolled back. pg-pool's own query closes the connection on any error, and a
 * refused change then cost the next statement a new connection (4 ms more than one let through,
 * which the timing fault test told apart from an unknown key's refusal).
 */
async function statementAlone(pool: pg.Pool, config: pg.QueryConfig): Promise<pg.QueryResult> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    return await client.query(config);
  } catch (err) {
    // A deadlock or a statement timeout is the statement's own end too, though the service
    // answers them as the database's unavailability.
    const code = (err as { code?: unknown }).code;
    if (isDatabaseUnavailable(err) && code !== SQLSTATE.deadlockDetected && code !== SQLSTATE.queryCanceled) broken = err as Error;
    throw err;
  } finally {
    client.release(broken);
  }
}
