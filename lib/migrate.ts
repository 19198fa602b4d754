// Numbered SQL migrations, each in its own transaction. A session advisory lock makes a second
// process that starts the release at the same time wait, then find nothing left to do.
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { Logger } from './log.ts';
import { migrationFiles } from './sql-files.ts';
import { SQLSTATE } from './sqlstate.ts';
import { StartupError } from './startup-error.ts';

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

/**
 * How a migration waits for its locks. A schema change waiting for a table's lock blocks every
 * later query of that table, so it waits in short turns and lets those queries through between.
 */
export interface LockPatience {
  lockTimeoutMs: number;
  attempts: number;
  pauseMs: number;
}

const LOCK_PATIENCE: LockPatience = { lockTimeoutMs: 2000, attempts: 15, pauseMs: 2000 };

export function migrateSchema(pool: pg.Pool, log: Logger, files = migrationFiles(), patience = LOCK_PATIENCE): Promise<string[]> {
  return withReleaseLock(pool, async (client) => {
    const applied: string[] = [];
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await client.query('SELECT version FROM schema_migrations')).rows.map((r) => r.version as string));
    for (const [version, text] of files) {
      if (done.has(version)) continue;
      for (let attempt = 1; ; attempt++) {
        try {
          await applyMigration(client, version, text, patience.lockTimeoutMs);
          break;
        } catch (err) {
          if ((err as { code?: string }).code !== SQLSTATE.lockNotAvailable) throw err;
          if (attempt === patience.attempts) {
            throw new StartupError(`migration ${version} could not take its locks in ${attempt} tries of ${patience.lockTimeoutMs} ms: ` +
              'a transaction in progress holds a table it changes; run release again once it has ended.');
          }
          log.warn({ version, attempt }, 'migration waited too long for a lock; trying again');
          await sleep(patience.pauseMs);
        }
      }
      applied.push(version);
      log.info({ version }, 'migration applied');
    }
    return applied;
  });
}

/** One migration and its record, in one transaction; a migration takes as long as its work needs. */
async function applyMigration(client: pg.PoolClient, version: string, text: string, lockTimeoutMs: number): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query(`SET LOCAL lock_timeout = ${Math.floor(lockTimeoutMs)}`);
    // The pool's statement timeout bounds requests; an index built over a large table may take longer.
    await client.query('SET LOCAL statement_timeout = 0');
    await client.query(text);
    await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [version]);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  }
}
