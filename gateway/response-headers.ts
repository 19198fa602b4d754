// Headers on every answer: no caching (answers hold secrets), no sniffing, and HSTS on HTTPS.
import type { Handler } from './types.ts';

/** One year, the figure browsers' preload lists ask for; subdomains are the operator's call. */
const HSTS_MAX_AGE_SECONDS = 31_536_000;

export function hardenedHeaders(https: boolean): Readonly<Record<string, string>> {
  return {
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    ...(https ? { 'Strict-Transport-Security': `max-age=${HSTS_MAX_AGE_SECONDS}` } : {}),
  };
}

export function setHardenedHeaders(https: boolean): Handler {
  const headers = Object.entries(hardenedHeaders(https));
  return function hardenResponse(_req, res, next) {
    for (const [name, value] of headers) res.setHeader(name, value);
    next();
  };
}
