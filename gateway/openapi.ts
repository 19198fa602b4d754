// The OpenAPI 3.1 document, derived from the endpoint registry: every endpoint (the reserved ones
// too), the envelope around every answer, every status each can give with the contract's exact
// messages, the bearer scheme and the scope each operation needs. Served at GET /openapi.json
// and committed at docs/openapi.json (`npm run docs` writes it; a test fails when they differ).
// It lints clean with Redocly's recommended rules (redocly.yaml; test/docs/lint.test.ts).
import { IDEMPOTENT_METHODS } from '../domain/idempotency.ts';
import { ApiError, errors, TITLES } from '../domain/errors.ts';
import type { Endpoint, ErrorDoc, JsonSchema } from './endpoints/endpoint.ts';
import { allEndpoints } from './endpoints/registry.ts';
import { SCHEMAS } from './endpoints/schemas.ts';


/** Messages (exact) and message patterns one status can answer with. */
interface Failures {
  messages: string[];
  patterns: Array<{ pattern: string; example: string }>;
}

function envelope(status: number, response: JsonSchema, code: JsonSchema = { const: status }): JsonSchema {
  return {
    type: 'object',
    properties: { code, title: { const: TITLES[status] }, response },
    required: ['code', 'title', 'response'],
    additionalProperties: false,
  };
}

function failureSchema(failures: Failures): JsonSchema {
  const exact: JsonSchema = failures.messages.length === 1 ? { const: failures.messages[0] } : { enum: failures.messages };
  if (failures.patterns.length === 0) return exact;
  return { anyOf: [...(failures.messages.length ? [exact] : []), ...failures.patterns.map(({ pattern }) => ({ type: 'string', pattern }))] };
}

const RETRY_AFTER = { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } } };
/** On every answer to a key with a rate limit (docs/request-limits.md), whatever its status. */
const RATE_LIMIT_HEADERS = {
  'RateLimit-Policy': { description: 'A limited key\'s limit: `"key";q=<limit>;w=<window_s>`.', schema: { type: 'string' } },
  RateLimit: { description: 'A limited key\'s window: `"key";r=<requests remaining>;t=<seconds until it starts afresh>`.', schema: { type: 'string' } },
};

function jsonResponse(status: number, schema: JsonSchema, description = TITLES[status]!, headers?: object): object {
  return { description, ...(headers ? { headers } : {}), content: { 'application/json': { schema } } };
}

function failureResponse(status: number, failures: Failures): object {
  const example = failures.messages[0] ?? failures.patterns[0]!.example;
  return {
    description: [...failures.messages, ...failures.patterns.map((p) => p.example)].join(' | '),
    ...(status === 429 ? { headers: { ...RETRY_AFTER, ...RATE_LIMIT_HEADERS } } : status === 503 ? { headers: RETRY_AFTER } : {}),
    content: { 'application/json': { schema: envelope(status, failureSchema(failures)), example: { code: status, title: TITLES[status], response: example } } },
  };
}

function add(byStatus: Map<number, Failures>, doc: ErrorDoc): void {
  const entry = typeof doc === 'function' ? { status: doc().status, message: doc().message } : doc;
  let failures = byStatus.get(entry.status);
  if (!failures) byStatus.set(entry.status, failures = { messages: [], patterns: [] });
  if ('message' in entry) {
    if (!failures.messages.includes(entry.message)) failures.messages.push(entry.message);
  } else {
    failures.patterns.push({ pattern: entry.pattern, example: entry.example });
  }
}

/** What every authenticated endpoint can answer besides its own failures (the gateway's checks). */
function sharedFailures(endpoint: Endpoint): ErrorDoc[] {
  const scope = () => errors.missingScope(endpoint.scope);
  return [
    errors.noKey, errors.keyExpired, errors.keyRefused, scope, () => errors.tooManyRefusals(1), () => errors.keyRateLimited(1), errors.bodyTooLarge,
    ...(endpoint.runs !== 'reserved' ? [errors.invalidJson, errors.tooDeep, errors.unstorableText] : []),
    ...(idempotent(endpoint) ? [errors.idempotencyKeyInvalid, errors.idempotencyMismatch, errors.idempotencyInProgress] : []),
    errors.internal, errors.unavailable,
  ];
}

/** An operation that takes an Idempotency-Key: a write that does work (decisions.md, "Idempotent retries"). */
const idempotent = (endpoint: Endpoint) => endpoint.runs === 'pool' && IDEMPOTENT_METHODS.has(endpoint.method);

const IDEMPOTENCY_KEY = {
  name: 'Idempotency-Key', in: 'header', required: false,
  description: 'Makes a retry safe: the first answer is kept 24 hours and replayed (Idempotent-Replayed: true) for the same method, path and body.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
};

