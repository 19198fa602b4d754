// A key's request limit as the API writes it (decisions.md, "Request limits"): the shape, its
// bounds and its one 422; what a window is lives with the gateway's count (gateway/request-limits.ts).
import { errors } from './errors.ts';

export interface RateLimit {
  limit: number;
  window_s: number;
}

export const MAX_RATE_LIMIT = 1_000_000;
export const MAX_RATE_WINDOW_S = 86_400;

const within = (value: unknown, max: number): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= max;

/** `{"limit", "window_s"}` and nothing else, each within its bounds; null is none. */
export function isRateLimit(value: unknown): value is RateLimit {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  const { limit, window_s: windowS } = value as Record<string, unknown>;
  return keys.length === 2 && keys.includes('limit') && keys.includes('window_s')
    && within(limit, MAX_RATE_LIMIT) && within(windowS, MAX_RATE_WINDOW_S);
}

/** A creation body's `rate_limit`: absent or null gives null (the plan's default applies). */
export function parseRateLimit(value: unknown): RateLimit | null {
  if (value === undefined || value === null) return null;
  if (!isRateLimit(value)) throw errors.rateLimitInvalid();
  return { limit: value.limit, window_s: value.window_s };
}
