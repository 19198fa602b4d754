import { updateApp } from '../../domain/apps.ts';
import { errors } from '../../domain/errors.ts';
import type { PoolEndpoint } from './endpoint.ts';
import { NON_BLANK, ref } from './schemas.ts';

export const appUpdate = {
  method: 'PATCH',
  path: '/v1/app/detail/{app_id}',
  scope: 'app:write',
  summary: 'Renames, re-describes, publishes (`type: public`) or withdraws (`type: private`) an app.',
  runs: 'pool',
  request: {
    params: { app_id: { type: 'string', description: 'mapp_…' } },
    body: {
      type: 'object',
      description: 'At least one of name, description and type; other members are ignored.',
      anyOf: [{ required: ['name'] }, { required: ['description'] }, { required: ['type'] }],
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 200, pattern: NON_BLANK },
        description: { type: 'string', minLength: 1, maxLength: 2000, pattern: NON_BLANK },
        type: { enum: ['private', 'public'] },
      },
    },
  },
  success: { status: 200, schema: ref('AppSummary') },
  errors: [
    errors.appNotFound, errors.nothingToUpdate, errors.appNameType, errors.appNameEmpty, errors.appNameLength,
    errors.appDescriptionType, errors.appDescriptionEmpty, errors.appDescriptionLength, errors.appType,
    errors.publishNeedsActivation, errors.publishNeedsImageLogo,
  ],
  handler: updateApp,
} as const satisfies PoolEndpoint;
