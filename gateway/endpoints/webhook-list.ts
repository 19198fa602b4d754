import { errors } from '../../domain/errors.ts';
import { listWebhooks } from '../../domain/webhooks.ts';
import type { InlineEndpoint } from './endpoint.ts';
import { list, PAGING, ref } from './schemas.ts';

export const webhookList = {
  method: 'GET',
  path: '/v1/webhook',
  scope: 'webhook:read',
  summary: "The project's webhook endpoints, newest first.",
  runs: 'inline',
  request: { query: PAGING },
  success: { status: 200, schema: list(ref('WebhookEndpoint')) },
  errors: [errors.limit, errors.offset],
  handler: listWebhooks,
} as const satisfies InlineEndpoint;
