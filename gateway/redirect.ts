// Step 1: plain HTTP answers 301 to the same path and query on the HTTPS origin, body unread.
// The origin is the configured public one (PUBLIC_URL), never the request's Host header, which
// the client chooses.
import type { Response } from 'restify';
import { errors } from '../domain/errors.ts';
import type { Handler, Next } from './types.ts';

function redirect(res: Response, location: string, next: Next): void {
  res.setHeader('Location', location);
  res.setHeader('Connection', 'close');
  next(errors.movedPermanently());
}

/** The whole of the plain-HTTP listener. `origin` is read per request: the port is known once listening. */
export function redirectAll(origin: () => string): Handler {
  return function redirectToHttps(req, res, next) {
    redirect(res, `${origin()}${req.url ?? '/'}`, next);
  };
}

/** Behind a TLS-terminating proxy (TRUST_PROXY=true) the proxy says which scheme the client used. */
export function redirectForwardedHttp(origin: () => string): Handler {
  return function redirectProxiedHttp(req, res, next) {
    if (req.headers['x-forwarded-proto'] !== 'http') return next();
    redirect(res, `${origin()}${req.url ?? '/'}`, next);
  };
}
