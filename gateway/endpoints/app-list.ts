import { listApps } from '../../domain/apps.ts';
import { errors } from '../../domain/errors.ts';
import type { InlineEndpoint } from './endpoint.ts';
import { list, PAGING, ref } from './schemas.ts';

export const appList = {
  method: 'GET',
  path: '/v1/app/list',
  scope: 'app:read',
  summary: "The project's own apps that are not deleted, newest first.",
  runs: 'inline',
  request: { query: PAGING },
  success: { status: 200, schema: list(ref('AppListEntry')) },
  errors: [errors.limit, errors.offset],
  handler: listApps,
} as const satisfies InlineEndpoint;
