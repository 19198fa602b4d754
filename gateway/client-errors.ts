// What Node hands to events other than 'request': a request it could not parse (400; 431 for a
// head over the limit, 505 for a version it does not speak), one whose head or body did not arrive
// in time (408), CONNECT (405), and sockets that fail before HTTP starts (a TLS handshake that errs
// or times out, a reset). Those with a request get the envelope; every one is destroyed. And a
// request Node parsed that must not go on: HTTP/0.9 or 2.0 (505), a Host that is none or twice (400).
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Request } from 'restify';
import { errors, type ApiError } from '../domain/errors.ts';
import { sendEnvelopeBeforeRestify, sendEnvelopeOnSocket } from './envelope.ts';
import { responseStarted, setServerOptions } from './node-http-internals.ts';

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

function answerFor(err: Error & { code?: string }): ApiError | undefined {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT': return errors.requestTimeout();
    case 'HPE_HEADER_OVERFLOW': return errors.headersTooLarge();
    // A version llhttp does not take (HTTP/1.2, 3.0), or HTTP/2's preface (PRI * HTTP/2.0).
    case 'HPE_INVALID_VERSION':
    case 'HPE_PAUSED_H2_UPGRADE': return errors.versionNotSupported();
  }
  // llhttp's other parse errors; anything else (TLS, resets, timeouts before HTTP) has no one to answer.
  if (err.code?.startsWith('HPE_')) return errors.malformedHttp();
  return undefined;
}

export function answerClientErrors(server: Server, headers: Readonly<Record<string, string>>): void {
  server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
    const answer = answerFor(err);
    if (!answer || responseStarted(socket)) return void socket.destroy();
    sendEnvelopeOnSocket(socket, answer, headers);
  });
  server.on('connect', (_req: unknown, socket: Duplex) => {
    sendEnvelopeOnSocket(socket, errors.methodNotAllowed(), headers);
  });
  // restify claims 'upgrade' for itself and then leaves the socket unanswered; without a listener
  // Node serves an Upgrade request as a plain one.
  server.removeAllListeners('upgrade');
}

/**
 * The first step: a request Node parsed that must not reach restify. llhttp takes HTTP/0.9 (a
 * request line without a version) and 2.0 as it takes 1.x: 505. restify makes each request's URL
 * from its Host and target and routes, authenticates and logs by its path: a Host that names no
 * host would throw on a tick of restify's own and end the process, one holding a path, query or
 * fragment would choose the path, and of two Hosts Node keeps the first unseen. Only one Host, a
 * host name or an IP address with an optional port, is taken; restify keeps the URL parsed here.
 */
export function refuseUnusableRequests(server: Server, headers: Readonly<Record<string, string>>): void {
  // Node's own 400 for an HTTP/1.1 request without a Host is a bare one, with no envelope and no
  // request id: the request comes here instead, to the envelope's.
  setServerOptions(server, { requireHostHeader: false });
  const listeners = server.listeners('request') as Listener[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.httpVersionMajor !== 1 || req.httpVersionMinor > 1) return sendEnvelopeBeforeRestify(res, errors.versionNotSupported(), headers);
    if (!hostUsable(req)) return sendEnvelopeBeforeRestify(res, errors.malformedHttp(), headers);
    for (const listener of listeners) listener.call(server, req, res);
  });
}

/** A Host: a registered name, an IPv4 or bracketed IPv6 address, a port; or empty. Only HTTP/1.0 may send none. */
const HOST = /^(?:[A-Za-z0-9._~!$&'()*+,;=-]+|\[[0-9A-Fa-f:.]+\])?(?::\d{0,5})?$/;

/** Whether the head holds more than one Host field (Node keeps the first, or with joinDuplicateHeaders joins them). */
function hostRepeated(raw: string[]): boolean {
  let seen = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length !== 4 || name.toLowerCase() !== 'host') continue;
    if (seen) return true;
    seen = true;
  }
  return false;
}

function hostUsable(req: IncomingMessage): boolean {
  const { host } = req.headers;
  if (host === undefined) return req.httpVersionMajor === 1 && req.httpVersionMinor === 0;
  if (!HOST.test(host) || hostRepeated(req.rawHeaders)) return false;
  try {
    (req as unknown as Request).getUrl();
    return true;
  } catch {
    return false;
  }
}
