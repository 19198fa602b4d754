import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Handler } from './types.ts';

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Every response carries X-Request-Id: the client's own when it sent a sane one, else a new one. */
export function requestId(trustProxy: boolean): Handler {
  return function assignRequestId(req, res, next) {
    const sent = req.headers['x-request-id'];
    req.requestId = typeof sent === 'string' && CLIENT_REQUEST_ID.test(sent) ? sent : randomUUID();
    res.setHeader('X-Request-Id', req.requestId);
    req.clientIp = clientAddress(req, trustProxy);
    next();
  };
}

/** The client's address: the peer's, or behind a trusted proxy the first of X-Forwarded-For. */
export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  const peer = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
  if (!trustProxy) return peer;
  const forwarded = req.headers['x-forwarded-for'];
  const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim();
  return first && /^[0-9A-Fa-f.:]{2,45}$/.test(first) ? first : peer;
}
