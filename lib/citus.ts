// Release step: where the database has the citus extension, the schema is distributed by project
// as docs/citus.md lays it out (sql/citus/distribute.sql). Without it, nothing happens: the
// migrations alone make the schema a single PostgreSQL runs.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { APP_ROLE } from './app-role.ts';
import type { Logger } from './log.ts';
import { withReleaseLock } from './migrate.ts';

const DISTRIBUTE = path.join(import.meta.dirname, '..', 'sql', 'citus', 'distribute.sql');

export async function onCitus(db: pg.Pool | pg.ClientBase): Promise<boolean> {
  const { rowCount } = await db.query("SELECT 1 FROM pg_extension WHERE extname = 'citus'");
  return rowCount === 1;
}

/** Returns whether the database is a Citus coordinator (and so now distributed). */
export function distributeOnCitus(pool: pg.Pool, log: Logger): Promise<boolean> {
  return withReleaseLock(pool, async (client) => {
    if (!(await onCitus(client))) return false;
    await client.query('BEGIN');
    try {
      await client.query(readFileSync(DISTRIBUTE, 'utf8'));
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK');
      throw err;
    }
    log.info('citus: the schema is distributed by project');
    return true;
  });
}

/**
 * The grants of the role web and worker connect as (sql/roles/app_grants.sql) reach the workers'
 * shards through Citus, but not its views there, which the functions a change calls read on the
 * worker as that role: those are granted by name, which Citus passes on.
 */
export async function grantOnWorkers(pool: pg.Pool): Promise<void> {
  if (!(await onCitus(pool))) return;
  const { rows } = await pool.query(
    "SELECT c.oid::regclass::text AS view FROM pg_class c WHERE c.relkind = 'v' AND c.relnamespace = 'public'::regnamespace");
  if (rows.length === 0 || (await pool.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [APP_ROLE])).rowCount === 0) return;
  // Under the release lock, as grantAppRole's: two GRANTs of one object at once fail ("tuple
  // concurrently updated"), and every workspace command runs release.
  await withReleaseLock(pool, (client) => client.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ${rows.map((r) => r.view).join(', ')} TO ${APP_ROLE}`));
}
