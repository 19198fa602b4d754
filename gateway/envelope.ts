// The one envelope writer: every response, success or failure, leaves through here.
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Response } from 'restify';
import { ApiError, TITLES } from '../domain/errors.ts';
import { sendRaw } from './large-answers.ts';

export function sendEnvelope(res: Response, status: number, response: unknown, headers: Record<string, string> = {}): void {
  writeEnvelope(res, status, status, JSON.stringify(response), headers);
}

/** A pool thread's answer, its `response` serialised there. */
export function sendSerializedEnvelope(res: Response, status: number, responseJson: string | undefined, headers: Record<string, string> = {}): void {
  writeEnvelope(res, status, status, responseJson, headers);
}

function writeEnvelope(res: Response, status: number, code: number | string, responseJson: string | undefined, headers: Record<string, string>): void {
  // What JSON.stringify({ code, title, response }) writes, with `response` already serialised.
  const response = responseJson === undefined ? '' : `,"response":${responseJson}`;
  const body = `{"code":${JSON.stringify(code)},"title":${JSON.stringify(TITLES[status] ?? 'Error')}${response}}`;
  sendRaw(res, status, body, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    ...headers,
  });
}

export function sendError(res: Response, err: ApiError): void {
  const headers: Record<string, string> = {};
  if (err.retryAfterSeconds !== undefined) headers['Retry-After'] = String(err.retryAfterSeconds);
  // An unread body is discarded with the connection rather than read to its end.
  if (err.status === 413) headers.Connection = 'close';
  writeEnvelope(res, err.status, err.codeAsText ? String(err.status) : err.status, JSON.stringify(err.message), headers);
}

/** How long a socket answered directly may take to hand its answer to the peer before it is destroyed. */
const SOCKET_ANSWER_LINGER_MS = 1000;

/** For what restify never sees (malformed HTTP, a timeout): written to the socket, then destroyed. */
export function sendEnvelopeOnSocket(socket: Duplex, err: ApiError, headers: Readonly<Record<string, string>>): void {
  // A peer that resets mid-write must not become an unhandled 'error' that ends the process.
  socket.on('error', () => socket.destroy());
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = errorBody(err);
  socket.end([
    `HTTP/1.1 ${err.status} ${TITLES[err.status]}`,
    ...Object.entries(closingHeaders(body, headers)).map(([name, value]) => `${name}: ${value}`),
    '',
    body,
  ].join('\r\n'));
  // end() waits for the peer to close its side; one that never does would hold the descriptor.
  setTimeout(() => socket.destroy(), SOCKET_ANSWER_LINGER_MS).unref();
}

/** For a request restify cannot take: on its response, so it keeps its place among pipelined answers. */
export function sendEnvelopeBeforeRestify(res: ServerResponse, err: ApiError, headers: Readonly<Record<string, string>>): void {
  const body = errorBody(err);
  res.writeHead(err.status, TITLES[err.status], closingHeaders(body, headers));
  res.end(body);
}

const errorBody = (err: ApiError) => JSON.stringify({ code: err.status, title: TITLES[err.status], response: err.message });

function closingHeaders(body: string, headers: Readonly<Record<string, string>>): Record<string, string> {
  return {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    'X-Request-Id': randomUUID(),
    ...headers,
    Connection: 'close',
  };
}
