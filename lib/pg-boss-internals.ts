// All the service uses of pg-boss beyond its public API, in one place. pg-boss is pinned to one
// version in package.json for it, and test/workers/pg-boss-internals.test.ts fails on an upgrade
// that takes any of it away (an import that is gone fails every test that loads this module).
import type pg from 'pg';
// pg-boss's own pool and LISTEN connection: its `pool` and `opened` members.
import BossPoolDb from 'pg-boss/dist/db.js';
// The SQL that names the channel pg-boss's workers LISTEN on.
import { notifyChannelSql } from 'pg-boss/dist/plans.js';

export { notifyChannelSql };

/** How a statement of pg-boss's is sent: a text, or a query config (a named prepared statement). */
export type BossStatement = (text: string, values?: unknown[]) => pg.QueryConfig | string;

/**
 * pg-boss's own pool (and its LISTEN connection) for the worker process, sending each statement as
 * `statement` makes it once the pool is open. pg-boss's public `db` option takes a pool without
 * the LISTEN connection that wakes its workers.
 */
export class BossPool extends BossPoolDb {
  readonly #statement: BossStatement;

  constructor(config: pg.PoolConfig, statement: BossStatement) {
    super(config);
    this.#statement = statement;
  }

  override async executeSql(text: string, values?: unknown[]) {
    if (!this.opened) return super.executeSql(text, values);
    const pool = (this as unknown as { pool: pg.Pool }).pool;
    const query = this.#statement(text, values);
    return typeof query === 'string' ? pool.query(query) : pool.query(query);
  }
}
