import { errors } from '../../domain/errors.ts';
import { listWebhookDeliveries } from '../../domain/webhooks.ts';
import type { InlineEndpoint } from './endpoint.ts';
import { list, PAGING, ref } from './schemas.ts';
import { WEBHOOK_ID } from './webhook-get.ts';

export const webhookDeliveries = {
  method: 'GET',
  path: '/v1/webhook/{webhook_id}/delivery',
  scope: 'webhook:read',
  summary: "The endpoint's delivery log: every attempt, newest first.",
  runs: 'inline',
  request: { params: WEBHOOK_ID, query: PAGING },
  success: { status: 200, schema: list(ref('WebhookDelivery')) },
  errors: [errors.webhookNotFound, errors.limit, errors.offset],
  handler: listWebhookDeliveries,
} as const satisfies InlineEndpoint;
