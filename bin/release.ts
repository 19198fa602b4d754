// Procfile `release`: schema migrations, then pg-boss's schema, queues and schedules.
import { createPool } from '../lib/db.ts';
import { migrateJobs } from '../lib/jobs.ts';
import { migrateSchema } from '../lib/migrate.ts';
import type { Config } from '../lib/config.ts';
import type { Logger } from '../lib/log.ts';
import { runProcess } from './lifecycle.ts';

export async function release(config: Config, log: Logger, databaseUrl: string): Promise<void> {
  const pool = createPool(config, log, databaseUrl, 1);
  try {
    await migrateSchema(pool, log);
  } finally {
    await pool.end();
  }
  await migrateJobs(databaseUrl, log);
}

if (import.meta.main) {
  await runProcess('release', async (config, log, databaseUrl) => {
    await release(config, log, databaseUrl);
    log.info('release done');
    return [];
  });
}
