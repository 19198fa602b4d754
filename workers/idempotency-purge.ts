// `idempotency.purge`: every five minutes, kept idempotent answers older than 24 hours are deleted
// (a lookup ignores them already).
import { purgeIdempotentRequests } from '../domain/idempotency.ts';
import type { JobQueue } from './queue.ts';

export const idempotencyPurge: JobQueue<'idempotency.purge'> = {
  name: 'idempotency.purge',
  options: { expireInSeconds: 120, retryLimit: 2, retryDelay: 5 },
  schedule: '*/5 * * * *',
  fetch: {},
  async handle(services) {
    const purged = await purgeIdempotentRequests(services.pool);
    if (purged > 0) services.log.info({ purged }, 'kept idempotent answers purged');
  },
};
