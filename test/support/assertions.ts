// The envelope every answer is wrapped in, as the contract (api.md) states it: status titles,
// failure messages, and exact assertions on a reply. Written out here on purpose: the tests check
// the service's own table (domain/errors.ts) and so must not import it.
import assert from 'node:assert/strict';
import type { Reply } from './service.ts';

export const TITLES: Readonly<Record<number, string>> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  301: 'Moved Permanently',
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Payload Too Large',
  422: 'Unprocessable entity',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
  505: 'HTTP Version Not Supported',
};

/** Failure messages more than one test file answers to. */
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
  streamsFull: 'Too many event streams are open. Retry later.',
  missingScope: (scope: string) => `The API key is missing the required scope: ${scope}`,
  // api.md names no message for these two; the service's own wording, pinned so it cannot drift.
  methodNotAllowed: 'The request method is not allowed.',
  movedPermanently: 'Use HTTPS: repeat the request at the Location given.',
  keyNotFound: 'API key not found.',
  appNotFound: 'App not found.',
  eventNotFound: 'Event not found.',
  requestTimeout: 'The request took too long to arrive.',
  tooManyRefusals: 'Too many requests with an invalid API key. Retry later.',
  malformedHttp: 'Malformed HTTP request.',
  headersTooLarge: 'Request headers too large.',
  versionNotSupported: 'HTTP version not supported.',
} as const;

/** The whole envelope for `status` around `response`: {code, title, response}. */
export function envelope(status: number, response: unknown): { code: number; title: string | undefined; response: unknown } {
  return { code: status, title: TITLES[status], response };
}

function label(what: string): string {
  return what ? `${what}: ` : '';
}

/** A failure: exact status, and exactly the envelope {code, title, response} with this message. */
export function assertError(reply: Reply, status: number, message: string, what = ''): void {
  assert.equal(reply.status, status, `${label(what)}status (body: ${reply.text})`);
  assert.deepEqual(reply.body, envelope(status, message), `${label(what)}envelope (body: ${reply.text})`);
}

/** A success: exact status, exactly the members code, title and response in that order; returns `response`. */
export function assertSuccess(reply: Reply, status = 200, what = ''): any {
  assert.equal(reply.status, status, `${label(what)}status (body: ${reply.text})`);
  assert.deepEqual(Object.keys(reply.body ?? {}), ['code', 'title', 'response'], `${label(what)}envelope members`);
  assert.equal(reply.body.code, status, `${label(what)}code`);
  assert.equal(reply.body.title, TITLES[status], `${label(what)}title`);
  return reply.body.response;
}
