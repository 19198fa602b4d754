import { errors } from '../../domain/errors.ts';
import { replayWebhook } from '../../domain/webhooks.ts';
import type { PoolEndpoint } from './endpoint.ts';
import { WEBHOOK_ID } from './webhook-get.ts';

export const webhookReplay = {
  method: 'POST',
  path: '/v1/webhook/{webhook_id}/replay',
  scope: 'webhook:write',
  summary: 'Sends again every event after sequence `after` that the endpoint\'s types match.',
  description: 'Answers how many events are queued; the worker sends them as it sends the others.',
  runs: 'pool',
  request: {
    params: WEBHOOK_ID,
    body: {
      type: 'object',
      required: ['after'],
      properties: { after: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'A sequence; 0: from the first event.' } },
    },
  },
  success: {
    status: 202,
    schema: { type: 'object', properties: { queued: { type: 'integer', minimum: 0 } }, required: ['queued'], additionalProperties: false },
  },
  errors: [errors.streamAfter, errors.webhookNotFound, errors.webhookReplayDisabled],
  handler: replayWebhook,
} as const satisfies PoolEndpoint;
