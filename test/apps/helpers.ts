// The apps tests' own helpers (not a test file itself): the seeded catalogue, request bodies,
// shortcuts through the API, logo files, and waiting for the run workers.
import { mkdtempSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { assertSuccess, envelope, MESSAGES } from '../support/assertions.ts';
import type { TestService } from '../support/service.ts';
import { tempDir } from '../support/tmp.ts';
import { nowSeconds, waitFor } from '../support/wait.ts';

export const DATA_TYPES = {
  input: 'mdti_c2a39a7ad82bc017dccd',
  'text area': 'mdti_fdd932b23e1fa82aa942',
  number: 'mdti_0bf56e96d417b823b7e8',
  email: 'mdti_52f84207d0f8a95ed43d',
  document: 'mdti_5017cf8657e1df4df809',
  image: 'mdti_1777f1beedfbd5cde030',
} as const;

/** Seeded catalogue (sql/migrations/0002_apps.sql): models and their newest builds. */
export const MODELS = {
  text: { model: 'modi_4a1f0c9e2b7d58136e20', build: 'mlyi_1a0f9e8d7c6b5a493827' },
  vision: { model: 'modi_5b2e1d0f3c8e69247f31', build: 'mlyi_3c2b1a0f9e8d7c6b5a49' },
  code: { model: 'modi_6c3f2e104d9f7a358042', build: 'mlyi_4d3c2b1a0f9e8d7c6b5a' },
} as const;

export const APP_NOT_FOUND = envelope(404, MESSAGES.appNotFound);

/** A valid creation body; `overrides` replace members (undefined removes one). */
export function appBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const body: Record<string, unknown> = {
    name: 'Summariser',
    description: 'Summarises a topic.',
    data: [{ type: 'input', name: 'topic', placeholder: 'A topic', required: true }],
    instruction: [{ type: 'system', instruction: 'Summarise the topic in one line.' }],
    ...overrides,
  };
  for (const [k, v] of Object.entries(body)) if (v === undefined) delete body[k];
  return body;
}

export async function createApp(service: TestService, key: string, overrides: Record<string, unknown> = {}): Promise<any> {
  return assertSuccess(await service.request('POST', '/v1/app/create', { key, body: appBody(overrides) }));
}

export async function getApp(service: TestService, key: string, id: string): Promise<any> {
  return assertSuccess(await service.request('GET', `/v1/app/detail/${id}`, { key }));
}

/** Back-dates an app's created_at (and updated_at) by SQL, for distinct times without sleeping. */
/** Sets an app's created_at and updated_at to `secondsAgo` before `now` (give one `now` to put several in one second). */
export async function backdateApp(service: TestService, id: string, secondsAgo: number, now = nowSeconds()): Promise<number> {
  const at = now - secondsAgo;
  await service.db.query('UPDATE apps SET created_at = to_timestamp($2), updated_at = to_timestamp($2) WHERE id = $1', [id, at]);
  return at;
}

const tmp = tempDir('pms-apps-');
let fileCounter = 0;

export const LOGO_BYTES = {
  png: Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('0000000dIHDR-rest-of-a-png', 'latin1')]),
  jpeg: Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]), Buffer.from('JFIF-rest-of-a-jpeg', 'latin1')]),
  webp: Buffer.concat([Buffer.from('RIFF', 'latin1'), Buffer.from([0x24, 0, 0, 0]), Buffer.from('WEBPVP8 rest-of-a-webp', 'latin1')]),
  text: Buffer.from('This is a plain text file, not an image.\n', 'utf8'),
  riffNotWebp: Buffer.concat([Buffer.from('RIFF', 'latin1'), Buffer.from([0x24, 0, 0, 0]), Buffer.from('WAVEfmt rest-of-a-wav', 'latin1')]),
};

/** Writes bytes to a temporary file named `name` and returns its path. */
export function logoFile(bytes: Buffer, name: string): string {
  const dirPath = mkdtempSync(path.join(tmp, `f${++fileCounter}-`));
  const file = path.join(dirPath, name);
  writeFileSync(file, bytes);
  return file;
}

/** Waits until every run report and totals recompute has been handled by the workers. */
export function waitForRunJobs(service: TestService, timeoutMs = 15_000): Promise<void> {
  return service.waitForJobsIdle(['run.finished', 'app.totals'], timeoutMs);
}

/** Waits until the stored totals of (app, project) count `runs` runs, then until the run workers are idle. */
export async function waitForTotals(service: TestService, appId: string, projectId: string, runs: number, timeoutMs = 15_000): Promise<void> {
  let seen: unknown;
  await waitFor(() => `totals of ${appId} for ${projectId}: ${JSON.stringify(seen)}, wanted ${runs} runs`, async () => {
    const { rows } = await service.db.query('SELECT runs::int AS runs FROM app_totals WHERE app_id = $1 AND project_id = $2', [appId, projectId]);
    seen = rows[0];
    return rows[0]?.runs === runs ? true : undefined;
  }, timeoutMs);
  await waitForRunJobs(service, timeoutMs);
}

/** The project's events through the API, oldest first. */
export async function events(service: TestService, key: string): Promise<any[]> {
  await service.waitForJobsDrained();
  const list = assertSuccess(await service.request('GET', '/v1/event', { key }));
  return [...list.data].reverse();
}
