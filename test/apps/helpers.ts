// Shared by the apps tests: request bodies, envelope assertions, the workspace command line,
// logo files, and waiting for the run workers.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Reply, TestService } from '../support/service.ts';

export const ROOT = path.resolve(import.meta.dirname, '..', '..');

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

export const ID = {
  app: /^mapp_[0-9a-f]{20}$/,
  field: /^madi_[0-9a-f]{20}$/,
  instruction: /^miid_[0-9a-f]{20}$/,
  file: /^file_[0-9a-f]{20}$/,
  run: /^run_[0-9a-f]{20}$/,
  event: /^evnt_[0-9a-f]{20}$/,
};

export const TITLES: Record<number, string> = {
  200: 'OK', 201: 'Created', 400: 'Bad Request', 402: 'Payment Required', 403: 'Forbidden', 404: 'Not Found', 422: 'Unprocessable entity',
};

export const APP_NOT_FOUND = { code: 404, title: 'Not Found', response: 'App not found.' };

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

export function assertOk(reply: Reply, code = 200): any {
  assert.equal(reply.status, code, reply.text);
  assert.deepEqual(Object.keys(reply.body), ['code', 'title', 'response']);
  assert.equal(reply.body.code, code);
  assert.equal(reply.body.title, TITLES[code]);
  return reply.body.response;
}

export function assertError(reply: Reply, status: number, message: string, title = TITLES[status]): void {
  assert.equal(reply.status, status, reply.text);
  assert.deepEqual(reply.body, { code: status, title, response: message }, reply.text);
}

export async function createApp(service: TestService, key: string, overrides: Record<string, unknown> = {}): Promise<any> {
  return assertOk(await service.request('POST', '/v1/app/create', { key, body: appBody(overrides) }));
}

export async function getApp(service: TestService, key: string, id: string): Promise<any> {
  return assertOk(await service.request('GET', `/v1/app/detail/${id}`, { key }));
}

export const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Back-dates an app's created_at (and updated_at) by SQL, for distinct times without sleeping. */
export async function backdateApp(service: TestService, id: string, secondsAgo: number): Promise<number> {
  const at = nowSeconds() - secondsAgo;
  await service.db.query('UPDATE apps SET created_at = to_timestamp($2), updated_at = to_timestamp($2) WHERE id = $1', [id, at]);
  return at;
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the workspace command line against the test's own database. */
export function workspace(service: TestService, args: string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/workspace.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: service.databaseUrl, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => { stdout += c.toString('utf8'); });
    child.stderr.on('data', (c: Buffer) => { stderr += c.toString('utf8'); });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A command that must succeed: exit 0, exactly one JSON object on stdout. */
export async function workspaceOk(service: TestService, args: string[]): Promise<any> {
  const result = await workspace(service, args);
  assert.equal(result.code, 0, `workspace ${args.join(' ')} failed: ${result.stderr}`);
  const lines = result.stdout.split('\n').filter((l) => l.trim() !== '');
  assert.equal(lines.length, 1, `expected one line of JSON, got: ${result.stdout}`);
  const value = JSON.parse(lines[0]!);
  assert.equal(typeof value, 'object');
  assert.ok(value !== null && !Array.isArray(value));
  return value;
}

/** A command that must fail: non-zero exit, a message on stderr, nothing on stdout. */
export async function workspaceFails(service: TestService, args: string[]): Promise<CliResult> {
  const result = await workspace(service, args);
  assert.notEqual(result.code, 0, `workspace ${args.join(' ')} should fail; stdout: ${result.stdout}`);
  assert.ok(result.stderr.trim().length > 0, 'a failure prints a message on stderr');
  assert.equal(result.stdout.trim(), '');
  return result;
}

const tmp = mkdtempSync(path.join(tmpdir(), 'pms-apps-'));
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
export async function waitForRunJobs(service: TestService, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await service.db.query(
      "SELECT count(*)::int AS n FROM pgboss.job WHERE name IN ('run.finished', 'app.totals') AND state IN ('created', 'retry', 'active')");
    if (rows[0].n === 0) return;
    if (Date.now() > deadline) throw new Error(`${rows[0].n} run/totals jobs still pending`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Waits until the stored totals of (app, project) count `runs` runs. */
export async function waitForTotals(service: TestService, appId: string, projectId: string, runs: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await service.db.query('SELECT runs::int AS runs FROM app_totals WHERE app_id = $1 AND project_id = $2', [appId, projectId]);
    if (rows[0]?.runs === runs) {
      await waitForRunJobs(service, timeoutMs);
      return;
    }
    if (Date.now() > deadline) throw new Error(`totals of ${appId} for ${projectId}: ${JSON.stringify(rows[0])}, wanted ${runs} runs`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The project's events through the API, oldest first. */
export async function events(service: TestService, key: string): Promise<any[]> {
  await service.waitForJobsDrained();
  const list = assertOk(await service.request('GET', '/v1/event', { key }));
  return [...list.data].reverse();
}
