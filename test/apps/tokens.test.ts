import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setLogo } from '../../domain/apps.ts';
import { recordRun } from '../../domain/runs.ts';
import { assertSuccess } from '../support/assertions.ts';
import { ID } from '../support/ids.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { createApp, getApp, LOGO_BYTES, logoFile, waitForRunJobs, waitForTotals } from './helpers.ts';

let service: TestService;

before(async () => {
  service = await TestService.start();
});
after(() => service.stop());

const ZERO = { input: 0, output: 0, total: 0 };
const workspaceActor = { origin: 'workspace' as const, ip: '127.0.0.1' };
type Tokens = { input: number; output: number } | null;

const report = (appId: string, p: TestProject, status: 'succeeded' | 'error', tokens: Tokens) =>
  recordRun(service.services, { app_id: appId, project_id: p.projectId, status, tokens });

async function listed(p: TestProject, appId: string): Promise<any> {
  const list = assertSuccess(await service.request('GET', '/v1/app/list?limit=100', { key: p.key }));
  const entry = list.data.find((e: any) => e.id === appId);
  assert.ok(entry, `${appId} is listed`);
  return entry;
}

async function published(owner: TestProject): Promise<any> {
  const app = await createApp(service, owner.key);
  await setLogo(service.services, workspaceActor, app.id, logoFile(LOGO_BYTES.png, 'logo.png'));
  assertSuccess(await service.request('PATCH', `/v1/app/detail/${app.id}`, { key: owner.key, body: { type: 'public' } }));
  return app;
}

test('an app that never ran: runs 0/0 and tokens all zero, in detail and list', async () => {
  const p = await service.createProject('Never ran');
  const app = await createApp(service, p.key);
  const detail = await getApp(service, p.key, app.id);
  assert.deepEqual(detail.runs, { private: 0, public: 0 });
  assert.deepEqual(detail.tokens, ZERO);
  const entry = await listed(p, app.id);
  assert.deepEqual(entry.runs, { private: 0, public: 0 });
  assert.deepEqual(entry.tokens, ZERO);
});

test('only error runs: tokens are zeros, the launches still count', async () => {
  const p = await service.createProject('Errors only');
  const app = await createApp(service, p.key);
  await report(app.id, p, 'error', { input: 100, output: 50 });
  await report(app.id, p, 'error', null);
  await waitForTotals(service, app.id, p.projectId, 2);
  const detail = await getApp(service, p.key, app.id);
  assert.deepEqual(detail.tokens, ZERO);
  assert.deepEqual(detail.runs, { private: 2, public: 0 });
  assert.deepEqual((await listed(p, app.id)).tokens, ZERO);
});

test('succeeded runs without token measurement only: tokens null (error runs with tokens aside)', async () => {
  const p = await service.createProject('Unmeasured');
  const app = await createApp(service, p.key);
  await report(app.id, p, 'succeeded', null);
  await report(app.id, p, 'succeeded', null);
  await report(app.id, p, 'error', { input: 9, output: 9 });
  await waitForTotals(service, app.id, p.projectId, 3);
  const detail = await getApp(service, p.key, app.id);
  assert.equal(detail.tokens, null);
  assert.deepEqual(detail.runs, { private: 3, public: 0 });
  assert.equal((await listed(p, app.id)).tokens, null);
});

test('mixed runs: sums over the non-error runs only', async () => {
  const p = await service.createProject('Mixed');
  const app = await createApp(service, p.key);
  await report(app.id, p, 'succeeded', { input: 10, output: 5 });
  await report(app.id, p, 'succeeded', { input: 7, output: 3 });
  await report(app.id, p, 'succeeded', null);
  await report(app.id, p, 'error', { input: 1000, output: 1000 });
  await report(app.id, p, 'succeeded', { input: 0, output: 0 });
  await waitForTotals(service, app.id, p.projectId, 5);
  const detail = await getApp(service, p.key, app.id);
  assert.deepEqual(detail.tokens, { input: 17, output: 8, total: 25 });
  assert.deepEqual(detail.runs, { private: 5, public: 0 });
  const entry = await listed(p, app.id);
  assert.deepEqual(entry.tokens, { input: 17, output: 8, total: 25 });
  assert.deepEqual(entry.runs, { private: 5, public: 0 });
});

