// Numbered SQL migrations, each in its own transaction. A session advisory lock makes a second
// process that starts the release at the same time wait, then find nothing left to do.
import type pg from 'pg';
import type { Logger } from './log.ts';
import { migrationFiles } from './sql-files.ts';

const MIGRATION_LOCK_ID = 7_301_991;

/** Runs `work` holding the release's lock, so two releases never change the schema at once. */
export async function withReleaseLock<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    return await work(client);
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => {});
    client.release();
  }
}

export function migrateSchema(pool: pg.Pool, log: Logger): Promise<string[]> {
  return withReleaseLock(pool, async (client) => {
    const applied: string[] = [];
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await client.query('SELECT version FROM schema_migrations')).rows.map((r) => r.version as string));
    for (const [version, text] of migrationFiles()) {
      if (done.has(version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(text);
        await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [version]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw err;
      }
      applied.push(version);
      log.info({ version }, 'migration applied');
    }
    return applied;
  });
}
