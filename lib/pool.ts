// All database access goes through here: one pool per process or thread, named queries from
// sql/queries (prepared once per connection), and transactions that may enqueue jobs.
import pg from 'pg';
import type { Config } from './config.ts';
import { followDatabaseWatch } from './database-sockets.ts';
import { errorFields, type Logger } from './log.ts';
import { PipeliningClient, queryInFlight, SocketClient, socketOf } from './pg-internals.ts';
import { parameterValues, queryStatement, ridesLane, type NamedValues } from './sql-files.ts';

// int8 (counts, Unix seconds) as numbers: every value we read fits well inside 2^53.
pg.types.setTypeParser(20, (value: string) => Number(value));

export function createPool(config: Config, log: Logger, connectionString: string, max = config.dbPoolSize, { pipelining = false } = {}): pg.Pool {
  followDatabaseWatch();
  const pool = new pg.Pool({
    connectionString,
    max,
    connectionTimeoutMillis: config.dbConnectTimeoutMs,
    statement_timeout: config.dbStatementTimeoutMs,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
    Client: pipelining ? PipeliningClient : SocketClient,
  });
  // A client losing its connection (database restart) must never crash the process: pg-pool
  // handles errors of idle clients only, so every client also gets its own listener. The query
  // in flight, or the next one, fails and is answered 503.
  // pool.end() resolves before its connections have closed: a server stopped right after (the
  // embedded PostgreSQL at the end of a shutdown) can still cut one. Nothing is lost then.
  pool.on('error', (err) => {
    if (!pool.ending) log.warn({ err: errorFields(err) }, 'idle database client failed');
  });
  pool.on('connect', (client) => {
    client.on('error', (err) => {
      if (!pool.ending) log.warn({ err: errorFields(err) }, 'database connection lost');
    });
    failWhenSilent(client, config.dbStatementTimeoutMs + SILENCE_BEYOND_STATEMENT_TIMEOUT_MS);
  });
  // A client given back inside a transaction (failed, or open with its locks) would hand both to
  // its next user: it is closed instead, which rolls it back (pg-pool drops a client it sees ending).
  pool.on('release', (err, client) => {
    if (err || client.getTransactionStatus() === 'I') return;
    log.warn({ transaction: client.getTransactionStatus() }, 'database client given back inside a transaction; closed');
    // Ending it here (public end()) is what makes pg-pool remove it rather than keep it idle.
    client.end().catch(() => {});
  });
  return pool;
}

/**
 * TCP keepalive probes start after this long idle (then each second, ten of them: libuv's): an idle
 * connection to a server gone silent fails in the pool within about 15 s, instead of failing the
 * first request that takes it once the server is back (which ended the session meanwhile).
 */
export const KEEPALIVE_IDLE_MS = 5000;

/** How long past the statement timeout a query may go without a byte from the server. */
export const SILENCE_BEYOND_STATEMENT_TIMEOUT_MS = 1000;

/**
 * The client-side bound for a server that accepted the connection and then went silent (the
 * statement timeout is the server's own, so it cannot end that): a query in flight with nothing
 * read or written for `ms` closes its connection, and fails as a lost connection does (503).
 * One idle timer per connection, which every byte refreshes, not pg's query_timeout: its timer
 * per query kept each query and the rows it read alive past their request, into the old
 * generation, where only full garbage collections reclaim them.
 */
export function failWhenSilent(client: pg.PoolClient, ms: number): void {
  const socket = socketOf(client);
  socket.setTimeout(ms);
  // A listener of its own: the callback setTimeout takes is a once-listener, so after a first
  // idle spell (the timer firing while no query is in flight) no later silence would be bounded.
  socket.on('timeout', () => {
    if (queryInFlight(client)) socket.destroy();
  });
}

/** Closes a client's connection at once: what it has in flight fails as a lost connection does (503). */
export function cutConnection(client: pg.ClientBase): void {
  socketOf(client).destroy();
}

/** A statement, and whether it may ride one of the gateway's lanes (lib/lanes.ts). */
export type Statement = (pg.QueryConfig | pg.QueryArrayConfig) & { lane?: boolean };

export interface Queryable {
  query(config: Statement): Promise<pg.QueryResult>;
}

/**
 * What domain code reads and changes through: a pool, or one request's view of it that carries
 * a check on its first statement or transaction (domain/key-check.ts).
 */
