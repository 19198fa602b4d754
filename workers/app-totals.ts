// `app.totals`: recomputes one (app, project)'s run totals, sent when a run is stored; stately,
// so at most one is queued and one active per pair.
import { recomputeTotals } from '../domain/runs.ts';
import { QUICK_JOB } from '../lib/jobs.ts';
import { FETCHING, type JobQueue } from './queue.ts';

const TOTALS_BATCH_SIZE = 10;

export const appTotals: JobQueue<'app.totals'> = {
  name: 'app.totals',
  options: { ...QUICK_JOB, policy: 'stately', notify: false },
  fetch: { ...FETCHING, batchSize: TOTALS_BATCH_SIZE },
  async handle(services, jobs) {
    for (const job of jobs) await recomputeTotals(services, job.data);
  },
};
