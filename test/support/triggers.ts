// A test's own triggers on the service's tables, made or dropped. On Citus those tables are
// distributed, and Citus changes a trigger on one only when told it is safe (it runs on the
// shards); each statement is sent alone, as Citus passes a DDL statement's text on to the workers.
import type pg from 'pg';

export async function changeTriggers(db: pg.Pool, statements: string[]): Promise<void> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL citus.enable_unsafe_triggers = on');
    for (const statement of statements) await client.query(statement);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
