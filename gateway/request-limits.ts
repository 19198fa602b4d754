// Step 4's last check: a limited key's requests counted in fixed windows over every web process.
// Each process leases a share of the window from the database and counts it down in memory, so
// most requests cost no round trip; a lease is small enough that the shares other processes hold
// unused never refuse a client under its limit (docs/request-limits.md gives the argument).
import { errors } from '../domain/errors.ts';
import type { RateLimit } from '../domain/rate-limit.ts';
import { queryFile, type Queryable } from '../lib/pool.ts';
import type { Handler } from './types.ts';

/** One window of one key, as this process sees it. */
interface Window {
  start: number;
  endMs: number;
  /** Requests leased and not yet admitted here. */
  left: number;
  /** The window's admitted requests as far as this process can tell (the others' leases counted as used). */
  counted: number;
  /** The database had nothing left to lease: past `left`, every request is refused. */
  exhausted: boolean;
  leasing: boolean;
  /** Requests waiting for a lease, in arrival order. */
  waiting: Array<(failure?: unknown) => void>;
}

/** A request's outcome: admitted or not, and the window it was counted in. */
export type Admission = (admitted: boolean, window: Window) => void;

/** The window of `nowMs` for a key: every process finds the same one without asking. */
export function windowOf(keyId: string, limit: RateLimit, nowMs: number): { start: number; endMs: number } {
  // A per-key offset (its id is random), so that keys of one window length do not all start afresh at once.
  const offset = (Number.parseInt(keyId.slice(-7), 16) || 0) % limit.window_s;
  const start = Math.floor((nowMs / 1000 - offset) / limit.window_s) * limit.window_s + offset;
  return { start, endMs: (start + limit.window_s) * 1000 };
}

/** What all processes together may be granted in a window: the limit, 1% of it and one per process. */
export const capOf = (limit: number, processes: number) => limit + Math.floor(limit / 100) + processes;

/** The most one process holds leased at once (docs/request-limits.md: one process more than counted stays safe). */
export const leaseOf = (limit: number, processes: number) => 1 + Math.floor(Math.floor(limit / 100) / processes);

const SWEEP_SIZE = 1024;
const SWEEP_EVERY_MS = 1000;

export class RequestLimits {
  readonly #db: Queryable;
  readonly #processes: () => number;
  readonly #windows = new Map<string, Window>();
  #sweptAtMs = 0;

  /** `processes`: the web processes alive now, this one included. */
  constructor(db: Queryable, processes: () => number) {
    this.#db = db;
    this.#processes = processes;
  }

  /** Counts one request of the key: answered at once while the lease lasts, else once leased; `failed` if the lease could not be had. */
  admit(keyId: string, limit: RateLimit, answer: Admission, failed: (err: unknown) => void, nowMs = Date.now()): void {
    let window = this.#windows.get(keyId);
    if (!window || nowMs >= window.endMs) {
      this.#sweep(nowMs);
      window = { ...windowOf(keyId, limit, nowMs), left: 0, counted: 0, exhausted: false, leasing: false, waiting: [] };
      this.#windows.set(keyId, window);
    }
    if (window.left > 0 && window.waiting.length === 0) {
      take(window);
      // Topped up to a whole lease before it runs out, so the requests after this one do not wait.
      const lease = leaseOf(limit.limit, this.#processes());
      if (window.left <= lease / 2 && !window.exhausted) this.#lease(keyId, limit, window, lease - window.left);
      return answer(true, window);
    }
    if (window.exhausted && window.left === 0) return answer(false, window);
    const current = window;
    current.waiting.push((failure) => {
      if (failure !== undefined) return failed(failure);
      if (current.left > 0) {
        take(current);
        answer(true, current);
      } else {
        answer(false, current);
      }
    });
    this.#lease(keyId, limit, current, leaseOf(limit.limit, this.#processes()));
  }

  #lease(keyId: string, limit: RateLimit, window: Window, wanted: number): void {
    if (window.leasing) return;
    window.leasing = true;
    queryFile<{ granted: number; leased: number }>(this.#db, 'request_lease', {
      key_id: keyId, window_start: window.start, window_end: window.endMs / 1000,
      lease: wanted, cap: capOf(limit.limit, this.#processes()),
    }).then(([row]) => {
      window.leasing = false;
      if (row && row.leased > 0) {
        window.left += row.leased;
        window.counted = Math.max(window.counted, row.granted - window.left);
      } else {
        window.exhausted = true;
        window.counted = Math.max(window.counted, limit.limit);
      }
      // Those waiting take what came; any left over wait for the next lease, or are refused.
      while (window.waiting.length > 0 && (window.left > 0 || window.exhausted)) window.waiting.shift()!();
      if (window.waiting.length > 0) this.#lease(keyId, limit, window, leaseOf(limit.limit, this.#processes()));
    }, (err: unknown) => {
      window.leasing = false;
      for (const waiter of window.waiting.splice(0)) waiter(err);
    });
  }

  /** Ended windows are forgotten now and then, once many are kept. */
  #sweep(nowMs: number): void {
    if (this.#windows.size < SWEEP_SIZE || nowMs - this.#sweptAtMs < SWEEP_EVERY_MS) return;
    this.#sweptAtMs = nowMs;
    for (const [id, window] of this.#windows) if (nowMs >= window.endMs && !window.leasing) this.#windows.delete(id);
  }
}

function take(window: Window): void {
  window.left--;
  window.counted++;
}

const secondsTo = (endMs: number, nowMs: number) => Math.max(1, Math.ceil((endMs - nowMs) / 1000));

/**
 * The step: a limited key's request is counted, and its answer, whatever it is, carries the IETF
 * RateLimit headers; past the limit, 429 with Retry-After. An unlimited key's passes untouched.
 */
export function limitRequests(limits: RequestLimits): Handler {
  return function limitRequest(req, res, next) {
    const limit = req.caller?.rate_limit;
    if (!limit) return next();
    res.setHeader('RateLimit-Policy', `"key";q=${limit.limit};w=${limit.window_s}`);
    limits.admit(req.caller!.id, limit, (admitted, window) => {
      const nowMs = Date.now();
      const reset = secondsTo(window.endMs, nowMs);
      res.setHeader('RateLimit', `"key";r=${Math.max(0, limit.limit - window.counted)};t=${reset}`);
      next(admitted ? undefined : errors.keyRateLimited(reset));
    }, (err) => next(err as Error));
  };
}
