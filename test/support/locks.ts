// A row lock a test holds in a transaction of its own, and the sessions waiting on it: for making
// changes queue in the database at a chosen point, then letting them go at once.
import assert from 'node:assert/strict';
import type pg from 'pg';
import { waitFor } from './wait.ts';

export interface HeldLock {
  /** The holding session's backend, which the waiters' pg_blocking_pids name. */
  pid: number;
  release(): Promise<void>;
}

/** Runs `sql` (which must lock exactly one row) in a transaction held open until released. */
export async function holdLock(db: pg.Pool, sql: string, values: unknown[]): Promise<HeldLock> {
  const client = await db.connect();
  const { rows: [{ pid }] } = await client.query('SELECT pg_backend_pid() AS pid');
  await client.query('BEGIN');
  // A lock that cannot be taken (Citus takes none by id alone) fails the test, not its end.
  const { rowCount } = await client.query(sql, values).catch(async (err: unknown) => {
    await client.query('ROLLBACK').finally(() => client.release());
    throw err;
  });
  assert.equal(rowCount, 1, `the row to lock exists: ${sql}`);
  let released = false;
  return {
    pid,
    async release() {
      if (released) return;
      released = true;
      await client.query('ROLLBACK').finally(() => client.release());
    },
  };
}

/**
 * Sessions waiting, directly or behind another waiter, on a lock the test holds. Found from the
 * holder, not by query text, which pg_stat_activity cuts at 1 kB.
 */
export async function lockWaiters(db: pg.Pool, lock: HeldLock): Promise<number> {
  const { rows } = await db.query(
    `WITH RECURSIVE waiting (pid) AS (
       SELECT pid FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))
       UNION
       SELECT a.pid FROM pg_stat_activity a JOIN waiting w ON w.pid = ANY (pg_blocking_pids(a.pid))
     )
     SELECT count(*)::int AS n FROM waiting`, [lock.pid]);
  return rows[0].n;
}

/**
 * What `start` begins while `lock` is held, once at least `waiters` sessions wait on the lock and
 * it is let go (let go whatever happens).
 */
export async function afterWaitingOn<T>(db: pg.Pool, lock: HeldLock, what: string, start: () => Promise<T>, waiters = 1, timeoutMs = 5000): Promise<T> {
  let pending: Promise<T>;
  try {
    pending = start();
    await waitFor(what, async () => ((await lockWaiters(db, lock)) >= waiters ? true : undefined), timeoutMs);
  } finally {
    await lock.release();
  }
  return pending;
}
