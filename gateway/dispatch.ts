// The hand-off: an endpoint of the registry answers here, on the gateway's thread when it runs
// inline, else by one message to a pool thread and one { status, json } back; then the envelope.
import { Piscina } from 'piscina';
import type { Response } from 'restify';
import { IDEMPOTENT_METHODS, idempotencyOf } from '../domain/idempotency.ts';
import { keyRefusal, withKeyCheck } from '../domain/key-check.ts';
import { errors, type ApiError } from '../domain/errors.ts';
import { responseJson, type DomainRequest, type SerializedResult } from '../domain/requests.ts';
import type { Config } from '../lib/config.ts';
import type { LanedDatabase } from '../lib/lanes.ts';
import { errorFields, type Logger } from '../lib/log.ts';
import type { PoolTask, PoolWorkerData } from './pool-thread/task.ts';
import type { EventStreams } from './event-streams.ts';
import type { Endpoint } from './endpoints/endpoint.ts';
import type { PoolEndpointName } from './endpoints/registry.ts';
import { sendSerializedEnvelope } from './envelope.ts';
import { parseJsonObject } from './json-body.ts';
import type { KnownKeys } from './known-keys.ts';
import { releaseAddress } from './pipelining.ts';
import { releaseTurn } from './turns.ts';
import type { Refusals } from './refusals.ts';
import type { GatewayRequest, Handler, Next } from './types.ts';

const WORKER_FILE = new URL('./pool-thread/task.ts', import.meta.url).href;
const BODY_METHODS = new Set(['POST', 'PATCH']);
const THREAD_OLD_GENERATION_MB = 96;
const THREAD_YOUNG_GENERATION_MB = 16;

export type WorkerPool = Piscina<PoolTask, SerializedResult>;

export function createWorkerPool(config: Config, databaseUrl: string): WorkerPool {
  const workerData: PoolWorkerData = { config, databaseUrl };
  return new Piscina({
    filename: WORKER_FILE,
    minThreads: config.workerThreads,
    maxThreads: config.workerThreads,
    concurrentTasksPerWorker: config.tasksPerThread,
    // Past this many waiting requests the gateway sheds load with 503 instead of queueing forever.
    maxQueue: config.maxQueuedTasks,
    // Atomics.wait would freeze the database I/O of an idle thread's tasks in flight.
    atomics: 'disabled',
    // A thread's heap grows lazily under load and is not given back; bounded, its GC keeps up.
    resourceLimits: { maxOldGenerationSizeMb: THREAD_OLD_GENERATION_MB, maxYoungGenerationSizeMb: THREAD_YOUNG_GENERATION_MB },
    workerData,
  });
}

/** Step 8 and the request a handler sees. Any body must be a JSON object, even one nothing reads. */
function domainRequest(req: GatewayRequest): DomainRequest {
  const method = req.method ?? '';
  const parsed = parseJsonObject(req.rawBody);
  const body = BODY_METHODS.has(method) ? parsed : {};
  const idempotency = IDEMPOTENT_METHODS.has(method) ? idempotencyOf(req.headers['idempotency-key'], method, req.url ?? '', body) : undefined;
  return {
    // An invalid value is answered by the pool thread, after the plan's checks (step 9 before 10).
    ...(idempotency === 'invalid' ? { idempotencyInvalid: true as const } : idempotency ? { idempotency } : {}),
    params: { ...(req.params as Record<string, string>) },
    query: queryOf(req.getQuery()),
    body,
    caller: req.caller!,
    keyChecked: req.callerChecked === true,
    ip: req.clientIp,
    requestId: req.requestId,
  };
}

/** What the last step of a route needs. */
export interface Runners {
  pool: WorkerPool;
  db: LanedDatabase;
  known: KnownKeys;
  maxQueued: number;
  streams: EventStreams;
  refusals: Refusals;
  log: Logger;
}

