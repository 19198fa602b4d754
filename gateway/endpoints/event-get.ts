import { errors } from '../../domain/errors.ts';
import { getEvent } from '../../domain/events.ts';
import type { InlineEndpoint } from './endpoint.ts';
import { ref } from './schemas.ts';

export const eventGet = {
  method: 'GET',
  path: '/v1/event/{event_id}',
  scope: 'event:read',
  summary: 'One event of the project.',
  runs: 'inline',
  request: { params: { event_id: { type: 'string', description: 'evnt_…' } } },
  success: { status: 200, schema: ref('Event') },
  errors: [errors.eventNotFound],
  handler: getEvent,
} as const satisfies InlineEndpoint;
