// The gateway's steps on their own, with a fake request, response and next (as restify tests its
// plugins): each refuses by next(err) with the error table's error, or goes on by next(); the one
// error path (refusals.ts, run by steps.ts) writes the refusal's envelope once and ends the chain,
// after the key check for a caller known from memory. No service, no database: a step that would
// reach the database here fails its test.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type pg from 'pg';
import type { Response } from 'restify';
import { ApiError, errors } from '../../domain/errors.ts';
import type { CallerKey } from '../../domain/requests.ts';
import type { LanedDatabase } from '../../lib/lanes.ts';
import { createLogger } from '../../lib/log.ts';
import { authenticate } from '../../gateway/authenticate.ts';
import { bodyLimit } from '../../gateway/body-limit.ts';
import { KnownKeys } from '../../gateway/known-keys.ts';
import { acceptedMethods } from '../../gateway/method.ts';
import { createRefusals } from '../../gateway/refusals.ts';
import { requireScope } from '../../gateway/scope.ts';
import { inSequence } from '../../gateway/steps.ts';
import type { GatewayRequest, Handler } from '../../gateway/types.ts';

const log = createLogger('silent', 'steps-unit-test', 2);

interface Sent { status: number; body: string; headers: Record<string, string> }

function fakeResponse(): { res: Response; sent: Sent[]; headers: Map<string, string> } {
  const sent: Sent[] = [];
  const headers = new Map<string, string>();
  const res = {
    headersSent: false,
    setHeader: (name: string, value: string) => headers.set(name, value),
    sendRaw: (status: number, body: string, more: Record<string, string>) => sent.push({ status, body, headers: more }),
  } as unknown as Response;
  return { res, sent, headers };
}

interface RequestFields {
  method?: string;
  url?: string;
  path?: string;
  headers?: Record<string, string>;
  caller?: CallerKey;
  callerChecked?: boolean;
}

function fakeRequest({ path = '/v1/key', ...fields }: RequestFields): GatewayRequest {
  return { method: 'GET', url: path, headers: {}, getPath: () => path, ...fields } as unknown as GatewayRequest;
}

/** A pool that must not be used: these steps answer without the database. */
const noDatabase = { query: () => assert.fail('the database was queried') } as unknown as LanedDatabase;

/** What a step passed to next: undefined (go on), false, or the error. */
function nextOf(step: Handler, req: GatewayRequest, res: Response): Promise<false | Error | undefined> {
  return new Promise((resolve) => step(req, res, resolve));
}

function assertApiError(actual: unknown, expected: ApiError): void {
  assert.ok(actual instanceof ApiError, `an ApiError, not ${String(actual)}`);
  assert.deepEqual({ status: actual.status, message: actual.message, codeAsText: actual.codeAsText },
    { status: expected.status, message: expected.message, codeAsText: expected.codeAsText });
}

const caller: CallerKey = {
  id: 'papi_0123456789abcdef0123', project_id: 'proj_0123456789abcdef0123', scope: ['key:read'],
} as CallerKey;

test('a method never accepted is refused 405 with the methods that are, any other goes on', async () => {
  const { res, headers } = fakeResponse();
  assertApiError(await nextOf(acceptedMethods(), fakeRequest({ method: 'TRACE' }), res), errors.methodNotAllowed());
  assert.equal(headers.get('Allow'), 'GET, POST, PATCH, DELETE, HEAD, OPTIONS');
  assert.equal(await nextOf(acceptedMethods(), fakeRequest({ method: 'PATCH' }), fakeResponse().res), undefined);
});

test('a request target that is not a path is the gateway\'s 404, its code a string', async () => {
  const refused = await nextOf(acceptedMethods(), fakeRequest({ method: 'OPTIONS', url: '*' }), fakeResponse().res);
  assertApiError(refused, errors.gatewayNotFound());
  assert.equal((refused as ApiError).codeAsText, true);
});