test('totals follow later runs', async () => {
  const p = await service.createProject('Growing');
  const app = await createApp(service, p.key);
  await report(app.id, p, 'succeeded', { input: 1, output: 2 });
  await waitForTotals(service, app.id, p.projectId, 1);
  assert.deepEqual((await getApp(service, p.key, app.id)).tokens, { input: 1, output: 2, total: 3 });
  await report(app.id, p, 'succeeded', { input: 4, output: 8 });
  await waitForTotals(service, app.id, p.projectId, 2);
  assert.deepEqual((await getApp(service, p.key, app.id)).tokens, { input: 5, output: 10, total: 15 });
});

test('runs.private counts the owner\'s launches, runs.public other projects\'; tokens are per reader', async () => {
  const owner = await service.createProject('Owner');
  const b = await service.createProject('Reader B');
  const c = await service.createProject('Reader C');
  const d = await service.createProject('Reader D (never ran)');
  const app = await published(owner);

  await report(app.id, owner, 'succeeded', { input: 10, output: 1 });
  await report(app.id, owner, 'error', { input: 50, output: 50 });
  await report(app.id, b, 'succeeded', { input: 2, output: 3 });
  await report(app.id, b, 'succeeded', { input: 4, output: 5 });
  await report(app.id, b, 'error', null);
  await report(app.id, c, 'succeeded', null);
  await report(app.id, c, 'error', { input: 7, output: 7 });
  await waitForTotals(service, app.id, owner.projectId, 2);
  await waitForTotals(service, app.id, b.projectId, 3);
  await waitForTotals(service, app.id, c.projectId, 2);

  const own = await getApp(service, owner.key, app.id);
  assert.deepEqual(own.runs, { private: 2, public: 5 });
  assert.deepEqual(own.tokens, { input: 10, output: 1, total: 11 }, "the owner's own spend only");
  const ownEntry = await listed(owner, app.id);
  assert.deepEqual(ownEntry.runs, { private: 2, public: 5 });
  assert.deepEqual(ownEntry.tokens, { input: 10, output: 1, total: 11 });

  const seenByB = await getApp(service, b.key, app.id);
  assert.deepEqual(seenByB.runs, { private: 0, public: 5 });
  assert.deepEqual(seenByB.tokens, { input: 6, output: 8, total: 14 });
  assert.equal(seenByB.instruction, null);

  const seenByC = await getApp(service, c.key, app.id);
  assert.deepEqual(seenByC.runs, { private: 0, public: 5 });
  assert.equal(seenByC.tokens, null, 'C ran it only without measurement (errors aside)');

  const seenByD = await getApp(service, d.key, app.id);
  assert.deepEqual(seenByD.runs, { private: 0, public: 5 });
  assert.deepEqual(seenByD.tokens, ZERO);
});

test('a private app run by another project (before it was withdrawn) still counts as public runs for the owner', async () => {
  const owner = await service.createProject('Withdrawing owner');
  const other = await service.createProject('Earlier user');
  const app = await published(owner);
  await report(app.id, other, 'succeeded', { input: 1, output: 1 });
  await waitForTotals(service, app.id, other.projectId, 1);
  assertSuccess(await service.request('PATCH', `/v1/app/detail/${app.id}`, { key: owner.key, body: { type: 'private' } }));
  const own = await getApp(service, owner.key, app.id);
  assert.deepEqual(own.runs, { private: 0, public: 1 });
  assert.deepEqual(own.tokens, ZERO, 'the owner itself never ran it');
});

