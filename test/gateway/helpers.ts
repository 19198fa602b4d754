// Shared assertions and raw-socket helpers for the gateway tests (not a test file itself).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { Reply, TestService } from '../support/service.ts';

export const MESSAGES = {
  noKey: 'No valid API key provided.',
  expired: 'The API key has expired.',
  refused: "The API key doesn't have permissions to perform the request.",
  tooLarge: 'Request body too large.',
  unprocessable: 'The parameters were valid but the request failed.',
  gatewayNotFound: 'The requested resource was not found.',
  invalidJson: 'Invalid JSON.',
  internal: 'Internal server error.',
  notImplemented: 'This endpoint is not implemented yet.',
  unavailable: 'Service temporarily unavailable. Please retry.',
  missingScope: (scope: string) => `The API key is missing the required scope: ${scope}`,
  // api.md names no message for these two; the service's own wording, pinned so it cannot drift.
  methodNotAllowed: 'The request method is not allowed.',
  movedPermanently: 'Use HTTPS: repeat the request at the Location given.',
} as const;

const TITLES: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  301: 'Moved Permanently',
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  413: 'Payload Too Large',
  422: 'Unprocessable entity',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
};

/** The reply is exactly the envelope {code, title, response} for a failure with this message. */
export function assertError(reply: Reply, status: number, message: string, what = ''): void {
  const label = what ? `${what}: ` : '';
  assert.equal(reply.status, status, `${label}status (body: ${reply.text})`);
  assert.deepEqual(reply.body, { code: status, title: TITLES[status], response: message }, `${label}envelope`);
  assertRequestId(reply, what);
}

/** The gateway's unknown-path answer, whose `code` member is the string "404". */
export function assertGatewayNotFound(reply: Reply, what = ''): void {
  const label = what ? `${what}: ` : '';
  assert.equal(reply.status, 404, `${label}status (body: ${reply.text})`);
  assert.deepEqual(reply.body, { code: '404', title: 'Not Found', response: MESSAGES.gatewayNotFound }, `${label}envelope`);
  assert.equal(typeof reply.body.code, 'string', `${label}code is a string`);
  assertRequestId(reply, what);
}

/** A success envelope: exactly code, title and response, and the status it names. */
export function assertSuccess(reply: Reply, status: 200 | 201, what = ''): void {
  const label = what ? `${what}: ` : '';
  assert.equal(reply.status, status, `${label}status (body: ${reply.text})`);
  assert.deepEqual(Object.keys(reply.body ?? {}), ['code', 'title', 'response'], `${label}envelope members`);
  assert.equal(reply.body.code, status, `${label}code`);
  assert.equal(reply.body.title, TITLES[status], `${label}title`);
  assertRequestId(reply, what);
}

export function assertRequestId(reply: Reply, what = ''): string {
  const id = reply.headers['x-request-id'];
  assert.equal(typeof id, 'string', `${what ? `${what}: ` : ''}X-Request-Id header present`);
  assert.ok((id as string).length > 0, 'X-Request-Id is not empty');
  return id as string;
}

export interface CreatedKey {
  id: string;
  key: string;
}

/** A key of the caller's project made through POST /v1/key. */
export async function createKey(service: TestService, callerKey: string, body: Record<string, unknown>): Promise<CreatedKey> {
  const reply = await service.request('POST', '/v1/key', { key: callerKey, body });
  assert.equal(reply.status, 201, `creating a key: ${reply.text}`);
  return { id: reply.body.response.id, key: reply.body.response.key };
}

export interface RawOptions {
  method: string;
  path: string;
  headers?: Record<string, string | number>;
  /** Writes (part of) the body; the request is ended only if this returns true. */
  write?: (req: http.ClientRequest) => boolean;
  /** Plain HTTP to the redirect listener instead of HTTPS. */
  plain?: boolean;
  timeoutMs?: number;
}

/**
 * One request on a connection of its own, where the test controls how much of the body is sent.
 * Resolves with the reply as soon as the service answers, whether or not the body was finished;
 * rejects when no answer comes within timeoutMs (a service waiting for a body it should not read).
 */
export function rawRequest(service: TestService, options: RawOptions): Promise<Reply> {
  const timeoutMs = options.timeoutMs ?? 5000;
  const url = new URL(options.path, options.plain ? service.httpUrl : service.baseUrl);
  const req = options.plain
    ? http.request(url, { method: options.method, headers: options.headers, agent: false })
    : https.request(url, { method: options.method, headers: options.headers, agent: false, ca: readFileSync(service.config.tlsCertFile!),
      // The certificate names localhost; a test's own Host header must not change what is verified.
      servername: 'localhost' });
  return new Promise<Reply>((resolve, reject) => {
    let answered = false;
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no answer to ${options.method} ${options.path} within ${timeoutMs} ms`));
    }, timeoutMs);
    req.on('response', (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        clearTimeout(timer);
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        try { body = JSON.parse(text); } catch { body = undefined; }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
        req.destroy();
      });
      res.on('error', () => {});
    });
    req.on('error', (err) => {
      // A write cut short after the answer arrived is expected: the service stopped reading.
      if (answered) return;
      clearTimeout(timer);
      reject(err);
    });
    const end = options.write ? options.write(req) : true;
    if (end) req.end();
    else req.flushHeaders();
  });
}

/** A JSON object body of exactly `size` bytes that POST /v1/key accepts (an unknown member pads it). */
export function paddedKeyBody(size: number, name = 'padded'): Buffer {
  const head = `{"name":"${name}","pad":"`;
  const tail = '"}';
  const padding = size - head.length - tail.length;
  assert.ok(padding >= 0);
  const body = Buffer.from(head + 'a'.repeat(padding) + tail);
  assert.equal(body.length, size);
  return body;
}