function parameters(endpoint: Endpoint): object[] {
  const params = Object.entries(endpoint.request?.params ?? {}).map(([name, schema]) => ({ name, in: 'path', required: true, schema }));
  const query = Object.entries(endpoint.request?.query ?? {}).map(([name, schema]) => ({
    name, in: 'query', required: false, ...(typeof schema.description === 'string' ? { description: schema.description } : {}), schema,
  }));
  const headers = Object.entries(endpoint.runs === 'stream' ? endpoint.headers : {}).map(([name, schema]) => ({
    name, in: 'header', required: false, ...(typeof schema.description === 'string' ? { description: schema.description } : {}), schema,
  }));
  return [...params, ...query, ...headers, ...(idempotent(endpoint) ? [IDEMPOTENCY_KEY] : [])];
}

/** Which failures of one status a shared response of components.responses stands for. */
const signature = (status: number, failures: Failures) => JSON.stringify([status, failures.messages, failures.patterns]);

function operation(name: string, endpoint: Endpoint, shared: Map<string, string>): object {
  const byStatus = new Map<number, Failures>();
  for (const doc of [...endpoint.errors, ...sharedFailures(endpoint)]) add(byStatus, doc);
  const responses: Record<string, object> = {};
  if (endpoint.runs === 'stream') {
    responses[endpoint.success.status] = {
      description: endpoint.success.description,
      content: { 'text/event-stream': { schema: { type: 'string', description: 'id: <sequence>, event: <type name>, data: an Event as one line of JSON' } } },
    };
  } else if (endpoint.runs !== 'reserved') {
    responses[endpoint.success.status] = jsonResponse(endpoint.success.status, envelope(endpoint.success.status, endpoint.success.schema), undefined, RATE_LIMIT_HEADERS);
  }
  for (const status of [...byStatus.keys()].sort((a, b) => a - b)) {
    const failures = byStatus.get(status)!;
    const component = shared.get(signature(status, failures));
    responses[status] = component ? { $ref: `#/components/responses/${component}` } : failureResponse(status, failures);
  }
  const body = endpoint.request?.body;
  return {
    operationId: name,
    summary: endpoint.summary,
    description: `${endpoint.description ? `${endpoint.description}\n\n` : ''}Scope: \`${endpoint.scope}\`.`,
    tags: [endpoint.path.split('/')[2]!],
    security: [{ bearer: [] }],
    'x-scope': endpoint.scope,
    // It has no success to describe; the lint's 2XX rule skips it (redocly.yaml), the typed client leaves it out.
    ...(endpoint.runs === 'reserved' ? { 'x-reserved': true } : {}),
    ...(parameters(endpoint).length ? { parameters: parameters(endpoint) } : {}),
    ...(body ? { requestBody: { required: false, content: { 'application/json': { schema: body } } } } : {}),
    responses,
  };
}

const one = (...errs: Array<() => ApiError>): Failures => ({ messages: errs.map((err) => err().message), patterns: [] });

/** Failures many operations answer alike, each written once in components.responses. */
const SHARED_FAILURES: Record<string, [number, Failures]> = {
  Unauthorized: [401, one(errors.noKey, errors.keyExpired)],
  PayloadTooLarge: [413, one(errors.bodyTooLarge)],
  TooManyRequests: [429, one(() => errors.tooManyRefusals(1), () => errors.keyRateLimited(1))],
  InternalError: [500, one(errors.internal)],
  Unavailable: [503, one(errors.unavailable)],
  InvalidJson: [400, one(errors.invalidJson)],
  UnstorableBody: [422, one(errors.tooDeep, errors.unstorableText)],
  NotImplemented: [501, one(errors.notImplemented)],
};

/**
 * Answers only the gateway gives, before it knows the operation or where there is none (README
 * "Choices"). Written out in `x-gateway-responses` itself: as components, nothing the linter
 * follows would use them.
 */
function gatewayOnlyResponses(): Record<number, object> {
  return {
    301: {
      ...failureResponse(301, one(errors.movedPermanently)),
      headers: { Location: { description: 'The same path and query on the HTTPS origin (PUBLIC_URL).', schema: { type: 'string' } } },
    },
    400: failureResponse(400, one(errors.malformedHttp)),
    403: failureResponse(403, one(errors.keyRefused)),
    404: {
      description: `${errors.gatewayNotFound().message} (an unknown path; \`code\` is the string "404")`,
      content: { 'application/json': { schema: envelope(404, { const: errors.gatewayNotFound().message }, { const: '404' }) } },
    },
    405: failureResponse(405, one(errors.methodNotAllowed)),
    408: failureResponse(408, one(errors.requestTimeout)),
    422: failureResponse(422, one(errors.unprocessable)),
    431: failureResponse(431, one(errors.headersTooLarge)),
    505: failureResponse(505, one(errors.versionNotSupported)),
  };
}

