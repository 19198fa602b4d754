// Procfile `release`: schema migrations, then pg-boss's schema, queues and schedules, then the
// grants of the role web and worker connect as (lib/app-role.ts).
import { backfillChains } from '../domain/audit-chain.ts';
import { grantAppRole } from '../lib/app-role.ts';
import { distributeOnCitus, grantOnWorkers } from '../lib/citus.ts';
import { createPool } from '../lib/pool.ts';
import { migrateJobs } from '../lib/jobs.ts';
import { migrateSchema } from '../lib/migrate.ts';
import { JOB_QUEUES } from '../workers/registry.ts';
import type { Config } from '../lib/config.ts';
import type { Logger } from '../lib/log.ts';
import { runProcess } from './lifecycle.ts';

export async function release(config: Config, log: Logger, databaseUrl: string): Promise<void> {
  const pool = createPool(config, log, databaseUrl, 1);
  try {
    await migrateSchema(pool, log);
    const hashed = await backfillChains(pool);
    if (hashed > 0) log.info({ projects: hashed }, 'audit trail: hashes and JSON of earlier events written');
    await distributeOnCitus(pool, log);
    await migrateJobs(databaseUrl, log, JOB_QUEUES);
    await grantAppRole(pool, log);
    await grantOnWorkers(pool);
  } finally {
    await pool.end();
  }
}

/** The process itself: bin/release.js calls it, as does `node bin/release.ts`. */
export function main(): Promise<void> {
  return runProcess('release', async (config, log, database) => {
    await release(config, log, database.ownerUrl);
    log.info('release done');
    return [];
  });
}

if (import.meta.main) await main();
