import { errors } from '../../domain/errors.ts';
import { EVENT_TYPES } from '../../domain/jobs.ts';
import { createWebhook } from '../../domain/webhooks.ts';
import type { PoolEndpoint } from './endpoint.ts';
import { NON_BLANK, ref } from './schemas.ts';

export const UNKNOWN_TYPE = { status: 422, pattern: '^Unknown event type: [\\s\\S]*\\.$', example: 'Unknown event type: key.renamed.' };

export const webhookCreate = {
  method: 'POST',
  path: '/v1/webhook',
  scope: 'webhook:write',
  summary: 'Creates a webhook endpoint; its signing secret is in this answer only.',
  description: 'Every event written from now on whose type `types` names (empty: every type) is POSTed to `url`, signed per Standard Webhooks (docs/webhooks.md).',
  runs: 'pool',
  request: {
    body: {
      type: 'object',
      required: ['url'],
      properties: {
        url: { type: 'string', minLength: 1, maxLength: 2000, pattern: NON_BLANK, description: 'An https URL, not naming or resolving to a private or loopback address.' },
        description: { type: ['string', 'null'], maxLength: 200, default: '' },
        types: { type: ['array', 'null'], items: { enum: [...EVENT_TYPES] }, default: [] },
      },
    },
  },
  success: { status: 201, schema: ref('WebhookEndpointWithSecret') },
  errors: [
    errors.webhookUrlRequired, errors.webhookUrlHttps, errors.webhookUrlPrivate, errors.webhookDescriptionType,
    errors.webhookDescriptionLength, errors.webhookTypesNotArray, UNKNOWN_TYPE,
  ],
  handler: createWebhook,
} as const satisfies PoolEndpoint;
