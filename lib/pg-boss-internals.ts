// All the service uses of pg-boss beyond its public API, in one place, with pg-boss pinned to one
// version in package.json for it. test/workers/pg-boss-internals.test.ts fails, naming this file,
// on an upgrade that moves any of it. pg-boss's public `db` option could take an adapter of ours
// with a `listen` of its own, but the reconnects and heartbeats of pg-boss's LISTEN connection
// would then be ours to write; and nothing public names the channel the producers wake it on.
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
 * `statement` makes it once the pool is open.
 */
export class BossPool extends BossPoolDb {
  readonly #statement: BossStatement;

  constructor(config: pg.PoolConfig, statement: BossStatement) {
    super(config);
    this.#statement = statement;
  }

  override async executeSql(text: string, values?: unknown[]) {
    if (!this.opened) return super.executeSql(text, values);
    const pool = (this as unknown as { pool?: pg.Pool }).pool;
    if (typeof pool?.query !== 'function') throw new Error('pg-boss\'s Db has no `pool` to send on (lib/pg-boss-internals.ts)');
    const query = this.#statement(text, values);
    return typeof query === 'string' ? pool.query(query) : pool.query(query);
  }
}
