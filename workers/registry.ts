// Every job queue, by name. A queue named in domain/jobs.ts without a module here fails the type check.
import type { QueueName } from '../domain/jobs.ts';
import { appTotals } from './app-totals.ts';
import { auditCheckpoint } from './audit-checkpoint.ts';
import { auditDrain } from './audit-drain.ts';
import { auditWrite } from './audit-write.ts';
import { idempotencyPurge } from './idempotency-purge.ts';
import { keyExpire } from './key-expire.ts';
import type { JobQueue } from './queue.ts';
import { runFinished } from './run-finished.ts';
import { webhookDeliver } from './webhook-deliver.ts';

const BY_NAME: { [N in QueueName]: JobQueue<N> } = {
  'audit.write': auditWrite,
  'audit.drain': auditDrain,
  'key.expire': keyExpire,
  'run.finished': runFinished,
  'app.totals': appTotals,
  'audit.checkpoint': auditCheckpoint,
  'idempotency.purge': idempotencyPurge,
  'webhook.deliver': webhookDeliver,
};

export const JOB_QUEUES: readonly JobQueue[] = Object.values(BY_NAME);
