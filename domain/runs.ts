// Runs reported by the run engine (queue `run.finished`): stored once per run id, after which the
// (app, project) totals are recomputed by their own job, so reads never aggregate runs.
import { queryFile, withTransaction } from '../lib/pool.ts';
import { isId, newId } from '../lib/ids.ts';
import { findApp } from './apps.ts';
import { projectMustExist } from './projects.ts';
import type { QueueName, RunFinished, TotalsJob } from './jobs.ts';
import { change, type Services } from './services.ts';


const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/** A report that can never be stored (retrying would not help) is refused with a reason. */
export function invalidRunReport(report: RunFinished): string | undefined {
  if (!isId('run', report?.run_id ?? '')) return 'run_id';
  if (!isId('mapp', report.app_id ?? '')) return 'app_id';
  if (!isId('proj', report.project_id ?? '')) return 'project_id';
  if (report.status !== 'succeeded' && report.status !== 'error') return 'status';
  if (report.tokens !== null && !(isCount(report.tokens?.input) && isCount(report.tokens?.output))) return 'tokens';
  return undefined;
}

/** Returns whether this report was new. */
export async function storeRun(services: Services, report: RunFinished): Promise<boolean> {
  return change(services, async (tx) => {
    const [stored] = await queryFile(tx.client, 'run_insert', {
      id: report.run_id, app_id: report.app_id, project_id: report.project_id, status: report.status,
      input_tokens: report.tokens?.input ?? null, output_tokens: report.tokens?.output ?? null,
    });
    if (!stored) return false;
    const job: TotalsJob = { app_id: report.app_id, project_id: report.project_id };
    await tx.send('app.totals', job, { singletonKey: `${report.app_id}:${report.project_id}` });
    return true;
  });
}

export async function recomputeTotals(services: Services, job: TotalsJob): Promise<void> {
  await withTransaction(services.pool, async (client) => {
    const [app] = await queryFile<{ project_id: string }>(client, 'app_owner', [job.app_id]);
    if (!app) return;
    await queryFile(client, 'app_lock_for_totals', [job.app_id, app.project_id]);
    await queryFile(client, 'app_totals_recompute', [job.app_id, job.project_id, app.project_id]);
  });
}

/** Plays the run engine: reports a finished run on the `run.finished` queue. */
export async function recordRun(services: Services, report: Omit<RunFinished, 'run_id'>) {
  await findApp(services.pool, report.app_id);
  await projectMustExist(services.pool, report.project_id);
  const runId = newId('run');
  await services.boss.send('run.finished' satisfies QueueName, { run_id: runId, ...report } satisfies RunFinished);
  return { run: { id: runId } };
}
