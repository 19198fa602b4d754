// The one envelope writer: every response, success or failure, leaves through here.
import type { Response } from 'restify';
import { ApiError, RETRY_AFTER_SECONDS, TITLES } from '../domain/errors.ts';

export function sendEnvelope(res: Response, status: number, response: unknown, headers: Record<string, string> = {}): void {
  writeEnvelope(res, status, status, response, headers);
}

function writeEnvelope(res: Response, status: number, code: number | string, response: unknown, headers: Record<string, string>): void {
  const body = JSON.stringify({ code, title: TITLES[status] ?? 'Error', response });
  res.sendRaw(status, body, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    ...headers,
  });
}

export function sendError(res: Response, err: ApiError): void {
  const headers: Record<string, string> = {};
  if (err.status === 503) headers['Retry-After'] = String(RETRY_AFTER_SECONDS);
  // An unread body is discarded with the connection rather than read to its end.
  if (err.status === 413) headers.Connection = 'close';
  sendEnvelope(res, err.status, err.message, headers);
}

/** The gateway's unknown-path answer: the one envelope whose `code` is a string. */
export function sendGatewayNotFound(res: Response): void {
  writeEnvelope(res, 404, '404', 'The requested resource was not found.', {});
}
