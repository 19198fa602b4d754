import { errors } from '../../domain/errors.ts';
import { getKey } from '../../domain/keys.ts';
import type { InlineEndpoint } from './endpoint.ts';
import { ref } from './schemas.ts';

export const keyGet = {
  method: 'GET',
  path: '/v1/key/{key_id}',
  scope: 'key:read',
  summary: 'One key of the project.',
  runs: 'inline',
  request: { params: { key_id: { type: 'string', description: 'papi_…' } } },
  success: { status: 200, schema: ref('ApiKey') },
  errors: [errors.keyNotFound],
  handler: getKey,
} as const satisfies InlineEndpoint;
