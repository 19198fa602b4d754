import { getCheckpoint } from '../../domain/checkpoints.ts';
import { errors } from '../../domain/errors.ts';
import type { InlineEndpoint } from './endpoint.ts';
import { ref } from './schemas.ts';

export const eventCheckpoint = {
  method: 'GET',
  path: '/v1/event/checkpoint',
  scope: 'event:read',
  summary: "The project's latest signed checkpoint of its audit trail (`checkpoint` is reserved in the identifier position).",
  description: [
    'An Ed25519 signature over the UTF-8 bytes of `pms-audit-checkpoint/v1\\n<project>\\n<sequence>\\n<hash>\\n<created_at>\\n`,',
    'by the key `key_id` names in `/.well-known/audit-keys.json`. `?sequence=n`: the checkpoint made at exactly that sequence.',
  ].join(' '),
  runs: 'inline',
  request: { query: { sequence: { type: 'integer', minimum: 1, description: 'The checkpoint made at exactly this sequence.' } } },
  success: { status: 200, schema: ref('Checkpoint') },
  errors: [errors.checkpointNotFound, errors.checkpointSequence],
  handler: getCheckpoint,
} as const satisfies InlineEndpoint;
