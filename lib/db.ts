// All database access goes through here: one pool per process or thread, named queries from
// sql/queries (prepared once per connection), and transactions that may enqueue jobs.
import pg from 'pg';
import type { Config } from './config.ts';
import { errorFields, type Logger } from './log.ts';
import { queryText } from './sql-files.ts';

// int8 (counts, Unix seconds) as numbers: every value we read fits well inside 2^53.
pg.types.setTypeParser(20, (value: string) => Number(value));

export function createPool(config: Config, log: Logger, connectionString: string, max = config.dbPoolSize): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max,
    connectionTimeoutMillis: config.dbConnectTimeoutMs,
    statement_timeout: config.dbStatementTimeoutMs,
    // The client-side bound covers a server that accepted the connection and then went silent.
    query_timeout: config.dbStatementTimeoutMs + 1000,
    idleTimeoutMillis: 30_000,
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
  });
  return pool;
}

export interface Queryable {
  query(config: pg.QueryConfig): Promise<pg.QueryResult>;
}

/**
 * What domain code reads and changes through: a pool, or one request's view of it that carries
 * a check on its first statement or transaction (domain/key-check.ts).
 */
export interface Database extends Queryable {
  connect(): Promise<pg.PoolClient>;
  /** Opens the transaction on a client of this database; a pool's is a plain BEGIN. */
  begin?(client: pg.PoolClient): Promise<void>;
}

/** Runs sql/queries/<name>.sql with bound values, as a prepared statement named after the file. */
export async function run<T extends object = Record<string, unknown>>(db: Queryable, name: string, values: unknown[] = []): Promise<T[]> {
  const result = await db.query({ name, text: queryText(name), values });
  return result.rows as T[];
}

export async function withTransaction<T>(db: Database, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await db.connect();
  let broken = false;
  try {
    if (db.begin) await db.begin(client);
    else await client.query('BEGIN');
    const value = await fn(client);
    await client.query('COMMIT');
    return value;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => { broken = true; });
    throw err;
  } finally {
    // A client whose ROLLBACK failed has a dead or confused connection: destroy, do not reuse.
    client.release(broken);
  }
}
