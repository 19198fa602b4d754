// Step 1: plain HTTP answers 301 to the same path and query on the HTTPS origin, body unread.
// The origin is the configured public one (PUBLIC_URL), never the request's Host header, which
// the client chooses.
import type { Response } from 'restify';
import { errors } from '../domain/errors.ts';
import { sendError } from './envelope.ts';
import type { Handler } from './types.ts';

function answerRedirect(res: Response, location: string): void {
  res.setHeader('Location', location);
  res.setHeader('Connection', 'close');
  sendError(res, errors.movedPermanently());
}

/** The whole of the plain-HTTP listener. `origin` is read per request: the port is known once listening. */
export function redirectAll(origin: () => string): Handler {
  return function redirectToHttps(req, res, next) {
    answerRedirect(res, `${origin()}${req.url ?? '/'}`);
    next(false);
  };
}

/** Behind a TLS-terminating proxy (TRUST_PROXY=true) the proxy says which scheme the client used. */
export function redirectForwardedHttp(origin: () => string): Handler {
  return function redirectProxiedHttp(req, res, next) {
    if (req.headers['x-forwarded-proto'] !== 'http') return next();
    answerRedirect(res, `${origin()}${req.url ?? '/'}`);
    next(false);
  };
}
