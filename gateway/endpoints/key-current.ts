import { currentKey } from '../../domain/keys.ts';
import type { InlineEndpoint } from './endpoint.ts';
import { ref } from './schemas.ts';

export const keyCurrent = {
  method: 'GET',
  path: '/v1/key/current',
  scope: 'key:read',
  summary: 'The key making the call (`current` is reserved in the identifier position).',
  runs: 'inline',
  success: { status: 200, schema: ref('ApiKey') },
  errors: [],
  handler: currentKey,
} as const satisfies InlineEndpoint;
