// `key.expire`: every minute, keys past expires_at are marked `expired` with their event
// (authentication treats them as expired from that second anyway).
import { expireDueKeys } from '../domain/keys.ts';
import type { JobQueue } from './queue.ts';

export const keyExpire: JobQueue<'key.expire'> = {
  name: 'key.expire',
  options: { expireInSeconds: 120, retryLimit: 2, retryDelay: 5 },
  schedule: '* * * * *',
  fetch: {},
  async handle(services) {
    const expired = await expireDueKeys(services);
    if (expired > 0) services.log.info({ expired }, 'keys expired');
  },
};
