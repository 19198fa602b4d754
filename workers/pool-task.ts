// The piscina thread: runs one domain operation per task and answers with { status, json }.
// Every failure becomes a result here, so the gateway only ever relays what comes back.
import { workerData } from 'node:worker_threads';
import { ApiError, errors, isDatabaseUnavailable } from '../domain/errors.ts';
import type { DomainRequest, DomainResult, SerializedResult } from '../domain/requests.ts';
import type { Services } from '../domain/services.ts';
import type { Config } from '../lib/config.ts';
import { createPool } from '../lib/db.ts';
import { startProducer } from '../lib/jobs.ts';
import { createLogger, errorFields } from '../lib/log.ts';
import { OPERATIONS } from './operations.ts';

export interface PoolWorkerData {
  config: Config;
  databaseUrl: string;
}

const { config, databaseUrl } = workerData as PoolWorkerData;
const log = createLogger(config.logLevel, 'web-worker', config.logFile);
const pool = createPool(config, log, databaseUrl, Math.max(2, Math.ceil(config.dbPoolSize / config.workerThreads)));
let services: Promise<Services> | undefined;

/** pg-boss reads its queue list at start; retried on failure so a thread born in an outage recovers. */
function ready(): Promise<Services> {
  services ??= startProducer(pool, log).then(
    (boss) => ({ pool, boss, log }),
    (err) => { services = undefined; throw err; },
  );
  return services;
}

function failure(err: ApiError): DomainResult {
  return { status: err.status, response: err.message };
}

export default async function runOperation(req: DomainRequest): Promise<SerializedResult> {
  const { status, response } = await resultOf(req);
  return { status, json: JSON.stringify(response) };
}

async function resultOf(req: DomainRequest): Promise<DomainResult> {
  const operation = OPERATIONS[req.op];
  try {
    if (!operation) throw new Error(`no operation ${req.op}`);
    return await operation(await ready(), req);
  } catch (err) {
    if (err instanceof ApiError) return failure(err);
    if (isDatabaseUnavailable(err)) {
      log.warn({ requestId: req.requestId, op: req.op, err: errorFields(err) }, 'database unavailable');
      return failure(errors.unavailable());
    }
    log.error({ requestId: req.requestId, op: req.op, err: errorFields(err) }, 'operation failed');
    return failure(errors.internal());
  }
}
