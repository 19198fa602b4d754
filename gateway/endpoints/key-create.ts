import { errors } from '../../domain/errors.ts';
import { createKey, LATEST_UNIX_SECONDS } from '../../domain/keys.ts';
import { KNOWN_SCOPES } from '../../domain/scopes.ts';
import type { PoolEndpoint } from './endpoint.ts';
import { NON_BLANK, ref } from './schemas.ts';

export const keyCreate = {
  method: 'POST',
  path: '/v1/key',
  scope: 'key:write',
  summary: 'Creates a key for the same project; the secret (`key`) is in this answer only.',
  description: 'A new key never holds more than the creating key: a scope outside the caller\'s own, or a life longer than its own (an `expires_at` later than the caller\'s, or none when the caller has one), or a looser `rate_limit` (none, more a window, or more a second), is refused, never trimmed.',
  runs: 'pool',
  request: {
    body: {
      type: 'object',
      required: ['name'],
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 200, pattern: NON_BLANK },
        scope: { type: ['array', 'null'], items: { enum: KNOWN_SCOPES }, minItems: 1, default: ['*'], description: '`*` or `<resource>:<action>` (action read, write or *).' },
        expires_at: {
          type: ['integer', 'null'], minimum: 0, maximum: LATEST_UNIX_SECONDS,
          description: 'Unix seconds in the future (a time already past is refused); 0, null or absent for never.',
        },
        rate_limit: {
          ...ref('RateLimit'),
          description: 'Absent or null: the project\'s plan default (none unless the workspace set one). Never looser than the calling key\'s own.',
        },
      },
    },
  },
  success: { status: 201, schema: ref('ApiKeyWithSecret') },
  errors: [
    errors.keyNameRequired, errors.keyNameType, errors.keyNameLength, errors.scopeNotArray, errors.scopeEmpty,
    { status: 422, pattern: '^Unknown scope: [\\s\\S]*\\.$', example: 'Unknown scope: key:delete.' },
    errors.scopeWider, errors.outlivesCaller, errors.expiresAt, errors.rateLimitInvalid, errors.rateLimitLooser,
  ],
  handler: createKey,
} as const satisfies PoolEndpoint;
