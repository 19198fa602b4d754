import { errors } from '../../domain/errors.ts';
import { parseStreamQuery } from '../../domain/events.ts';
import { EVENT_TYPES } from '../../domain/jobs.ts';
import type { StreamEndpoint } from './endpoint.ts';

export const eventStream = {
  method: 'GET',
  path: '/v1/event/stream',
  scope: 'event:read',
  summary: "Follows the project's audit trail live, as Server-Sent Events (`stream` is reserved in the identifier position).",
  description: [
    'Each event: `id: <sequence>`, `event: <type name>`, `data: <the event object as JSON, one line>`; a comment line at least',
    'every 15 s. Resume with `Last-Event-ID: <n>` or `?after=<n>`: every event with a sequence above n, oldest first, then live',
    '(`0`: from the first). Neither: the events recorded after the stream opened. Each matching event exactly once, in',
    'sequence order. The stream ends within 2 s when its key is revoked or expires or its project or consumer is disabled,',
    'and is closed when its reader falls too far behind (resume by the last id). 503 when the process holds all the streams it may.',
  ].join(' '),
  runs: 'stream',
  request: {
    query: {
      after: { type: 'integer', minimum: 0, description: 'Resume after this sequence (Last-Event-ID wins when both are sent).' },
      type: { type: 'array', items: { enum: [...EVENT_TYPES] }, description: 'Only these event types (repeat the parameter).' },
      actor: { type: 'array', items: { type: 'string' }, description: 'Only the events of changes made with these keys (papi_…; repeat the parameter).' },
    },
  },
  headers: { 'Last-Event-ID': { type: 'integer', minimum: 0, description: 'Resume after this sequence (sent by EventSource on reconnect).' } },
  success: { status: 200, description: 'text/event-stream: one Server-Sent Event per event.' },
  errors: [errors.streamAfter, errors.streamsFull, { status: 422, pattern: '^Unknown event type: [\\s\\S]*\\.$', example: 'Unknown event type: key.renamed.' }],
  parse: (req, headers) => parseStreamQuery(req.query, headers['last-event-id']),
} as const satisfies StreamEndpoint;
