import { listEvents } from '../../domain/events.ts';
import type { InlineEndpoint } from './endpoint.ts';
import { list, ref } from './schemas.ts';

export const eventList = {
  method: 'GET',
  path: '/v1/event',
  scope: 'event:read',
  summary: "The project's newest 100 events, newest first, with the total count.",
  runs: 'inline',
  success: { status: 200, schema: list(ref('Event')) },
  errors: [],
  handler: listEvents,
} as const satisfies InlineEndpoint;