test('a redelivered run.finished report (same run_id) counts once', async () => {
  const p = await service.createProject('Redelivery');
  const app = await createApp(service, p.key);
  const runId = 'run_00112233445566778899';
  const job = { run_id: runId, app_id: app.id, project_id: p.projectId, status: 'succeeded', tokens: { input: 11, output: 22 } };
  await service.services.boss.send('run.finished', job);
  await waitForTotals(service, app.id, p.projectId, 1);
  await service.services.boss.send('run.finished', job);
  await service.services.boss.send('run.finished', { ...job, tokens: { input: 999, output: 999 } });
  await waitForRunJobs(service);
  // A distinct run afterwards proves the redeliveries were handled before it.
  await report(app.id, p, 'succeeded', { input: 1, output: 1 });
  await waitForTotals(service, app.id, p.projectId, 2);

  const detail = await getApp(service, p.key, app.id);
  assert.deepEqual(detail.runs, { private: 2, public: 0 });
  assert.deepEqual(detail.tokens, { input: 12, output: 23, total: 35 });
  const { rows } = await service.db.query('SELECT count(*)::int AS n FROM runs WHERE id = $1', [runId]);
  assert.equal(rows[0].n, 1);
});

test('a report naming no such app or project is dropped at once, logged, and holds back no other report', async () => {
  const p = await service.createProject('Reports of nothing');
  const app = await createApp(service, p.key);
  const ofNothing = [
    { run_id: 'run_0000000000000000aaaa', app_id: 'mapp_0123456789abcdef0123', project_id: p.projectId, status: 'succeeded', tokens: { input: 1, output: 1 } },
    { run_id: 'run_0000000000000000bbbb', app_id: app.id, project_id: 'proj_0123456789abcdef0123', status: 'succeeded', tokens: { input: 1, output: 1 } },
  ];
  const ids = [];
  for (const job of ofNothing) ids.push(await service.services.boss.send('run.finished', job));
  await report(app.id, p, 'succeeded', { input: 5, output: 6 });
  await waitForTotals(service, app.id, p.projectId, 1);
  await waitForRunJobs(service);
  const { rows } = await service.db.query('SELECT state, retry_count FROM pgboss.job WHERE id = ANY ($1::uuid[]) ORDER BY id', [ids]);
  assert.deepEqual(rows, [{ state: 'completed', retry_count: 0 }, { state: 'completed', retry_count: 0 }], 'dropped on the first try, not retried');
  const stored = await service.db.query('SELECT count(*)::int AS n FROM runs WHERE id IN ($1, $2)', ofNothing.map((j) => j.run_id));
  assert.equal(stored.rows[0].n, 0);
  assert.match(service.logText(), /run report refused: no such app or project/);
});

test('two reports of one run_id sent at once count once', async () => {
  const p = await service.createProject('Concurrent redelivery');
  const app = await createApp(service, p.key);
  const job = { run_id: 'run_aabbccddeeff00112233', app_id: app.id, project_id: p.projectId, status: 'succeeded', tokens: { input: 3, output: 4 } };
  await Promise.all([service.services.boss.send('run.finished', job), service.services.boss.send('run.finished', job)]);
  await waitForTotals(service, app.id, p.projectId, 1);
  await waitForRunJobs(service);
  const detail = await getApp(service, p.key, app.id);
  assert.deepEqual(detail.runs, { private: 1, public: 0 });
  assert.deepEqual(detail.tokens, { input: 3, output: 4, total: 7 });
});

test('recordRun answers the new run id', async () => {
  const p = await service.createProject('Run id');
  const app = await createApp(service, p.key);
  const { run } = await report(app.id, p, 'succeeded', null);
  assert.match(run.id, ID.run);
  await waitForTotals(service, app.id, p.projectId, 1);
  const { rows } = await service.db.query('SELECT app_id, project_id, status FROM runs WHERE id = $1', [run.id]);
  assert.deepEqual(rows, [{ app_id: app.id, project_id: p.projectId, status: 'succeeded' }]);
});
