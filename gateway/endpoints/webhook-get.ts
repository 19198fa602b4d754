import { errors } from '../../domain/errors.ts';
import { getWebhook } from '../../domain/webhooks.ts';
import type { InlineEndpoint } from './endpoint.ts';
import { ref } from './schemas.ts';

export const WEBHOOK_ID = { webhook_id: { type: 'string', description: 'whep_…' } };

export const webhookGet = {
  method: 'GET',
  path: '/v1/webhook/{webhook_id}',
  scope: 'webhook:read',
  summary: 'One webhook endpoint of the project.',
  runs: 'inline',
  request: { params: WEBHOOK_ID },
  success: { status: 200, schema: ref('WebhookEndpoint') },
  errors: [errors.webhookNotFound],
  handler: getWebhook,
} as const satisfies InlineEndpoint;
