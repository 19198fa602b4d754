import { deleteApp } from '../../domain/apps.ts';
import { errors } from '../../domain/errors.ts';
import type { PoolEndpoint } from './endpoint.ts';
import { ref } from './schemas.ts';

export const appDelete = {
  method: 'DELETE',
  path: '/v1/app/detail/{app_id}',
  scope: 'app:write',
  summary: 'Deletes an app (soft: it answers 404 everywhere afterwards).',
  runs: 'pool',
  request: { params: { app_id: { type: 'string', description: 'mapp_…' } } },
  success: { status: 200, schema: ref('Deleted') },
  errors: [errors.appNotFound],
  handler: deleteApp,
} as const satisfies PoolEndpoint;
