import { getApp } from '../../domain/apps.ts';
import { errors } from '../../domain/errors.ts';
import type { InlineEndpoint } from './endpoint.ts';
import { ref } from './schemas.ts';

export const appGet = {
  method: 'GET',
  path: '/v1/app/detail/{app_id}',
  scope: 'app:read',
  summary: "One app: the project's own in any status, or any activated public app (then `instruction` is null).",
  runs: 'inline',
  request: { params: { app_id: { type: 'string', description: 'mapp_…' } } },
  success: { status: 200, schema: ref('App') },
  errors: [errors.appNotFound],
  handler: getApp,
} as const satisfies InlineEndpoint;
