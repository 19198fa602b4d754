import { errors } from '../../domain/errors.ts';
import { EVENT_TYPES } from '../../domain/jobs.ts';
import { updateWebhook } from '../../domain/webhooks.ts';
import type { PoolEndpoint } from './endpoint.ts';
import { NON_BLANK, ref } from './schemas.ts';
import { UNKNOWN_TYPE } from './webhook-create.ts';
import { WEBHOOK_ID } from './webhook-get.ts';

export const webhookUpdate = {
  method: 'PATCH',
  path: '/v1/webhook/{webhook_id}',
  scope: 'webhook:write',
  summary: 'Changes an endpoint\'s url, description or types, or disables (`status: disabled`) or enables it.',
  description: 'Disabling drops what was waiting for the endpoint; enabled again, it is sent the events written from then on (`replay` sends those in between).',
  runs: 'pool',
  request: {
    params: WEBHOOK_ID,
    body: {
      type: 'object',
      description: 'At least one of url, description, types and status; other members are ignored.',
      anyOf: [{ required: ['url'] }, { required: ['description'] }, { required: ['types'] }, { required: ['status'] }],
      properties: {
        url: { type: 'string', minLength: 1, maxLength: 2000, pattern: NON_BLANK },
        description: { type: 'string', maxLength: 200 },
        types: { type: 'array', items: { enum: [...EVENT_TYPES] } },
        status: { enum: ['enabled', 'disabled'] },
      },
    },
  },
  success: { status: 200, schema: ref('WebhookEndpoint') },
  errors: [
    errors.webhookNotFound, errors.webhookNothingToUpdate, errors.webhookUrlRequired, errors.webhookUrlHttps, errors.webhookUrlPrivate,
    errors.webhookDescriptionType, errors.webhookDescriptionLength, errors.webhookTypesNotArray, UNKNOWN_TYPE, errors.webhookStatus,
  ],
  handler: updateWebhook,
} as const satisfies PoolEndpoint;
