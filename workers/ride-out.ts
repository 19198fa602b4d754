// Job handlers wait out a short database outage instead of failing at its first moment.
import { setTimeout as sleep } from 'node:timers/promises';
import { isDatabaseUnavailable } from '../domain/errors.ts';
import { JOB_EXPIRE_SECONDS } from '../lib/jobs.ts';

/**
 * A handler that fails while the database is away cannot record its failure either (that needs the
 * database too), so its jobs stay `active` until expireInSeconds and the supervisor's next pass: half
 * a minute and more of events missing after the database came back in a second. Retrying inside the
 * handler keeps the claim and settles the jobs the moment the database answers. Bounded well inside
 * the expiry, so the claim is still this worker's when it settles; only for work that is safe to
 * repeat (every handler here is idempotent).
 */
export const RIDE_OUT_MS = (JOB_EXPIRE_SECONDS - 10) * 1000;
const FIRST_DELAY_MS = 100;
const MAX_DELAY_MS = 1000;

export async function rideOutOutage<T>(work: () => Promise<T>, stopping: AbortSignal): Promise<T> {
  const giveUpAt = Date.now() + RIDE_OUT_MS;
  for (let delay = FIRST_DELAY_MS; ; delay = Math.min(delay * 2, MAX_DELAY_MS)) {
    try {
      return await work();
    } catch (err) {
      // Shutting down: the job goes back through pg-boss's failure path instead of holding up the stop.
      if (!isDatabaseUnavailable(err) || stopping.aborted || Date.now() + delay > giveUpAt) throw err;
    }
    await sleep(delay, undefined, { signal: stopping }).catch(() => undefined);
  }
}
