// A row lock a test holds in a transaction of its own, and the sessions waiting on it: for making
// changes queue in the database at a chosen point, then letting them go at once.
import assert from 'node:assert/strict';
import type pg from 'pg';
import { waitFor } from './wait.ts';

export interface HeldLock {
  /** The holding session's backend, which the waiters' pg_blocking_pids name. */
  pid: number;
  /**
   * On Citus, the holding session's global pid: the lock is on the worker of its shard, where
   * pg_blocking_pids of the coordinator sees no waiter, and citus_lock_waits names it by this.
   */
  gpid: string | null;
  release(): Promise<void>;
}

/** A session of the test's that holds locks it takes itself, for lockWaiters; it releases nothing. */
export async function holder(client: pg.ClientBase): Promise<HeldLock> {
  const { rows: [{ pid, citus }] } = await client.query(
    "SELECT pg_backend_pid() AS pid, to_regproc('citus_backend_gpid') IS NOT NULL AS citus");
  const gpid = citus ? (await client.query('SELECT citus_backend_gpid()::text AS gpid')).rows[0].gpid as string : null;
  return { pid, gpid, release: async () => {} };
}

/** Runs `sql` (which must lock exactly one row) in a transaction held open until released. */
export async function holdLock(db: pg.Pool, sql: string, values: unknown[]): Promise<HeldLock> {
  const client = await db.connect();
  const { pid, gpid: globalPid } = await holder(client);
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
    gpid: globalPid,
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
  if (lock.gpid !== null) {
    const { rows } = await db.query(
      `WITH RECURSIVE edges AS MATERIALIZED (
         SELECT waiting_gpid::text AS waiting, blocking_gpid::text AS blocking FROM citus_lock_waits
       ), waiting (gpid) AS (
         SELECT waiting FROM edges WHERE blocking = $1
         UNION
         SELECT e.waiting FROM edges e JOIN waiting w ON e.blocking = w.gpid
       )
       SELECT count(*)::int AS n FROM waiting`, [lock.gpid]);
    return rows[0].n;
  }
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

/**
 * How many locks of this database match `condition` (over pg_locks' columns). On Citus over every
 * node (citus_locks), each node's own oid of the database: a change's locks are on its project's
 * worker. pg_locks lists every database's, and another test file's must not count.
 */
export async function countLocks(db: pg.Pool, condition: string): Promise<number> {
  const { rows: [{ citus }] } = await db.query("SELECT to_regclass('citus_locks') IS NOT NULL AS citus");
  const { rows: [{ n }] } = citus
    ? await db.query(`WITH here AS (
         SELECT nodeid, result::oid AS database
         FROM run_command_on_all_nodes(format('SELECT oid FROM pg_database WHERE datname = %L', current_database()))
       )
       SELECT count(*)::int AS n FROM citus_locks l JOIN here h ON h.nodeid = l.nodeid AND h.database = l.database
       WHERE ${condition}`)
    : await db.query(`SELECT count(*)::int AS n FROM pg_locks
       WHERE database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND ${condition}`);
  return n;
}
