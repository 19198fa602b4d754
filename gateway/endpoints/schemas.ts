// JSON Schemas of what the API answers, shared by the endpoints' declarations. Strict, so a test
// validating a response against the OpenAPI document catches any member the contract does not name.
import { EVENT_TYPES } from '../../domain/jobs.ts';
import { MAX_RATE_LIMIT, MAX_RATE_WINDOW_S } from '../../domain/rate-limit.ts';
import type { JsonSchema } from './endpoint.ts';

export const id = (prefix: string): JsonSchema => ({ type: 'string', pattern: `^${prefix}_[0-9a-f]{20}$` });
const unixSeconds: JsonSchema = { type: 'integer', minimum: 0 };
const nullable = (schema: JsonSchema): JsonSchema => ({ anyOf: [schema, { type: 'null' }] });

function object(properties: Record<string, JsonSchema>, optional: readonly string[] = []): JsonSchema {
  return {
    type: 'object',
    properties,
    required: Object.keys(properties).filter((name) => !optional.includes(name)),
    additionalProperties: false,
  };
}

export const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

export const list = (item: JsonSchema): JsonSchema => object({
  object: { const: 'list' },
  data: { type: 'array', items: item },
  total: { type: 'integer', minimum: 0 },
});

const keyMembers = {
  id: id('papi'),
  object: { const: 'api_key' },
  name: { type: 'string' },
  key_preview: { type: 'string', pattern: '^sk-project-\\.\\.\\..{4}$' },
  scope: { type: 'array', items: { type: 'string' } },
  status: { enum: ['activated', 'expired'] },
  expires_at: nullable(unixSeconds),
  last_used_at: nullable(unixSeconds),
  created_by: id('cons'),
  created_at: unixSeconds,
  updated_at: unixSeconds,
  rate_limit: ref('RateLimit'),
};

const tokens = nullable(object({ input: { type: 'integer' }, output: { type: 'integer' }, total: { type: 'integer' } }));
const appMembers = {
  id: id('mapp'),
  object: { const: 'app' },
  name: { type: 'string' },
  description: { type: 'string' },
  type: { enum: ['private', 'public'] },
  status: { enum: ['draft', 'activated'] },
  model: id('modi'),
  model_library: id('mlyi'),
  created_at: unixSeconds,
  updated_at: unixSeconds,
};

const webhookMembers = {
  id: id('whep'),
  object: { const: 'webhook_endpoint' },
  url: { type: 'string', description: 'An https URL.' },
  description: { type: 'string' },
  types: { type: 'array', items: { enum: [...EVENT_TYPES] }, description: 'The event types sent; empty: every type.' },
  status: { enum: ['enabled', 'disabled'] },
  disabled_reason: { enum: [null, 'gone', 'failing', 'manual'], description: 'Why it is disabled: the receiver answered 410, every attempt failed for 5 days, or a PATCH.' },
  created_at: unixSeconds,
  updated_at: unixSeconds,
};

