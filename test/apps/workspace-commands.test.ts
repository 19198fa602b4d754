import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertError, assertSuccess } from '../support/assertions.ts';
import { workspaceFails, workspaceOk } from '../support/cli.ts';
import { ID } from '../support/ids.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { setLogo } from '../../domain/apps.ts';
import { holder, holdLock, lockWaiters } from '../support/locks.ts';
import { sleep, waitFor } from '../support/wait.ts';
import { appBody, createApp, getApp, LOGO_BYTES, logoFile, waitForTotals } from './helpers.ts';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start();
  project = await service.createProject('Workspace');
});
after(() => service.stop());

const MADE_UP_APP = 'mapp_0123456789abcdef0123';
const WORKSPACE = { origin: 'workspace' as const, ip: '127.0.0.1' };
const MADE_UP_PROJECT = 'proj_0123456789abcdef0123';

test('plan set --custom-apps false prints one JSON object, exits 0, and closes app creation', async () => {
  const p = await service.createProject('Plan closed');
  await workspaceOk(service, ['plan', 'set', p.projectId, '--custom-apps', 'false']);
  assertError(await service.request('POST', '/v1/app/create', { key: p.key, body: appBody() }), 402,
    'The current billing plan does not allow custom app creation for this project.');
  await workspaceOk(service, ['plan', 'set', p.projectId, '--custom-apps', 'true']);
  await createApp(service, p.key);
});

test('plan set --app-limit N sets the limit', async () => {
  const p = await service.createProject('Plan limited');
  await workspaceOk(service, ['plan', 'set', p.projectId, '--app-limit', '1']);
  await createApp(service, p.key);
  assertError(await service.request('POST', '/v1/app/create', { key: p.key, body: appBody() }), 402,
    'The current billing plan app limit has been reached for this project.');
});

test('app logo attaches the file as the logo and prints one JSON object', async () => {
  const app = await createApp(service, project.key);
  const out = await workspaceOk(service, ['app', 'logo', app.id, '--file', logoFile(LOGO_BYTES.png, 'logo.png')]);
  const logo = (await getApp(service, project.key, app.id)).logo;
  assert.match(logo, ID.file);
  assert.ok(JSON.stringify(out).includes(logo), 'the output names the stored file');
  const { rows } = await service.db.query('SELECT project_id, is_image FROM files WHERE id = $1', [logo]);
  assert.deepEqual(rows, [{ project_id: project.projectId, is_image: true }]);

  // A second logo replaces the first.
  await workspaceOk(service, ['app', 'logo', app.id, '--file', logoFile(LOGO_BYTES.text, 'readme.txt')]);
  const replaced = (await getApp(service, project.key, app.id)).logo;
  assert.match(replaced, ID.file);
  assert.notEqual(replaced, logo);
});

test('two logo commands at once: each event\'s `from` is the logo it replaced', async () => {
  const app = await createApp(service, project.key);
  const held = await holdLock(service.db, 'SELECT id FROM apps WHERE id = $1 AND project_id = $2 FOR UPDATE', [app.id, project.projectId]);
  const both = [setLogo(service.services, WORKSPACE, app.id, logoFile(LOGO_BYTES.png, 'a.png')), setLogo(service.services, WORKSPACE, app.id, logoFile(LOGO_BYTES.png, 'b.png'))];
  try {
    await waitFor(() => 'both commands wait on the app', async () => (await lockWaiters(service.db, held)) >= 2 || undefined);
  } finally {
    await held.release();
  }
  const made = await Promise.all(both);
  const changes = (await waitFor(() => 'both events written', async () => {
    const { rows: written } = await service.db.query(
      `SELECT e.details FROM events e JOIN event_types t ON t.id = e.type_id WHERE e.related_id = $1 AND t.name = 'app.logo_changed' ORDER BY e.sequence`, [app.id]);
    return written.length === 2 ? written.map((r) => r.details.changes.logo) : undefined;
  })) as Array<{ from: string; to: string }>;
  assert.equal(changes[0]!.from, '');
  assert.equal(changes[1]!.from, changes[0]!.to, 'the second replaced the first');
  assert.deepEqual(new Set(changes.map((c) => c.to)), new Set(made.map((m) => m.file.id)));
});

test('a logo command waiting while the app is deleted finds no app, and changes nothing', async () => {
  const app = await createApp(service, project.key);
  const client = await service.db.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT id FROM apps WHERE id = $1 AND project_id = $2 FOR UPDATE', [app.id, project.projectId]);
    const held = await holder(client);
    const logo = setLogo(service.services, WORKSPACE, app.id, logoFile(LOGO_BYTES.png, 'late.png')).then(() => 'changed', (err: Error) => err.message);
    await waitFor(() => 'the command waits on the app', async () => (await lockWaiters(service.db, held)) >= 1 || undefined);
    await client.query('UPDATE apps SET deleted_at = now_seconds() WHERE id = $1 AND project_id = $2', [app.id, project.projectId]);
    await client.query('COMMIT');
    assert.equal(await logo, `No app ${app.id}.`);
  } finally {
    client.release();
  }
  const { rows } = await service.db.query('SELECT logo_file_id FROM apps WHERE id = $1', [app.id]);
  assert.equal(rows[0].logo_file_id, null);
});

