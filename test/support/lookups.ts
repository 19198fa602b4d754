// Counting the authentication queries a service ran (pg_stat_statements, preloaded by the test
// PostgreSQL), to show an answer was given without a database lookup.
import assert from 'node:assert/strict';
import pg from 'pg';
import { queryText } from '../../lib/sql-files.ts';

/** The line that tells the lookup by hash apart from every other statement. */
const LOOKUP_LINE = queryText('key_authenticate').split('\n').find((line) => line.startsWith('WHERE'))!;
assert.ok(LOOKUP_LINE.includes('secret_hash'), 'the key lookup query is found by its WHERE line');

export class LookupCounter {
  private readonly client: pg.Client;
  /** false where the PostgreSQL of the run has no pg_stat_statements (a DATABASE_URL of one's own). */
  available = false;

  private constructor(databaseUrl: string) {
    this.client = new pg.Client({ connectionString: databaseUrl });
  }

  static async open(databaseUrl: string): Promise<LookupCounter> {
    const counter = new LookupCounter(databaseUrl);
    await counter.client.connect();
    counter.available = await counter.client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')
      .then(() => counter.client.query('SELECT 1 FROM pg_stat_statements LIMIT 1')).then(() => true, () => false);
    return counter;
  }

  /** How many times the service ran the authentication query (sql/queries/key_authenticate.sql) in its database so far. */
  async count(): Promise<number> {
    const { rows } = await this.client.query(
      `SELECT coalesce(sum(calls), 0)::int AS n FROM pg_stat_statements
       WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND strpos(query, $1) > 0`, [LOOKUP_LINE]);
    return rows[0].n;
  }

  close(): Promise<void> {
    return this.client.end();
  }
}
