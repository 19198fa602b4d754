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

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/** Whether a response has started on the socket: then nothing more can be written there. */
function responseStarted(socket: Duplex): boolean {
  return (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
}

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
 * restify makes each request's URL from its Host header and its target (`new URL(scheme + host +
 * target)`), and routes, authenticates and logs by that URL's path. A Host that names no host would
 * throw there, on a tick of restify's own outside any handler, and end the process (`a b`, a port
 * past 65535); one that holds a path, a query or a fragment would choose the path instead of the
 * request line (`Host: x/v1/key/current?` on `GET /healthz`). Only a host name, an IPv4 or a
 * bracketed IPv6 address, with an optional port, is taken; anything else is answered before
 * restify sees it. restify keeps the URL it parsed here on the request and does not parse again.
 */
export function refuseUnusableHosts(server: Server, headers: Readonly<Record<string, string>>): void {
  // Node's own refusal of an HTTP/1.1 request without a Host (RFC 9112 requires the 400) is a bare
  // one, with no envelope and no request id: the request comes here instead, to the envelope's.
  Object.assign(server, { requireHostHeader: false });
  const listeners = server.listeners('request') as Listener[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!hostUsable(req)) return sendEnvelopeBeforeRestify(res, errors.malformedHttp(), headers);
    for (const listener of listeners) listener.call(server, req, res);
  });
}

/** RFC 9110's Host: a reg-name (RFC 3986's unreserved and sub-delims), an IPv4 or bracketed IPv6 address, a port; or empty. Only HTTP/1.0 may send none. */
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
