// Step 1: plain HTTP answers 301 to the same path and query on the HTTPS origin, body unread.
// The origin is the configured public one (PUBLIC_URL), never the request's Host header, which
// the client chooses.
import type { Response } from 'restify';
import { errors } from '../domain/errors.ts';
import { lastListed } from './request-id.ts';
import type { Handler, Next } from './types.ts';

function redirect(res: Response, origin: string, target: string | undefined, next: Next): void {
  res.setHeader('Location', `${origin}${pathAndQuery(target)}`);
  res.setHeader('Connection', 'close');
  next(errors.movedPermanently());
}

/** The whole of the plain-HTTP listener. `origin` is read per request: the port is known once listening. */
export function redirectAll(origin: () => string): Handler {
  return function redirectToHttps(req, res, next) {
    redirect(res, origin(), req.url, next);
  };
}

/**
 * The request target's path and query. An absolute-form target (`GET https://elsewhere/x`) or
 * `OPTIONS *` gives only its path: appended as it is, it would add to the origin's host or port.
 */
function pathAndQuery(target = '/'): string {
  if (target.startsWith('/')) return target;
  try {
    const url = new URL(target);
    return `${url.pathname.startsWith('/') ? url.pathname : '/'}${url.search}`;
  } catch {
    return '/';
  }
}

/**
 * Behind a TLS-terminating proxy (TRUST_PROXY=true) the proxy says which scheme the client used:
 * the last value of X-Forwarded-Proto, the one it added or set (what comes before it, the client
 * may have sent itself).
 */
export function redirectForwardedHttp(origin: () => string): Handler {
  return function redirectProxiedHttp(req, res, next) {
    if (lastListed(req.headers['x-forwarded-proto'])?.toLowerCase() !== 'http') return next();
    redirect(res, origin(), req.url, next);
  };
}
