// Release step: where the database has the citus extension, the schema is distributed by project
// as docs/citus.md lays it out (sql/citus/distribute.sql). Without it, nothing happens: the
// migrations alone make the schema a single PostgreSQL runs.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
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
