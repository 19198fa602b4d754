// What a domain handler is given: the database, the job producer, a logger. Nothing of HTTP.
import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { bossDb, wakeWorkers } from '../lib/jobs.ts';
import { withTransaction, type Database } from '../lib/db.ts';
import type { Logger } from '../lib/log.ts';
import type { JobPayloads, Origin, QueueName } from './jobs.ts';

export interface Services {
  /** The process's (or thread's) pool: jobs, wake-ups, what belongs to no request. */
  pool: pg.Pool;
  /** What domain code reads and changes through: the pool, or an API request's key-checked view of it. */
  db: Database;
  boss: PgBoss;
  log: Logger;
}

/** A change in progress: its transaction's client, and a way to enqueue jobs inside it. */
export interface Tx {
  client: pg.PoolClient;
  send<N extends QueueName>(queue: N, data: JobPayloads[N], options?: { singletonKey?: string }): Promise<void>;
}

/** Runs one change in one transaction; jobs it sends commit or roll back with it. */
export async function change<T>(services: Services, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const queues = new Set<string>();
  const result = await withTransaction(services.db, (client) => fn({
    client,
    async send(queue, data, options = {}) {
      // No id: no job was made (a stately queue already holds one), so there is nothing to wake.
      if (await services.boss.send(queue, data as object, { ...options, db: bossDb(client) })) queues.add(queue);
    },
  }));
  for (const queue of queues) wakeWorkers(services.pool, queue);
  return result;
}

/** Who makes a change and from where: recorded on its event. */
export interface Actor {
  origin: Origin;
  ip: string;
  /** The key that made an API change. */
  keyId?: string;
}
