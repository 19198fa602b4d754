// `run.finished`: the run engine's report of a finished run, stored once per run id.
import { invalidRunReport, storeRun } from '../domain/runs.ts';
import { QUICK_JOB } from '../lib/jobs.ts';
import { SQLSTATE } from '../lib/sqlstate.ts';
import { FETCHING, type JobQueue } from './queue.ts';

const RUN_BATCH_SIZE = 20;

/** A report naming a missing app or project can never be stored: dropped, not retried. */
const namesNoSuchRecord = (err: unknown) => {
  const { code, table, message } = (err ?? {}) as { code?: unknown; table?: unknown; message?: unknown };
  // The runs table's own keys only: pg-boss's deferred keys fail with the same code at COMMIT. Citus
  // names no table, only a shard in its message (runs_102042).
  return code === SQLSTATE.foreignKeyViolation
    && (table === 'runs' || (table === undefined && typeof message === 'string' && /^insert or update on table "runs_\d+"/.test(message)));
};

export const runFinished: JobQueue<'run.finished'> = {
  name: 'run.finished',
  // Sent by the run engine with pg-boss's own send(): its NOTIFY wakes the worker.
  options: { ...QUICK_JOB, notify: true },
  fetch: { ...FETCHING, batchSize: RUN_BATCH_SIZE },
  async handle(services, jobs) {
    for (const job of jobs) {
      const invalid = invalidRunReport(job.data);
      // A malformed report can never be stored; retrying it would only repeat the failure.
      if (invalid) services.log.error({ jobId: job.id, field: invalid }, 'run report refused');
      else {
        try {
          await storeRun(services, job.data);
        } catch (err) {
          if (!namesNoSuchRecord(err)) throw err;
          services.log.error({ jobId: job.id, field: 'app_id or project_id' }, 'run report refused: no such app or project');
        }
      }
    }
  },
};
