// What a domain handler is given: the database, the job producer, a logger. Nothing of HTTP.
import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { bossDb, requestJob, wakeWorkers } from '../lib/jobs.ts';
import { withTransaction, type Database } from '../lib/pool.ts';
import type { Logger } from '../lib/log.ts';
import { SQLSTATE } from '../lib/sqlstate.ts';
import type { JobPayloads, Origin, QueueName } from './jobs.ts';

export interface Services {
  /** The process's (or thread's) pool: jobs, wake-ups, what belongs to no request. */
  pool: pg.Pool;
  /** What domain code reads and changes through: the pool, or an API request's key-checked view of it. */
  db: Database;
  boss: PgBoss;
  log: Logger;
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

/** Runs one change in one transaction; jobs and rows it hands over commit or roll back with it. */
export async function change<T>(services: Services, fn: (tx: Tx) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const woken = new Set<string>();
    const requested = new Set<string>();
    let result: T;
    try {
      result = await withTransaction(services.db, (client, end) => fn({
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
    } catch (err) {
      if ((err as { code?: unknown } | null)?.code === SQLSTATE.deadlockDetected && attempt < DEADLOCK_ATTEMPTS) continue;
      throw err;
    }
    for (const queue of woken) wakeWorkers(services.pool, queue);
    for (const queue of requested) requestJob(services.pool, services.boss, queue);
    return result;
  }
}

/** Who makes a change and from where: recorded on its event. */
export interface Actor {
  origin: Origin;
  ip: string;
  /** The key that made an API change. */
  keyId?: string;
}

/** The service's own changes (expiry, the first start's project), recorded as made on this host. */
export const SYSTEM_ACTOR: Actor = Object.freeze({ origin: 'system', ip: '127.0.0.1' });
