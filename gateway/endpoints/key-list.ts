import { errors } from '../../domain/errors.ts';
import { listKeys } from '../../domain/keys.ts';
import type { InlineEndpoint } from './endpoint.ts';
import { list, PAGING, ref } from './schemas.ts';

export const keyList = {
  method: 'GET',
  path: '/v1/key',
  scope: 'key:read',
  summary: "The project's keys, newest first (revoked keys are not listed).",
  runs: 'inline',
  request: { query: PAGING },
  success: { status: 200, schema: list(ref('ApiKey')) },
  errors: [errors.limit, errors.offset],
  handler: listKeys,
} as const satisfies InlineEndpoint;
