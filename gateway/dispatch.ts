// The hand-off: one message to a worker thread, one { status, response } back, then the envelope.
import { Piscina } from 'piscina';
import { ApiError, errors } from '../domain/errors.ts';
import { currentKey } from '../domain/keys.ts';
import type { DomainRequest, DomainResult, SerializedResult } from '../domain/requests.ts';
import type { Config } from '../lib/config.ts';
import { errorFields, type Logger } from '../lib/log.ts';
import type { PoolWorkerData } from '../workers/pool-task.ts';
import { sendEnvelope, sendError, sendSerializedEnvelope } from './envelope.ts';
import { parseJsonObject } from './json-body.ts';
import type { Route } from './routes.ts';
import type { Handler } from './types.ts';

const WORKER_FILE = new URL('../workers/pool-task.ts', import.meta.url).href;
const BODY_METHODS = new Set(['POST', 'PATCH']);
const THREAD_OLD_GENERATION_MB = 96;
const THREAD_YOUNG_GENERATION_MB = 16;

export function createWorkerPool(config: Config, databaseUrl: string): Piscina<DomainRequest, SerializedResult> {
  const workerData: PoolWorkerData = { config, databaseUrl };
  return new Piscina({
    filename: WORKER_FILE,
    minThreads: config.workerThreads,
    maxThreads: config.workerThreads,
    concurrentTasksPerWorker: config.tasksPerThread,
    // Past this many waiting requests the gateway sheds load with 503 instead of queueing forever.
    maxQueue: config.maxQueuedTasks,
    // 'sync' parks an idle thread in Atomics.wait, which also freezes the database I/O of the
    // tasks it still has in flight; handlers here are all I/O, so threads talk by messages only.
    atomics: 'disabled',
    // A thread's heap grows lazily under load and is not given back; bounded, its GC keeps up.
    resourceLimits: { maxOldGenerationSizeMb: THREAD_OLD_GENERATION_MB, maxYoungGenerationSizeMb: THREAD_YOUNG_GENERATION_MB },
    workerData,
  });
}

/** Operations that need no database: run where the request already is, without a thread hop. */
const INLINE_OPERATIONS: Readonly<Record<string, (req: DomainRequest) => DomainResult>> = {
  'key.current': currentKey,
};

export function dispatch(pool: Piscina<DomainRequest, SerializedResult>, route: Route, log: Logger): Handler {
  const op = route.op!;
  const inline = route.inline ? INLINE_OPERATIONS[op] : undefined;
  if (route.inline && !inline) throw new Error(`no inline operation ${op}`);
  return function runOperation(req, res, next) {
    let body: Record<string, unknown> = {};
    try {
      if (BODY_METHODS.has(req.method ?? '')) body = parseJsonObject(req.rawBody);
    } catch (err) {
      sendError(res, err as ApiError);
      return next(false);
    }
    const task: DomainRequest = {
      op,
      params: { ...(req.params as Record<string, string>) },
      query: queryOf(req.getQuery()),
      body,
      caller: req.caller!,
      ip: req.clientIp,
      requestId: req.requestId,
    };
    if (inline) {
      const result = inline(task);
      sendEnvelope(res, result.status, result.response);
      return next(false);
    }
    pool.run(task).then((result) => {
      if (result.status === 503) sendError(res, errors.unavailable());
      else sendSerializedEnvelope(res, result.status, result.json);
      next(false);
    }, (err: unknown) => {
      // The pool refuses when its queue is full (load shedding) or a thread died under the task.
      const queueFull = err instanceof Error && /queue is at limit/i.test(err.message);
      if (queueFull) {
        log.warn({ requestId: req.requestId }, 'worker queue full, shedding load');
        sendError(res, errors.unavailable());
      } else {
        log.error({ requestId: req.requestId, err: errorFields(err) }, 'worker task failed');
        sendError(res, errors.internal());
      }
      next(false);
    });
  };
}

function queryOf(raw: string): Record<string, string | string[]> {
  // No prototype: a parameter named __proto__ is data like any other.
  const query: Record<string, string | string[]> = Object.create(null);
  for (const [name, value] of new URLSearchParams(raw)) {
    const seen = query[name];
    query[name] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
  }
  return query;
}
