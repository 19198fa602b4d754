// How many PostgreSQL connections the fleet's processes open: the most each process can hold by its
// configuration (docs/deploy.md's formula), and the most pg_stat_activity showed per client host
// and application_name while a load ran.
import type pg from 'pg';
import type { Config } from '../../lib/config.ts';
import { sleep } from './changes.ts';

/** pg-boss's own pool in the worker process (lib/jobs.ts startConsumer). */
export const BOSS_POOL_MAX = 6;
/** The worker process's own pool (workers/start.ts). */
export const WORKER_POOL_MAX = 4;
/** The webhook deliveries' pool in the worker (domain/webhook-delivery.ts). */
export const WEBHOOK_POOL_MAX = 4;

export interface Formula {
  /** Its lanes, its pool, each pool thread's pool, the event streams' LISTEN connection, the database watch's. */
  web: number;
  /** Its pool, pg-boss's pool and LISTEN connection, the webhook deliveries' pool and LISTEN connection. */
  worker: number;
  total(webs: number, workers: number): number;
}

export function connectionFormula(config: Config): Formula {
  const threadPool = Math.max(2, Math.ceil(config.dbPoolSize / config.workerThreads));
  const web = Math.max(config.dbLanes, 1) + config.dbPoolSize + config.workerThreads * threadPool + 1 + (config.dbSilenceMs > 0 ? 1 : 0);
  const worker = WORKER_POOL_MAX + BOSS_POOL_MAX + 1 + WEBHOOK_POOL_MAX + 1;
  return { web, worker, total: (webs, workers) => webs * web + workers * worker };
}

/** The most connections of `role` seen at once per "address application_name" over `ms`. */
export async function peakConnections(db: pg.Pool, database: string, role: string, ms: number): Promise<Map<string, number>> {
  const peak = new Map<string, number>();
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const { rows } = await db.query<{ addr: string; app: string; n: number }>(
      `SELECT coalesce(host(client_addr), 'local') AS addr, application_name AS app, count(*)::int AS n
       FROM pg_stat_activity WHERE backend_type = 'client backend' AND datname = $1 AND usename = $2
       GROUP BY 1, 2`, [database, role]);
    for (const row of rows) {
      const key = `${row.addr} ${row.app || '(none)'}`;
      peak.set(key, Math.max(peak.get(key) ?? 0, row.n));
    }
    await sleep(200);
  }
  return peak;
}
