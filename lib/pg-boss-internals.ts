// All the service uses of pg-boss beyond its public API, in one place, with pg-boss pinned to one
// version in package.json for it. test/workers/pg-boss-internals.test.ts fails, naming this file,
// on an upgrade that moves any of it. pg-boss's public `db` option could take an adapter of ours
// with a `listen` of its own, but the reconnects and heartbeats of pg-boss's LISTEN connection
// would then be ours to write; and nothing public names the channel the producers wake it on.
import type pg from 'pg';
import { SocketClient } from './pg-internals.ts';
import { failWhenSilent, KEEPALIVE_IDLE_MS } from './pool.ts';
// pg-boss's own pool and LISTEN connection: its `pool` and `opened` members.
import BossPoolDb from 'pg-boss/dist/db.js';
// The SQL that names the channel pg-boss's workers LISTEN on.
import { notifyChannelSql } from 'pg-boss/dist/plans.js';

export { notifyChannelSql };

/** How a statement of pg-boss's is sent: a text, or a query config (a named prepared statement). */
export type BossStatement = (text: string, values?: unknown[]) => pg.QueryConfig | string;

/** A pool config whose clients keep alive and run on a socket lib/pg-internals.ts can reach. */
function withKeepalives(config: pg.PoolConfig): ConstructorParameters<typeof BossPoolDb>[0] {
  const bounded: pg.PoolConfig = { ...config, Client: SocketClient, keepAlive: true, keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS };
  return bounded;
}

/**
 * pg-boss's own pool (and its LISTEN connection) for the worker process, sending each statement as
 * `statement` makes it once the pool is open. Its connections are bounded as the service's own are
 * (lib/pool.ts): keepalives, and a statement that hears nothing for `silenceMs` closes its
 * connection; pg-boss's pool had neither, so a server gone silent held its statements until TCP
 * gave up, minutes later.
 */
export class BossPool extends BossPoolDb {
  readonly #statement: BossStatement;
  readonly #silenceMs: number;

  constructor(config: pg.PoolConfig, statement: BossStatement, silenceMs: number) {
    super(withKeepalives(config));
    this.#statement = statement;
    this.#silenceMs = silenceMs;
  }

  override async open() {
    await super.open();
    this.#pool().on('connect', (client) => failWhenSilent(client, this.#silenceMs));
  }

  override async executeSql(text: string, values?: unknown[]) {
    if (!this.opened) return super.executeSql(text, values);
    const pool = this.#pool();
    const query = this.#statement(text, values);
    return typeof query === 'string' ? pool.query(query) : pool.query(query);
  }

  #pool(): pg.Pool {
    const pool = (this as unknown as { pool?: pg.Pool }).pool;
    if (typeof pool?.query !== 'function') throw new Error('pg-boss\'s Db has no `pool` to send on (lib/pg-boss-internals.ts)');
    return pool;
  }
}