export interface Database extends Queryable {
  connect(): Promise<pg.PoolClient>;
  /** Opens the transaction on a client of this database; a pool's is a plain BEGIN. */
  begin?(client: pg.PoolClient): Promise<void>;
  /** A transaction is open on its one connection already: a change nests as a savepoint. */
  readonly nested?: boolean;
}

/**
 * Runs sql/queries/<name>.sql as a prepared statement named after the file, with its values in
 * order, or by name for a file that takes `:name` parameters.
 */
export async function queryFile<T extends object = Record<string, unknown>>(
  db: Queryable, name: string, values: unknown[] | NamedValues = [],
): Promise<T[]> {
  const statement = queryStatement(name);
  const result = await db.query({ name, text: statement.text, values: parameterValues(statement, values, name), lane: ridesLane(name) });
  return result.rows as T[];
}

/**
 * How a transaction ends: its `statements`, in order, are sent in its COMMIT's message (simple
 * query protocol: literals written into their text, joined by STATEMENT_SEPARATOR), so they cost
 * no round trip of their own and a row they lock is held for none; an error among them skips the
 * COMMIT and rolls the transaction back.
 */
export interface TransactionEnd {
  statements: string[];
}

/** What separates the statements of a COMMIT's message. */
export const STATEMENT_SEPARATOR = '\n;\n';

const TOP_LEVEL = { begin: 'BEGIN', commit: 'COMMIT', rollback: 'ROLLBACK' };
const NESTED = { begin: 'SAVEPOINT pms_change', commit: 'RELEASE SAVEPOINT pms_change', rollback: 'ROLLBACK TO SAVEPOINT pms_change' };

/** How a change on `db` begins and ends: a transaction, or a savepoint in the one already open. */
export const transactionWords = (db: Pick<Database, 'nested'>) => (db.nested ? NESTED : TOP_LEVEL);

export async function withTransaction<T>(db: Database, fn: (client: pg.PoolClient, end: TransactionEnd) => Promise<T>): Promise<T> {
  const client = await db.connect();
  let broken = false;
  try {
    const words = transactionWords(db);
    if (db.begin) await db.begin(client);
    else await client.query(words.begin);
    const end: TransactionEnd = { statements: [] };
    const value = await fn(client, end);
    await client.query([...end.statements, words.commit].join(STATEMENT_SEPARATOR));
    return value;
  } catch (err) {
    await client.query(transactionWords(db).rollback).catch(() => { broken = true; });
    throw err;
  } finally {
    // A client whose ROLLBACK failed has a dead or confused connection: destroy, do not reuse.
    client.release(broken);
  }
}

/**
 * Statements sent together on one connection of a pipelining pool (createPool's `pipelining`), in
 * one round trip instead of one each, and in one write: `send` must queue them on the client
 * before its first await (call queryFile without awaiting). With `transaction`, BEGIN goes before
 * them and COMMIT after, and a statement that fails makes that COMMIT a rollback. Any failure
 * closes the connection rather than hand it back with statements still in flight.
 */
export async function pipelined<T>(pool: pg.Pool, send: (client: pg.PoolClient) => Promise<T>, { transaction = false } = {}): Promise<T> {
  const client = await pool.connect();
  let failed: unknown;
  try {
    // pg writes each statement as it is queued: held back here, they leave in one write, so the
    // server is woken once for them all, not once each.
    const socket = socketOf(client);
    socket.cork();
    let sent: Promise<unknown>[];
    try {
      sent = [
        ...(transaction ? [client.query('BEGIN')] : []),
        send(client),
        ...(transaction ? [client.query('COMMIT')] : []),
      ];
    } finally {
      socket.uncork();
    }
    const settled = await Promise.allSettled(sent);
    const rejected = settled.find((s) => s.status === 'rejected');
    if (rejected) throw (failed = rejected.reason);
    return (settled[transaction ? 1 : 0] as PromiseFulfilledResult<T>).value;
  } finally {
    client.release(failed === undefined ? undefined : true);
  }
}

/**
 * A transaction already open on one connection, as a Database: changes run in it nest as
 * savepoints, and what they connect to is that connection, which they cannot release.
 */
export function openTransaction(client: pg.PoolClient): Database {
  const borrowed = new Proxy(client, {
    get(target, property) {
      if (property === 'release') return () => {};
      const value: unknown = Reflect.get(target, property);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { nested: true, query: (config) => client.query(config), connect: async () => borrowed };
}