test('a logo file that cannot be read: exit 1, one line on stderr, no stack', async () => {
  const app = await createApp(service, project.key);
  const outcome = await workspaceFails(service, ['app', 'logo', app.id, '--file', '/nonexistent/logo.png']);
  assert.equal(outcome.code, 1);
  assert.equal(outcome.stderr, 'The logo file cannot be read: /nonexistent/logo.png.\n');
});

test('app activate moves a draft to activated; activating again still exits 0', async () => {
  const app = await createApp(service, project.key, { status: 'draft' });
  await workspaceOk(service, ['app', 'activate', app.id]);
  assert.equal((await getApp(service, project.key, app.id)).status, 'activated');
  await workspaceOk(service, ['app', 'activate', app.id]);
  assert.equal((await getApp(service, project.key, app.id)).status, 'activated');
});

test('run record prints {"run":{"id":"run_…"}} and the run is stored and totalled', async () => {
  const app = await createApp(service, project.key);
  const out = await workspaceOk(service, ['run', 'record', '--app', app.id, '--project', project.projectId, '--status', 'succeeded', '--input', '3', '--output', '4']);
  assert.deepEqual(Object.keys(out), ['run']);
  assert.deepEqual(Object.keys(out.run), ['id']);
  assert.match(out.run.id, ID.run);
  const unmeasured = await workspaceOk(service, ['run', 'record', '--app', app.id, '--project', project.projectId, '--status', 'succeeded']);
  const failed = await workspaceOk(service, ['run', 'record', '--app', app.id, '--project', project.projectId, '--status', 'error', '--input', '100', '--output', '100']);
  await waitForTotals(service, app.id, project.projectId, 3);
  const { rows } = await service.db.query('SELECT id FROM runs WHERE app_id = $1 ORDER BY id', [app.id]);
  assert.deepEqual(rows.map((r) => r.id), [out.run.id, unmeasured.run.id, failed.run.id].sort());
  const detail = await getApp(service, project.key, app.id);
  assert.deepEqual(detail.runs, { private: 3, public: 0 });
  assert.deepEqual(detail.tokens, { input: 3, output: 4, total: 7 });
});

test('unknown ids exit non-zero with a message on stderr', async () => {
  await workspaceFails(service, ['plan', 'set', MADE_UP_PROJECT, '--custom-apps', 'false']);
  await workspaceFails(service, ['app', 'logo', MADE_UP_APP, '--file', logoFile(LOGO_BYTES.png, 'logo.png')]);
  await workspaceFails(service, ['app', 'activate', MADE_UP_APP]);
  await workspaceFails(service, ['run', 'record', '--app', MADE_UP_APP, '--project', project.projectId, '--status', 'succeeded']);
  const app = await createApp(service, project.key);
  await workspaceFails(service, ['run', 'record', '--app', app.id, '--project', MADE_UP_PROJECT, '--status', 'succeeded']);
  await sleep(300);
  const { rows } = await service.db.query('SELECT count(*)::int AS n FROM runs WHERE app_id IN ($1, $2) OR project_id = $3', [MADE_UP_APP, app.id, MADE_UP_PROJECT]);
  assert.equal(rows[0].n, 0, 'no run recorded for unknown ids');
  const jobs = await service.db.query("SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'run.finished' AND (data->>'app_id' IN ($1, $2) OR data->>'project_id' = $3)", [MADE_UP_APP, app.id, MADE_UP_PROJECT]);
  assert.equal(jobs.rows[0].n, 0, 'no run report sent for unknown ids');
});

test('a deleted app is unknown to the app commands', async () => {
  const app = await createApp(service, project.key, { status: 'draft' });
  assertSuccess(await service.request('DELETE', `/v1/app/detail/${app.id}`, { key: project.key }));
  await workspaceFails(service, ['app', 'activate', app.id]);
  await workspaceFails(service, ['app', 'logo', app.id, '--file', logoFile(LOGO_BYTES.png, 'logo.png')]);
  await workspaceFails(service, ['run', 'record', '--app', app.id, '--project', project.projectId, '--status', 'succeeded']);
});

test('bad arguments exit non-zero with a message on stderr and change nothing', async () => {
  const app = await createApp(service, project.key, { status: 'draft' });
  await workspaceFails(service, ['app', 'activate']);
  await workspaceFails(service, ['app', 'logo', app.id]);
  await workspaceFails(service, ['plan', 'set', project.projectId, '--custom-apps', 'maybe']);
  await workspaceFails(service, ['plan', 'set', project.projectId, '--app-limit', '-1']);
  await workspaceFails(service, ['run', 'record', '--app', app.id, '--project', project.projectId, '--status', 'maybe']);
  await workspaceFails(service, ['run', 'record', '--app', app.id, '--project', project.projectId, '--status', 'succeeded', '--input', '3']);
  assert.equal((await getApp(service, project.key, app.id)).status, 'draft');
  await createApp(service, project.key); // the plan is unchanged
});
