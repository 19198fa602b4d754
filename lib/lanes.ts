// The gateway's small reads (lib/sql-files.ts names them) ride a few connections that pipeline
// them: through a pool each statement pays its server process's wake-up; on a lane the server runs
// what has arrived back to back. Nothing that commits rides, or its WAL flush would hold all behind
// it. A lane held past LANE_STALL_MS takes no more, and with every lane held statements take the
// pool (its waitingCount is the load-shedding bound); a lane stuck past the bounds is cut (503).
import type pg from 'pg';
import type { Config } from './config.ts';
import type { Logger } from './log.ts';
import { createPool, cutConnection, SILENCE_BEYOND_STATEMENT_TIMEOUT_MS, type Database, type Statement } from './pool.ts';

/** Past this, a lane's oldest statement in flight is slow: the lane takes no more until it is answered. */
export const LANE_STALL_MS = 10;
const STUCK_LANE_SWEEP_MS = 1000;
/**
 * Errors a lane's connection may go on giving for a statement that is fine elsewhere: a statement
 * whose Parse failed while others of its name were pipelined behind it (26000, then 42P05), or
 * a cached plan a schema change broke (0A000). The lane is dropped and the read tried again once
 * on the pool: statements on lanes change nothing.
 */
const LANE_DAMAGE = new Set(['26000', '42P05', '0A000']);

interface Lane {
  /** The lane's connection once open; undefined until then, and again once it failed. */
  client: pg.PoolClient | undefined;
  opening: Promise<pg.PoolClient> | undefined;
  /** When each statement in flight was sent, oldest first: a lane answers in order. */
  sentAtMs: number[];
}

/** The gateway's database as DB_LANES and DB_POOL_SIZE size it. */
export function openLanedDatabase(config: Config, log: Logger, connectionString: string): LanedDatabase {
  return new LanedDatabase(
    createPool(config, log, connectionString, Math.max(config.dbLanes, 1), { pipelining: true }),
    config.dbLanes,
    createPool(config, log, connectionString),
    config.dbStatementTimeoutMs + SILENCE_BEYOND_STATEMENT_TIMEOUT_MS,
  );
}

export class LanedDatabase implements Database {
  readonly #lanes: Lane[];
  readonly #lanePool: pg.Pool;
  readonly #stuckAfterMs: number;
  readonly #sweep: NodeJS.Timeout;
  #ending = false;
  /** Connections of their own: transactions and writes. */
  readonly pool: pg.Pool;

  /**
   * `lanePool`: a pool of pipelining clients (createPool's `pipelining`), as many as lanes;
   * `stuckAfterMs`: how long a statement may be in flight before its lane is cut.
   */
  constructor(lanePool: pg.Pool, lanes: number, pool: pg.Pool, stuckAfterMs: number) {
    this.#lanePool = lanePool;
    this.pool = pool;
    this.#stuckAfterMs = stuckAfterMs;
    this.#lanes = Array.from({ length: lanes }, () => ({ client: undefined, opening: undefined, sentAtMs: [] }));
    this.#sweep = setInterval(() => this.#cutStuck(), STUCK_LANE_SWEEP_MS).unref();
  }

  /** Requests waiting for a connection of the pool: only those the lanes did not take. */
  get waitingCount(): number {
    return this.pool.waitingCount;
  }

  query(config: Statement): Promise<pg.QueryResult> {
    if (!config.lane || this.#ending) return this.pool.query(config);
    const nowMs = Date.now();
    // Of the lanes moving, the one with the least in flight.
    let lane: Lane | undefined;
    for (const other of this.#lanes) {
      const oldest = other.sentAtMs[0];
      if (oldest !== undefined && nowMs - oldest > LANE_STALL_MS) continue;
      if (!lane || other.sentAtMs.length < lane.sentAtMs.length) lane = other;
    }
    if (!lane) return this.pool.query(config);
    const { sentAtMs } = lane;
    sentAtMs.push(nowMs);
    const send = (client: pg.PoolClient): Promise<pg.QueryResult> =>
      client.query(config).catch((err: unknown) => this.#retryIfDamaged(lane, client, err, config));
    const answered = lane.client ? send(lane.client) : this.#open(lane).then(send);
    return answered.finally(() => {
      sentAtMs.shift();
    });
  }

  connect(): Promise<pg.PoolClient> {
    return this.pool.connect();
  }

  async end(): Promise<void> {
    this.#ending = true;
    clearInterval(this.#sweep);
    // A lane still opening is given back once open (#open), so that the pool's end can finish.
    await Promise.all(this.#lanes.map((lane) => lane.opening?.catch(() => undefined)));
    for (const lane of this.#lanes) {
      const { client } = lane;
      lane.client = undefined;
      client?.release();
    }
    await Promise.all([this.#lanePool.end(), this.pool.end()]);
  }

  /** The lane's connection, opened once for all the statements that wait for it. */
  #open(lane: Lane): Promise<pg.PoolClient> {
    lane.opening ??= this.#lanePool.connect().then((client) => {
      lane.opening = undefined;
      if (this.#ending) {
        client.release();
        throw new Error('Connection terminated: the process is stopping');
      }
      lane.client = client;
      // A connection lost fails what is in flight on it (each answered 503); the next statement
      // opens another. createPool's own listener logs it.
      client.once('error', (err) => this.#drop(lane, client, err));
      return client;
    }, (err: unknown) => {
      lane.opening = undefined;
      throw err;
    });
    return lane.opening;
  }

  /** The lane's connection given up (destroyed), once, if it is still the lane's. */
  #drop(lane: Lane, client: pg.PoolClient, err: Error): void {
    if (lane.client !== client) return;
    lane.client = undefined;
    client.release(err);
  }

  #retryIfDamaged(lane: Lane, client: pg.PoolClient, err: unknown, config: Statement): Promise<pg.QueryResult> {
    const code = (err as { code?: unknown } | null)?.code;
    if (typeof code !== 'string' || !LANE_DAMAGE.has(code)) throw err;
    this.#drop(lane, client, err as Error);
    return this.pool.query(config);
  }

  #cutStuck(): void {
    const nowMs = Date.now();
    for (const lane of this.#lanes) {
      const oldest = lane.sentAtMs[0];
      if (lane.client && oldest !== undefined && nowMs - oldest > this.#stuckAfterMs) cutConnection(lane.client);
    }
  }
}