function operationsOutsideV1(): Record<string, object> {
  const open = { security: [], tags: ['operations'] };
  // Any request's body is bounded before its path is known.
  const tooLarge = { 413: { $ref: '#/components/responses/PayloadTooLarge' } };
  return {
    '/healthz': { get: { ...open, operationId: 'healthz', summary: 'The process answers.', responses: {
      200: jsonResponse(200, envelope(200, { type: 'object', properties: { status: { const: 'ok' } }, required: ['status'], additionalProperties: false })),
      ...tooLarge,
    } } },
    '/readyz': { get: { ...open, operationId: 'readyz', summary: 'The process and its database answer.', responses: {
      200: jsonResponse(200, envelope(200, { type: 'object', properties: { status: { const: 'ready' }, database: { const: 'ok' } }, required: ['status', 'database'], additionalProperties: false })),
      ...tooLarge,
      503: { $ref: '#/components/responses/Unavailable' },
    } } },
    '/openapi.json': { get: { ...open, operationId: 'openapi', summary: 'This document, as it is (not in the envelope).', responses: {
      200: { description: 'The OpenAPI 3.1 document.', content: { 'application/json': { schema: {
        type: 'object', properties: { openapi: { type: 'string' }, paths: { type: 'object' } }, required: ['openapi', 'paths'],
      } } } },
      ...tooLarge,
    } } },
    '/.well-known/audit-keys.json': { get: { ...open, operationId: 'auditKeys', summary: 'Every key that has signed an audit checkpoint, as is (not in the envelope).', responses: {
      200: { description: 'The signing keys.', content: { 'application/json': { schema: {
        type: 'object', required: ['keys'], additionalProperties: false,
        properties: { keys: { type: 'array', items: {
          type: 'object', required: ['id', 'algorithm', 'public_key', 'created_at'], additionalProperties: false,
          properties: {
            id: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'Hex SHA-256 of the raw public key: a checkpoint\'s `key_id`.' },
            algorithm: { const: 'ed25519' },
            public_key: { type: 'string', description: 'Base64 of the raw 32-byte Ed25519 public key.' },
            created_at: { type: 'integer', minimum: 0 },
          },
        } } },
      } } } },
      ...tooLarge,
      503: { $ref: '#/components/responses/Unavailable' },
    } } },
  };
}

export function openApiDocument(): Record<string, unknown> {
  const shared = new Map(Object.entries(SHARED_FAILURES).map(([name, [status, failures]]) => [signature(status, failures), name]));
  const paths: Record<string, Record<string, object>> = {};
  for (const [name, endpoint] of allEndpoints()) {
    (paths[endpoint.path] ??= {})[endpoint.method.toLowerCase()] = operation(name, endpoint, shared);
  }
  const byStatus = (name: string) => ({ $ref: `#/components/responses/${name}` });
  return {
    openapi: '3.1.0',
    info: {
      title: 'Project Management Service',
      version: '1.0.0',
      summary: "A project's API keys, the model-backed apps it builds, and the audit trail of every change.",
      description: [
        'Every answer is the envelope `{"code", "title", "response"}`: `response` holds the result, or on failure the message.',
        'Authenticate with `Authorization: Bearer sk-project-…`. Each operation names the scope it needs (`x-scope`).',
        'Failures every operation shares are listed with it; `x-gateway-responses` lists the answers the gateway gives',
        'before an operation is known (plain HTTP, unknown paths and methods, malformed or slow requests).',
      ].join(' '),
      // The project has chosen no licence: none is granted. SPDX's LicenseRef- names one off its list.
      license: { name: 'UNLICENSED', identifier: 'LicenseRef-UNLICENSED' },
    },
    servers: [{ url: 'https://127.0.0.1:8443', description: '`npm start` on this machine' }],
    security: [{ bearer: [] }],
    tags: [
      { name: 'key', description: "The project's API keys." },
      { name: 'app', description: 'Model-backed apps.' },
      { name: 'event', description: 'The audit trail.' },
      { name: 'webhook', description: 'Webhook endpoints: the audit trail pushed to a URL (docs/webhooks.md).' },
      ...['run', 'file', 'team', 'feedback', 'catalog', 'run-usage'].map((name) => ({ name, description: 'Reserved: 501 once authenticated.' })),
      { name: 'operations', description: 'Health and this document; no key needed.' },
    ],
    paths: { ...paths, ...operationsOutsideV1() },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'The key secret, `sk-project-` followed by 43 or more base62 characters.' },
      },
      schemas: SCHEMAS,
      responses: Object.fromEntries(Object.entries(SHARED_FAILURES).map(([name, [status, failures]]) => [name, failureResponse(status, failures)])),
    },
    'x-gateway-responses': {
      ...gatewayOnlyResponses(),
      401: byStatus('Unauthorized'), 413: byStatus('PayloadTooLarge'), 429: byStatus('TooManyRequests'),
      500: byStatus('InternalError'), 503: byStatus('Unavailable'),
    },
  };
}

/** The document's text as served and committed: two-space JSON and a final newline. */
export function openApiText(): string {
  return `${JSON.stringify(openApiDocument(), null, 2)}\n`;
}
