import type { Origin } from './jobs.ts';

/** Who makes a change and from where: recorded on its event. */
export interface Actor {
  origin: Origin;
  ip: string;
  /** The key that made an API change. */
  keyId?: string;
}

/** The service's own changes (expiry, the first start's project), recorded as made on this host. */
export const SYSTEM_ACTOR: Actor = Object.freeze({ origin: 'system', ip: '127.0.0.1' });
