// `webhook.deliver`: each worker process delivers webhooks (domain/webhook-delivery.ts), started
// at once by the audit writer's notice of new events; this queue's sweep and job are the rest:
// retries come due, leases of dead workers run out, notices lost.
import type pg from 'pg';
import { webhooksPending, WebhookDispatcher } from '../domain/webhook-delivery.ts';
import type { Services } from '../domain/services.ts';
import { QUICK_JOB } from '../lib/jobs.ts';
import { FETCHING, type JobQueue } from './queue.ts';

/** How late a retry or a dead worker's delivery can be taken up. */
const SWEEP_INTERVAL_MS = 1000;
const dispatchers = new WeakMap<pg.Pool, WebhookDispatcher>();

function dispatcherOf(services: Services): WebhookDispatcher {
  let dispatcher = dispatchers.get(services.pool);
  if (!dispatcher) dispatchers.set(services.pool, dispatcher = new WebhookDispatcher(services));
  return dispatcher;
}

export const webhookDeliver: JobQueue<'webhook.deliver'> = {
  name: 'webhook.deliver',
  options: { ...QUICK_JOB, policy: 'short' },
  fetch: FETCHING,
  sweep: { intervalMs: SWEEP_INTERVAL_MS, pending: (services) => webhooksPending(services.pool) },
  prepare: async (services) => dispatcherOf(services).start(),
  stop: (services) => dispatcherOf(services).stop(),
  // The pass runs beside the job: attempts take up to their timeout, the job a moment.
  async handle(services) {
    dispatcherOf(services).kick();
  },
};