test('a body declared over the limit is refused 413 before a byte is read; none at all goes on, empty', async () => {
  const big = fakeRequest({ method: 'POST', headers: { 'content-length': '200001' } });
  assertApiError(await nextOf(bodyLimit(), big, fakeResponse().res), errors.bodyTooLarge());
  const none = fakeRequest({ method: 'POST' });
  assert.equal(await nextOf(bodyLimit(), none, fakeResponse().res), undefined);
  assert.deepEqual(none.rawBody, Buffer.alloc(0));
});

test('the scope: held goes on, missing is refused with the scope named', async () => {
  assert.equal(await nextOf(requireScope('key:read'), fakeRequest({ caller }), fakeResponse().res), undefined);
  assertApiError(await nextOf(requireScope('app:write'), fakeRequest({ caller }), fakeResponse().res), errors.missingScope('app:write'));
});

test('no bearer is 401, a bearer not of a secret\'s shape the unknown key\'s 403, neither looked up', async () => {
  const step = authenticate(noDatabase, new KnownKeys(noDatabase, 10), log, 1000, 0);
  assertApiError(await nextOf(step, fakeRequest({}), fakeResponse().res), errors.noKey());
  const basic = fakeRequest({ headers: { authorization: 'Basic dXNlcjpwYXNz' } });
  assertApiError(await nextOf(step, basic, fakeResponse().res), errors.noKey());
  const wrongShape = fakeRequest({ headers: { authorization: 'Bearer sk-project-short' } });
  assertApiError(await nextOf(step, wrongShape, fakeResponse().res), errors.keyRefused());
  assert.equal(await nextOf(step, fakeRequest({ path: '/healthz' }), fakeResponse().res), undefined);
});

test('a step\'s refusal is written once, in the envelope, and the steps after it do not run', async () => {
  const { res, sent } = fakeResponse();
  let after = false;
  const refuse: Handler = (_req, _res, next) => next(errors.noKey());
  const later: Handler = (_req, _res, next) => { after = true; next(); };
  const ended = await nextOf(inSequence([refuse, later], createRefusals(log)), fakeRequest({}), res);
  assert.equal(ended, false);
  assert.equal(after, false);
  assert.deepEqual(sent.map(({ status, body }) => ({ status, body })), [
    { status: 401, body: '{"code":401,"title":"Unauthorized","response":"No valid API key provided."}' },
  ]);
});

test('for a caller known from memory, the refusal waits for the key\'s check, and a refused key answers as refused', async () => {
  const checks: unknown[] = [];
  const pool = { query: async (config: pg.QueryConfig) => { checks.push(config.values); return { rows: [{ key_check: null }] }; } } as unknown as LanedDatabase;
  const known = new KnownKeys(pool, 10);
  const { res, sent } = fakeResponse();
  const req = fakeRequest({ caller, callerChecked: false });
  const ended = await nextOf(inSequence([requireScope('app:write')], createRefusals(log, known)), req, res);
  assert.equal(ended, false);
  assert.deepEqual(checks, [[caller.id, caller.project_id]], 'one check of the caller\'s key');
  assert.deepEqual(sent.map(({ status, body }) => ({ status, body })), [
    { status: 403, body: `{"code":403,"title":"Forbidden","response":${JSON.stringify(errors.keyRefused().message)}}` },
  ]);
});

test('for a caller looked up by this request, the refusal is answered at once, unchecked again', async () => {
  const { res, sent } = fakeResponse();
  const req = fakeRequest({ caller, callerChecked: true });
  await nextOf(inSequence([requireScope('app:write')], createRefusals(log, new KnownKeys(noDatabase, 10))), req, res);
  assert.deepEqual(sent.map(({ status, body }) => ({ status, body })), [
    { status: 403, body: `{"code":403,"title":"Forbidden","response":${JSON.stringify(errors.missingScope('app:write').message)}}` },
  ]);
});
