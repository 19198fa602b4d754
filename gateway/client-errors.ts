// What Node hands to events other than 'request': a request it could not parse (400), one whose
// head or body did not arrive in time (408), CONNECT (405), and sockets that fail before HTTP
// starts (a TLS handshake that errs or times out, a reset). The first three get the envelope;
// every one of them is destroyed, so its descriptor is freed whatever the peer does. And a request
// Node parsed that restify cannot take (a Host header that is not a host): 400 likewise.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Request } from 'restify';
import { errors, type ApiError } from '../domain/errors.ts';
import { sendEnvelopeBeforeRestify, sendEnvelopeOnSocket } from './envelope.ts';
import { responseStarted, setServerOptions } from './node-http-internals.ts';

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

function answerFor(err: Error & { code?: string }): ApiError | undefined {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return errors.requestTimeout();
  // llhttp's parse errors; anything else (TLS, resets, timeouts before HTTP) has no one to answer.
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
 * restify makes each request's URL from its Host and target and routes, authenticates and logs by
 * its path: a Host that names no host would throw on a tick of restify's own and end the process,
 * and one holding a path, query or fragment would choose the path. Only a host name or an IP
 * address, with an optional port, is taken; restify keeps the URL parsed here.
 */
export function refuseUnusableHosts(server: Server, headers: Readonly<Record<string, string>>): void {
  // Node's own 400 for an HTTP/1.1 request without a Host is a bare one, with no envelope and no
  // request id: the request comes here instead, to the envelope's.
  setServerOptions(server, { requireHostHeader: false });
  const listeners = server.listeners('request') as Listener[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!hostUsable(req)) return sendEnvelopeBeforeRestify(res, errors.malformedHttp(), headers);
    for (const listener of listeners) listener.call(server, req, res);
  });
}

/** A Host: a registered name, an IPv4 or bracketed IPv6 address, a port; or empty. Only HTTP/1.0 may send none. */
const HOST = /^(?:[A-Za-z0-9._~!$&'()*+,;=-]+|\[[0-9A-Fa-f:.]+\])?(?::\d{0,5})?$/;

function hostUsable(req: IncomingMessage): boolean {
  const { host } = req.headers;
  if (host === undefined) return req.httpVersionMajor === 1 && req.httpVersionMinor === 0;
  if (!HOST.test(host)) return false;
  try {
    (req as unknown as Request).getUrl();
    return true;
  } catch {
    return false;
  }
}
