// Every job queue, by name: `release` creates them, the worker runs them, the domain sends to
// them by a name this type-checks (domain/services.ts Tx.send).
import { appTotals } from './app-totals.ts';
import { auditWrite } from './audit-write.ts';
import { keyExpire } from './key-expire.ts';
import type { JobQueue } from './queue.ts';
import { runFinished } from './run-finished.ts';

export const JOB_QUEUES = [auditWrite, keyExpire, runFinished, appTotals] as const;

export type QueueName = (typeof JOB_QUEUES)[number]['name'];
/** The payload of a queue's jobs, by its name. */
export type PayloadOf<N extends string> = Extract<(typeof JOB_QUEUES)[number], { name: N }> extends JobQueue<infer P> ? P : never;
