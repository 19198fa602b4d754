// Workspace actions on apps, plans and runs (origin `workspace`); not part of the HTTP API.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { newId } from '../lib/ids.ts';
import { run } from '../lib/db.ts';
import { recordEvent } from './audit.ts';
import { isImage } from './images.ts';
import { NotFound } from './projects.ts';
import type { QueueName, RunFinished } from './jobs.ts';
import { change, type Actor, type Services } from './services.ts';

/** A logo bigger than this is refused before it is read. */
export const MAX_LOGO_BYTES = 5 * 1024 * 1024;

export class Invalid extends Error {}

export async function setPlan(services: Services, actor: Actor, projectId: string, plan: { customApps?: boolean; appLimit?: number }) {
  return change(services, async (tx) => {
    const [row] = await run<{ old_custom_apps: boolean; old_app_limit: number; custom_apps: boolean; app_limit: number; updated_at: number }>(
      tx.client, 'plan_update', [projectId, plan.customApps ?? null, plan.appLimit ?? null]);
    if (!row) throw new NotFound(`No project ${projectId}.`);
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    if (row.old_custom_apps !== row.custom_apps) changes.custom_apps = { from: row.old_custom_apps, to: row.custom_apps };
    if (row.old_app_limit !== row.app_limit) changes.app_limit = { from: row.old_app_limit, to: row.app_limit };
    if (Object.keys(changes).length > 0) {
      await recordEvent(tx, actor, { projectId, type: 'plan.changed', related: { table: 'project', id: projectId }, details: { changes }, at: row.updated_at });
    }
    return { project: { id: projectId }, plan: { custom_apps: row.custom_apps, app_limit: row.app_limit } };
  });
}

interface AppRow {
  id: string;
  project_id: string;
  status: string;
  logo_file_id: string | null;
}

async function findApp(db: Parameters<typeof run>[0], appId: string): Promise<AppRow> {
  const [app] = await run<AppRow>(db, 'app_find_any', [appId]);
  if (!app) throw new NotFound(`No app ${appId}.`);
  return app;
}

export async function setLogo(services: Services, actor: Actor, appId: string, filePath: string) {
  const size = statSync(filePath).size;
  if (size > MAX_LOGO_BYTES) throw new Invalid(`The logo file is larger than ${MAX_LOGO_BYTES} bytes.`);
  const content = readFileSync(filePath);
  const image = isImage(content);
  return change(services, async (tx) => {
    const app = await findApp(tx.client, appId);
    const fileId = newId('file');
    await run(tx.client, 'file_insert', [fileId, app.project_id, path.basename(filePath), content.length, image, content]);
    const [updated] = await run<{ updated_at: number }>(tx.client, 'app_set_logo', [appId, fileId]);
    await recordEvent(tx, actor, {
      projectId: app.project_id,
      type: 'app.logo_changed',
      related: { table: 'app', id: appId },
      details: { changes: { logo: { from: app.logo_file_id ?? '', to: fileId } }, image },
      at: updated!.updated_at,
    });
    return { app: { id: appId, logo: fileId }, file: { id: fileId, image } };
  });
}

export async function activateApp(services: Services, actor: Actor, appId: string) {
  return change(services, async (tx) => {
    await findApp(tx.client, appId);
    const [activated] = await run<{ id: string; project_id: string; updated_at: number }>(tx.client, 'app_activate', [appId]);
    // Already activated: nothing changed, nothing to record.
    if (activated) {
      await recordEvent(tx, actor, {
        projectId: activated.project_id,
        type: 'app.activated',
        related: { table: 'app', id: appId },
        details: { changes: { status: { from: 'draft', to: 'activated' } } },
        at: activated.updated_at,
      });
    }
    return { app: { id: appId, status: 'activated' } };
  });
}

/** Plays the run engine: reports a finished run on the `run.finished` queue. */
export async function recordRun(services: Services, report: Omit<RunFinished, 'run_id'>) {
  await findApp(services.pool, report.app_id);
  const [project] = await run(services.pool, 'project_exists', [report.project_id]);
  if (!project) throw new NotFound(`No project ${report.project_id}.`);
  const runId = newId('run');
  await services.boss.send('run.finished' satisfies QueueName, { run_id: runId, ...report } satisfies RunFinished);
  return { run: { id: runId } };
}
