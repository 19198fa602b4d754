// Job handlers wait out a short database outage instead of failing at its first moment.
import { setTimeout as sleep } from 'node:timers/promises';
import { isDatabaseUnavailable } from '../domain/errors.ts';
import { JOB_EXPIRE_SECONDS } from '../lib/jobs.ts';

/**
 * A handler failing while the database is away cannot record its failure either, so it retries
 * (handlers are idempotent). The deadline leaves room for the last try's timeouts inside the job's
 * expiry, so the claim is still this worker's when it settles.
 */
export const RIDE_OUT_MS = (JOB_EXPIRE_SECONDS - 12) * 1000;
const FIRST_DELAY_MS = 100;
const MAX_DELAY_MS = 1000;

export interface RideOut {
  /** When retrying stops (ms since the epoch). */
  until: number;
  /** Aborted when the worker stops or pg-boss gives up on the batch: the jobs then take pg-boss's failure path. */
  signal: AbortSignal;
}

export function rideOutFromNow(signal: AbortSignal): RideOut {
  return { until: Date.now() + RIDE_OUT_MS, signal };
}

export async function rideOutOutage<T>(work: () => Promise<T>, { until, signal }: RideOut): Promise<T> {
  for (let delay = FIRST_DELAY_MS; ; delay = Math.min(delay * 2, MAX_DELAY_MS)) {
    try {
      return await work();
    } catch (err) {
      if (!isDatabaseUnavailable(err) || signal.aborted || Date.now() + delay > until) throw err;
    }
    await sleep(delay, undefined, { signal }).catch(() => undefined);
  }
}
