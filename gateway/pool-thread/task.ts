// The `web` pool thread: runs one endpoint's handler per task and answers { status, json }. Every
// failure becomes a result here, so the gateway only relays what comes back.
import { workerData } from 'node:worker_threads';
import { ApiError, errors, isDatabaseUnavailable } from '../../domain/errors.ts';
import { answerIdempotently } from '../../domain/idempotency.ts';
import { KeyRefusal, withKeyCheck } from '../../domain/key-check.ts';
import { responseJson, type DomainRequest, type DomainResult, type SerializedResult } from '../../domain/requests.ts';
import type { Services } from '../../domain/services.ts';
import type { PoolEndpoint } from '../endpoints/endpoint.ts';
import { ENDPOINTS, type PoolEndpointName } from '../endpoints/registry.ts';
import type { Config } from '../../lib/config.ts';
import { createPool, type Database } from '../../lib/pool.ts';
import { startProducer } from '../../lib/jobs.ts';
import { createLogger, errorFields } from '../../lib/log.ts';

export interface PoolWorkerData {
  config: Config;
  databaseUrl: string;
}

/** The one message from the gateway to a pool thread. */
export interface PoolTask {
  endpoint: PoolEndpointName;
  request: DomainRequest;
}

const { config, databaseUrl } = workerData as PoolWorkerData;
const log = createLogger(config.logLevel, 'web-worker', config.logFile);
const pool = createPool(config, log, databaseUrl, Math.max(2, Math.ceil(config.dbPoolSize / config.workerThreads)));
let services: Promise<Services> | undefined;

/** pg-boss reads its queue list at start; retried on failure so a thread born in an outage recovers. */
function ready(): Promise<Services> {
  services ??= startProducer(pool, log).then(
    (boss) => ({ pool, db: pool, boss, log, config }),
    (err) => { services = undefined; throw err; },
  );
  return services;
}

type TaskResult = DomainResult & { refusedKey?: true; replayed?: true; retryAfter?: number };

function failure(err: ApiError): TaskResult {
  return { status: err.status, response: err.message, ...(err.retryAfterSeconds !== undefined ? { retryAfter: err.retryAfterSeconds } : {}) };
}

export default async function runTask(task: PoolTask): Promise<SerializedResult> {
  const result = await resultOf(task);
  const { status, refusedKey, replayed, retryAfter } = result;
  return { status, json: responseJson(result), ...(refusedKey ? { refusedKey } : {}), ...(replayed ? { replayed } : {}), ...(retryAfter !== undefined ? { retryAfter } : {}) };
}

async function resultOf({ endpoint, request }: PoolTask): Promise<TaskResult> {
  try {
    const base = await ready();
    const declared: PoolEndpoint = ENDPOINTS[endpoint];
    const run = (db: Database) => withKeyCheck<DomainResult>(db, request, (checked) => declared.handler({ ...base, db: checked }, request));
    const { idempotency, idempotencyInvalid } = request;
    // Step 9 before step 10: the plan refuses before an Idempotency-Key's replay, 409, 422 or 400.
    const { admit } = declared;
    if ((idempotency || idempotencyInvalid) && admit) await withKeyCheck(pool, request, (checked) => admit({ ...base, db: checked }, request));
    if (idempotencyInvalid) throw errors.idempotencyKeyInvalid();
    return idempotency ? await answerIdempotently(base, { ...request, idempotency }, run) : await run(pool);
  } catch (err) {
    if (err instanceof KeyRefusal) return { ...failure(err), refusedKey: true };
    if (err instanceof ApiError) return failure(err);
    if (isDatabaseUnavailable(err)) {
      log.warn({ requestId: request.requestId, endpoint, err: errorFields(err) }, 'database unavailable');
      return failure(errors.unavailable());
    }
    log.error({ requestId: request.requestId, endpoint, err: errorFields(err) }, 'handler failed');
    return failure(errors.internal());
  }
}
