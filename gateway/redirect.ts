// Step 1: plain HTTP answers 301 to the same path and query on the HTTPS origin, body unread.
import type { Response } from 'restify';
import { errors } from '../domain/errors.ts';
import { sendError } from './envelope.ts';
import type { GatewayRequest, Handler } from './types.ts';

const HOSTNAME = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]{1,253})$/;
const STANDARD_HTTPS_PORT = 443;

export function httpsLocation(req: GatewayRequest, fallbackHost: string, httpsPort: number): string {
  const hostname = (req.headers.host ?? '').replace(/:\d+$/, '');
  const host = HOSTNAME.test(hostname) ? hostname : fallbackHost;
  const port = httpsPort === STANDARD_HTTPS_PORT ? '' : `:${httpsPort}`;
  return `https://${host}${port}${req.url ?? '/'}`;
}

function answerRedirect(res: Response, location: string): void {
  res.setHeader('Location', location);
  res.setHeader('Connection', 'close');
  sendError(res, errors.movedPermanently());
}

/** The whole of the plain-HTTP listener. */
export function redirectAll(fallbackHost: string, httpsPort: () => number): Handler {
  return function redirectToHttps(req, res, next) {
    answerRedirect(res, httpsLocation(req, fallbackHost, httpsPort()));
    next(false);
  };
}

/** Behind a TLS-terminating proxy (TRUST_PROXY=true) the proxy says which scheme the client used. */
export function redirectForwardedHttp(fallbackHost: string): Handler {
  return function redirectProxiedHttp(req, res, next) {
    if (req.headers['x-forwarded-proto'] !== 'http') return next();
    answerRedirect(res, httpsLocation(req, fallbackHost, STANDARD_HTTPS_PORT));
    next(false);
  };
}