/** The last step of a route: its handler, where the registry says it runs. */
export function serveEndpoint({ pool, db, known, maxQueued, streams, refusals: { fail }, log }: Runners, name: string, endpoint: Endpoint): Handler {
  if (endpoint.runs === 'reserved') {
    const { answer } = endpoint;
    return function answerReserved(_req, _res, next) {
      next(answer());
    };
  }
  /** What is full answers 503 at once (load shedding, not a fault), logged with what it was. */
  const full = (req: GatewayRequest, res: Response, what: string) => {
    log.warn({ requestId: req.requestId }, `${what} full, shedding load`);
    fail(req, res, errors.unavailable());
  };
  /** Past the queue bound, a request is answered at once instead of waiting its turn. */
  const shed = (req: GatewayRequest, res: Response, next: Next, what: string) => {
    full(req, res, what);
    next(false);
  };
  if (endpoint.runs === 'stream') {
    return function openStream(req, res, next) {
      let query;
      try {
        query = endpoint.parse(domainRequest(req), { 'last-event-id': req.headers['last-event-id'] as string | undefined });
      } catch (err) {
        return next(err as ApiError);
      }
      // restify answers 500 for a chain ended before its response began: next() comes after the head.
      known.check(req).then(() => streams.open(req, res, query).then((opened) => {
        if (opened === true) {
          releaseAddress(res);
          releaseTurn(res);
        }
        else {
          log.warn({ requestId: req.requestId }, `${opened} full, stream refused`);
          fail(req, res, errors.streamsFull());
        }
      }, (err: unknown) => {
        log.warn({ requestId: req.requestId, err: errorFields(err) }, 'event stream could not open');
        if (res.headersSent) res.destroy();
        else fail(req, res, errors.unavailable());
      }), (err: unknown) => fail(req, res, err)).finally(() => next(false));
    };
  }
  return function runEndpoint(req, res, next) {
    let request: DomainRequest;
    try {
      request = domainRequest(req);
    } catch (err) {
      return next(err as ApiError);
    }
    if (endpoint.runs === 'inline') {
      // This pool also serves key lookups: an inline endpoint may queue no deeper than a pool one.
      if (db.waitingCount >= maxQueued) return shed(req, res, next, 'gateway database pool');
      withKeyCheck(db, request, (checked) => endpoint.handler(checked, request)).then((result) => {
        sendSerializedEnvelope(res, result.status, responseJson(result));
      }, (err: unknown) => fail(req, res, err)).finally(() => next(false));
      return;
    }
    if (pool.queueSize >= maxQueued) return shed(req, res, next, 'worker queue');
    pool.run({ endpoint: name as PoolEndpointName, request }).then((result) => {
      // piscina's finished-task record keeps this result reachable until a full GC; dropping the
      // text here keeps it from being promoted to old space with the record.
      const { status, json, refusedKey, replayed, retryAfter } = result;
      result.json = undefined;
      // The riding key check refused: the one error path's answer, refusal floor and all.
      if (refusedKey) return void fail(req, res, keyRefusal(status === 401)).finally(() => next(false));
      if (status === 503) void fail(req, res, errors.unavailable());
      else sendSerializedEnvelope(res, status, json!, answerHeaders(replayed, retryAfter));
      next(false);
    }, (err: unknown) => {
      // A thread that died under the task.
      log.error({ requestId: req.requestId, endpoint: name, err: errorFields(err) }, 'worker task failed');
      fail(req, res, errors.internal());
      next(false);
    });
  };
}

function answerHeaders(replayed: true | undefined, retryAfter: number | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (replayed) headers['Idempotent-Replayed'] = 'true';
  if (retryAfter !== undefined) headers['Retry-After'] = String(retryAfter);
  return headers;
}

function queryOf(raw: string): Record<string, string | string[]> {
  // No prototype: a parameter named __proto__ is data like any other.
  const query: Record<string, string | string[]> = Object.create(null);
  // Most requests carry no query, and a URLSearchParams made for nothing is not free.
  if (raw === '') return query;
  for (const [name, value] of new URLSearchParams(raw)) {
    const seen = query[name];
    query[name] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
  }
  return query;
}
