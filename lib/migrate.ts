// Numbered SQL migrations, each in its own transaction. A session advisory lock makes a second
// process that starts the release at the same time wait, then find nothing left to do.
import type pg from 'pg';
import type { Logger } from './log.ts';
import { migrationFiles } from './sql-files.ts';

const MIGRATION_LOCK_ID = 7_301_991;

export async function migrateSchema(pool: pg.Pool, log: Logger): Promise<string[]> {
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
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
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => {});
    client.release();
  }
  return applied;
}
