// Least privilege: `web` and `worker` connect as a member of the group role pms_app, which may
// read and write the service's rows and nothing more; `release` (the schema's owner) grants it.
import pg from 'pg';
import type { Logger } from './log.ts';
import { withReleaseLock } from './migrate.ts';
import { roleScript } from './sql-files.ts';
import { SQLSTATE } from './sqlstate.ts';

export const APP_ROLE = 'pms_app';

/** Release step: the NOLOGIN group role (made if this role may) and its grants on every current table. */
export async function grantAppRole(pool: pg.Pool, log: Logger): Promise<void> {
  const exists = async () => (await pool.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [APP_ROLE])).rowCount === 1;
  if (!(await exists())) {
    try {
      await pool.query(`CREATE ROLE ${APP_ROLE} NOLOGIN`);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === SQLSTATE.insufficientPrivilege) {
        log.warn({ role: APP_ROLE }, `role ${APP_ROLE} does not exist and this role may not create it; web and worker keep the rights their own role has (README, "Database roles")`);
        return;
      }
      // Another release made it a moment ago.
      if (code !== SQLSTATE.duplicateObject && code !== SQLSTATE.uniqueViolation) throw err;
    }
  }
  await withReleaseLock(pool, (client) => client.query(roleScript('app_grants')));
}

/** Embedded PostgreSQL: pms_app itself logs in, with a password kept beside the data. */
export async function ensureAppLogin(adminUrl: string, password: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`DO $$ BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${APP_ROLE}') THEN CREATE ROLE ${APP_ROLE}; END IF;
    END $$`).catch((err: { code?: string }) => {
      if (err.code !== SQLSTATE.duplicateObject && err.code !== SQLSTATE.uniqueViolation) throw err;
    });
    await client.query(`ALTER ROLE ${APP_ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD ${client.escapeLiteral(password)}`);
  } finally {
    await client.end();
  }
}
