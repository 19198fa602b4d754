import { errors } from '../../domain/errors.ts';
import { DEFAULT_GRACE_S, MAX_GRACE_S, rollKey } from '../../domain/key-roll.ts';
import type { PoolEndpoint } from './endpoint.ts';
import { ref } from './schemas.ts';

export const keyRoll = {
  method: 'POST',
  path: '/v1/key/{key_id}/roll',
  scope: 'key:write',
  summary: 'Replaces a key: a new key with its name, scope, expiry and rate limit (the secret, `key`, in this answer only); the old key stops working after `grace_s` seconds.',
  description: 'The old key\'s `expires_at` becomes the earlier of its own and now + `grace_s`; `grace_s` 0 revokes it at once (not the key making the call). The new key is held to what the caller may create: a scope outside the caller\'s own, a life longer than its own, or a rate limit looser than its own, is refused.',
  runs: 'pool',
  request: {
    params: { key_id: { type: 'string', description: 'papi_…, or `current` for the key making the call.' } },
    body: {
      type: 'object',
      properties: {
        grace_s: {
          type: ['integer', 'null'], minimum: 0, maximum: MAX_GRACE_S, default: DEFAULT_GRACE_S,
          description: 'Seconds the old key keeps working; absent or null for the default (a day).',
        },
      },
    },
  },
  success: { status: 201, schema: ref('ApiKeyWithSecret') },
  errors: [errors.graceS, errors.revokeCurrent, errors.keyNotFound, errors.rollExpired, errors.scopeWider, errors.outlivesCaller, errors.rateLimitLooser],
  handler: rollKey,
} as const satisfies PoolEndpoint;
