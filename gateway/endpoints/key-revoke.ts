import { errors } from '../../domain/errors.ts';
import { revokeKey } from '../../domain/keys.ts';
import type { PoolEndpoint } from './endpoint.ts';
import { ref } from './schemas.ts';

export const keyRevoke = {
  method: 'DELETE',
  path: '/v1/key/{key_id}',
  scope: 'key:write',
  summary: 'Revokes a key at once (not the one making the call).',
  runs: 'pool',
  request: { params: { key_id: { type: 'string', description: 'papi_…' } } },
  success: { status: 200, schema: ref('Deleted') },
  errors: [errors.revokeCurrent, errors.keyNotFound],
  handler: revokeKey,
} as const satisfies PoolEndpoint;
