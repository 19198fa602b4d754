import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { holdsSecret } from '../domain/secrets.ts';
import type { Handler } from './types.ts';

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Every response carries X-Request-Id: the client's own when it sent a sane one, else a new one. */
export function requestId(trustProxy: boolean): Handler {
  return function assignRequestId(req, res, next) {
    const sent = req.headers['x-request-id'];
    // Logged with every line of the request: a secret sent in its place (a client's mistake) is not taken.
    req.requestId = typeof sent === 'string' && CLIENT_REQUEST_ID.test(sent) && !holdsSecret(sent) ? sent : randomUUID();
    res.setHeader('X-Request-Id', req.requestId);
    req.clientIp = clientAddress(req, trustProxy);
    next();
  };
}

/** The peer, or behind a trusted proxy the last X-Forwarded-For (earlier ones are the client's to forge). */
export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  const peer = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
  if (!trustProxy) return peer;
  const forwarded = addressOnly(lastListed(req.headers['x-forwarded-for']) ?? '');
  return forwarded && isIP(forwarded) ? forwarded : peer;
}

/** An address as proxies write it: bare, `1.2.3.4:5678`, `[2001:db8::1]` or `[2001:db8::1]:5678`. */
function addressOnly(written: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(written);
  const address = bracketed ? bracketed[1]! : /^[\d.]+:\d+$/.test(written) ? written.slice(0, written.lastIndexOf(':')) : written;
  return address.replace(/^::ffff:/, '');
}

/** The last of a header's comma-separated values (Node joins a repeated X-Forwarded-* header with commas). */
export function lastListed(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value.join(',') : value;
  return text?.slice(text.lastIndexOf(',') + 1).trim();
}