/** The shared schemas, by name, as the document's components.schemas. */
export const SCHEMAS: Record<string, JsonSchema> = {
  RateLimit: {
    ...nullable(object({
      limit: { type: 'integer', minimum: 1, maximum: MAX_RATE_LIMIT },
      window_s: { type: 'integer', minimum: 1, maximum: MAX_RATE_WINDOW_S },
    })),
    description: 'At most `limit` requests in each window of `window_s` seconds, over every web process; null for none. Fixed when the key is made.',
  },
  ApiKey: object(keyMembers),
  ApiKeyWithSecret: object({ ...keyMembers, key: { type: 'string', pattern: '^sk-project-[0-9A-Za-z]{63}$', description: '43 random base62 characters, the project in 14, then the CRC32 of those 57 as 6 base62 characters (using-the-api.md, "Key secrets").' } }),
  Deleted: object({ deleted: { const: true }, id: { type: 'string' } }),
  AppSummary: object(appMembers),
  AppListEntry: object({
    ...appMembers,
    runs: object({ private: { type: 'integer' }, public: { type: 'integer' } }),
    tokens,
  }),
  App: object({
    ...appMembers,
    logo: { type: 'string', description: 'The logo file (file_…), or an empty string.' },
    data: {
      type: 'array',
      items: object({ id: id('madi'), name: { type: 'string' }, type: id('mdti'), placeholder: { type: 'string' }, required: { type: 'boolean' } }),
    },
    instruction: nullable({ type: 'array', items: object({ id: id('miid'), type: { type: 'string' }, instruction: { type: 'string' } }) }),
    runs: object({ private: { type: 'integer' }, public: { type: 'integer' } }),
    tokens,
  }),
  AppCreated: object({
    id: id('mapp'),
    object: { const: 'app' },
    name: { type: 'string' },
    description: { type: 'string' },
    category: { type: 'string' },
    model: id('modi'),
    model_library: id('mlyi'),
    status: { enum: ['draft', 'activated'] },
    created_at: unixSeconds,
    data: {
      type: 'object',
      propertyNames: { pattern: '^madi_[0-9a-f]{20}$' },
      additionalProperties: object({ type: { type: 'string' }, value: { type: 'string' }, placeholder: { type: 'string' }, required: { type: 'boolean' } }),
    },
    instruction: {
      type: 'object',
      propertyNames: { pattern: '^miid_[0-9a-f]{20}$' },
      additionalProperties: object({ type: { type: 'string' }, instruction: { type: 'string' } }),
    },
  }),
  Event: object({
    id: id('evnt'),
    object: { const: 'event' },
    type: object({
      id: id('evty'),
      name: { enum: [...EVENT_TYPES] },
    }),
    related: object({ table: { enum: ['key', 'app', 'file', 'membership', 'project', 'consumer', 'webhook'] }, id: { type: 'string' } }),
    origin: { enum: ['api', 'workspace', 'system'] },
    ip_address: { type: 'string' },
    details: { type: ['object', 'array'], description: 'Extra context; an empty array when there is none. Never a secret.' },
    created_at: unixSeconds,
    sequence: { type: 'integer', minimum: 1, description: "The project's running number of the event, from 1, no gaps." },
    actor: {
      description: 'Who made the change: the key of an API call, the workspace, or the service itself.',
      oneOf: [
        object({ type: { const: 'key' }, id: nullable(id('papi')) }),
        object({ type: { const: 'workspace' }, id: { type: 'null' } }),
        object({ type: { const: 'system' }, id: { type: 'null' } }),
      ],
    },
    hash: {
      type: 'string',
      pattern: '^[0-9a-f]{64}$',
      description: "Hex SHA-256 of the previous event's hash (64 zeros for sequence 1) followed by this event's RFC 8785 JSON without `hash`.",
    },
  }),
  WebhookEndpoint: object(webhookMembers),
  WebhookEndpointWithSecret: object({
    ...webhookMembers,
    secret: { type: 'string', pattern: '^whsec_[A-Za-z0-9+/]{43}=$', description: 'Shown in this answer only: `whsec_` and the base64 of 32 random bytes.' },
  }),
  WebhookDelivery: object({
    id: id('whda'),
    object: { const: 'webhook_delivery' },
    event: id('evnt'),
    sequence: { type: 'integer', minimum: 1 },
    attempt: { type: 'integer', minimum: 1 },
    status_code: nullable({ type: 'integer' }),
    error: nullable({ type: 'string', description: 'Why no answer came: timeout, connection refused, tls, private address, …' }),
    duration_ms: { type: 'integer', minimum: 0 },
    created_at: unixSeconds,
  }),
  Checkpoint: object({
    object: { const: 'checkpoint' },
    project: id('proj'),
    sequence: { type: 'integer', minimum: 1, description: 'The sequence of the chain head signed.' },
    hash: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'The hash of the event at that sequence.' },
    created_at: unixSeconds,
    key_id: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'Hex SHA-256 of the raw Ed25519 public key that signed.' },
    signature: { type: 'string', description: 'Base64 Ed25519 signature.' },
  }),
};

/** Query parameters of the paged lists. */
export const PAGING = {
  limit: { type: 'integer', minimum: 1, maximum: 100, default: 20, description: 'Page size.' },
  offset: { type: 'integer', minimum: 0, default: 0, description: 'Records to skip, newest first.' },
} as const;

/** Not blank: an unanchored pattern asking for one non-space character (\s is what trim() removes). */
export const NON_BLANK = '\\S';
