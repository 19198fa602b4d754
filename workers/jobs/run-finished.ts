// `run.finished`: the run engine's report of a finished run, stored once per run id.
import { invalidRunReport, storeRun } from '../../domain/runs.ts';
import { QUICK_JOB } from '../../lib/jobs.ts';
import { FETCHING, type JobQueue } from './queue.ts';

const RUN_BATCH_SIZE = 20;

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
      else await storeRun(services, job.data);
    }
  },
};
