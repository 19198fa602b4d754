import { errors } from '../../domain/errors.ts';
import { deleteWebhook } from '../../domain/webhooks.ts';
import type { PoolEndpoint } from './endpoint.ts';
import { ref } from './schemas.ts';
import { WEBHOOK_ID } from './webhook-get.ts';

export const webhookDelete = {
  method: 'DELETE',
  path: '/v1/webhook/{webhook_id}',
  scope: 'webhook:write',
  summary: 'Deletes an endpoint: nothing more is sent to it.',
  runs: 'pool',
  request: { params: WEBHOOK_ID },
  success: { status: 200, schema: ref('Deleted') },
  errors: [errors.webhookNotFound],
  handler: deleteWebhook,
} as const satisfies PoolEndpoint;
