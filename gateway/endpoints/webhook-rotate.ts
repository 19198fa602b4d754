import { errors } from '../../domain/errors.ts';
import { rotateWebhookSecret } from '../../domain/webhooks.ts';
import type { PoolEndpoint } from './endpoint.ts';
import { ref } from './schemas.ts';
import { WEBHOOK_ID } from './webhook-get.ts';

export const webhookRotate = {
  method: 'POST',
  path: '/v1/webhook/{webhook_id}/secret',
  scope: 'webhook:write',
  summary: 'Rotates the signing secret; the new one is in this answer only.',
  description: 'For 24 hours deliveries carry a signature under the old secret too, space-separated in `webhook-signature`.',
  runs: 'pool',
  request: { params: WEBHOOK_ID },
  success: { status: 200, schema: ref('WebhookEndpointWithSecret') },
  errors: [errors.webhookNotFound],
  handler: rotateWebhookSecret,
} as const satisfies PoolEndpoint;
