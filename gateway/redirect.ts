// Step 1: plain HTTP answers 301 to the same path and query on the HTTPS origin, body unread.
// The origin is configured, never the client-chosen Host header.
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

/** The target's path and query; an absolute-form target gives only its path, never a host. */
function pathAndQuery(target = '/'): string {
  if (target.startsWith('/')) return target;
  try {
    const url = new URL(target);
    return `${url.pathname.startsWith('/') ? url.pathname : '/'}${url.search}`;
  } catch {
    return '/';
  }
}

/** Behind a trusted proxy: the last X-Forwarded-Proto (the proxy's own; earlier ones are the client's). */
export function redirectForwardedHttp(origin: () => string): Handler {
  return function redirectProxiedHttp(req, res, next) {
    if (lastListed(req.headers['x-forwarded-proto'])?.toLowerCase() !== 'http') return next();
    redirect(res, origin(), req.url, next);
  };
}
