// The workspace command line (decisions.md "Running it"): `node bin/workspace.ts <command>` on the
// test's own database prints one JSON object and exits 0, or a message on stderr and a non-zero
// exit; its changes carry origin `workspace` and its keys work against the HTTPS API.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { TestService, type TestProject } from '../support/service.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const KEY_REFUSED = { code: 403, title: 'Forbidden', response: "The API key doesn't have permissions to perform the request." };

let service: TestService;
const secrets: string[] = [];
/** Everything the command line wrote on stderr in this file. */
const stderrSeen: string[] = [];

before(async () => {
  service = await TestService.start();
});
after(() => service.stop());

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function workspace(args: string[], timeoutMs = 60_000): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/workspace.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: service.databaseUrl, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk; });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (err) => { clearTimeout(timer); reject(err); });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      stderrSeen.push(stderr);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Exit 0 and exactly one line on stdout holding one JSON object. */
function succeeded(outcome: Outcome): Record<string, any> {
  assert.equal(outcome.signal, null, `killed: ${outcome.stderr}`);
  assert.equal(outcome.code, 0, `exit ${outcome.code}: ${outcome.stderr}`);
  assert.match(outcome.stdout, /^[^\n]+\n$/, 'exactly one line on stdout');
  const value = JSON.parse(outcome.stdout);
  assert.equal(typeof value, 'object');
  assert.ok(value !== null && !Array.isArray(value), 'a JSON object');
  return value;
}

/** A non-zero exit (not a kill), a message on stderr, nothing on stdout. */
function failed(outcome: Outcome, what: string): void {
  assert.equal(outcome.signal, null, `${what}: killed`);
  assert.equal(typeof outcome.code, 'number', what);
  assert.notEqual(outcome.code, 0, `${what}: exit code`);
  assert.equal(outcome.stdout, '', `${what}: stdout`);
  assert.ok(outcome.stderr.trim().length > 0, `${what}: a message on stderr`);
}

async function eventsOf(relatedId: string) {
  const { rows } = await service.db.query(
    `SELECT e.id, e.project_id, t.name AS type, e.related_table, e.origin, e.ip_address, e.details
     FROM events e JOIN event_types t ON t.id = e.type_id WHERE e.related_id = $1 ORDER BY e.id`, [relatedId]);
  return rows;
}

async function allEventCount(): Promise<number> {
  const { rows } = await service.db.query('SELECT count(*)::int AS n FROM events');
  return rows[0].n;
}

async function helper(name: string): Promise<TestProject> {
  const made = await service.createProject(name);
  secrets.push(made.key);
  return made;
}

test('project create --name prints the new project, consumer and * key; the key works over HTTPS', async () => {
  const made = succeeded(await workspace(['project', 'create', '--name', 'CLI project']));
  assert.deepEqual(Object.keys(made), ['project', 'consumer', 'key']);
  assert.deepEqual(Object.keys(made.project), ['id']);
  assert.deepEqual(Object.keys(made.consumer), ['id']);
  assert.deepEqual(Object.keys(made.key), ['id', 'key']);
  assert.match(made.project.id, /^proj_[0-9a-f]{20}$/);
  assert.match(made.consumer.id, /^cons_[0-9a-f]{20}$/);
  assert.match(made.key.id, /^papi_[0-9a-f]{20}$/);
  assert.match(made.key.key, /^sk-project-[0-9A-Za-z]{43,}$/);
  secrets.push(made.key.key);

  const current = await service.request('GET', '/v1/key/current', { key: made.key.key });
  assert.equal(current.status, 200, current.text);
  assert.equal(current.body.response.id, made.key.id);
  assert.deepEqual(current.body.response.scope, ['*']);
  assert.equal(current.body.response.status, 'activated');
  assert.equal(current.body.response.created_by, made.consumer.id);
  assert.equal(current.body.response.expires_at, null);

  const { rows: [projectRow] } = await service.db.query('SELECT name, status FROM projects WHERE id = $1', [made.project.id]);
  assert.deepEqual(projectRow, { name: 'CLI project', status: 'active' });
  const { rows: [membership] } = await service.db.query(
    'SELECT count(*)::int AS n FROM memberships WHERE project_id = $1 AND consumer_id = $2', [made.project.id, made.consumer.id]);
  assert.equal(membership.n, 1);

  // Its changes are in the project's trail, made from the workspace.
  await service.waitForEvents(made.project.id, 2);
  await service.waitForJobsDrained();
  const feed = await service.request('GET', '/v1/event', { key: made.key.key });
  assert.equal(feed.status, 200, feed.text);
  assert.equal(feed.body.response.total, 2);
  const byType = Object.fromEntries(feed.body.response.data.map((e: any) => [e.type.name, e]));
  assert.deepEqual(Object.keys(byType).sort(), ['key.created', 'project.created']);
  assert.deepEqual(byType['project.created'].related, { table: 'project', id: made.project.id });
  assert.deepEqual(byType['key.created'].related, { table: 'key', id: made.key.id });
  for (const event of feed.body.response.data) {
    assert.equal(event.origin, 'workspace');
    assert.equal(event.ip_address, '127.0.0.1');
  }
  assert.deepEqual(byType['key.created'].details, { name: 'Default key', scope: ['*'], expires_at: null });
  assert.ok(!feed.text.includes(made.key.key));
});

test('project disable <proj_id> disables the project: its key gets 403, other projects are untouched', async () => {
  const target = await helper('CLI disable target');
  const bystander = await helper('CLI disable bystander');
  await service.waitForEvents(target.projectId, 2);
  assert.equal((await service.request('GET', '/v1/key/current', { key: target.key })).status, 200);

  const out = succeeded(await workspace(['project', 'disable', target.projectId]));
  assert.equal(out.project?.id, target.projectId);

  const refused = await service.request('GET', '/v1/key/current', { key: target.key });
  assert.equal(refused.status, 403, refused.text);
  assert.deepEqual(refused.body, KEY_REFUSED);
  const still = await service.request('GET', '/v1/key/current', { key: bystander.key });
  assert.equal(still.status, 200, still.text);

  await service.waitForEvents(target.projectId, 3);
  await service.waitForJobsDrained();
  const disabled = (await eventsOf(target.projectId)).filter((e) => e.type === 'project.disabled');
  assert.equal(disabled.length, 1);
  assert.deepEqual({ ...disabled[0], id: undefined }, {
    id: undefined, project_id: target.projectId, type: 'project.disabled', related_table: 'project',
    origin: 'workspace', ip_address: '127.0.0.1', details: [],
  });
});

test('consumer disable <cons_id> disables the consumer: its key gets 403', async () => {
  const target = await helper('CLI consumer target');
  const bystander = await helper('CLI consumer bystander');
  await service.waitForEvents(target.projectId, 2);
  assert.equal((await service.request('GET', '/v1/key/current', { key: target.key })).status, 200);

  const out = succeeded(await workspace(['consumer', 'disable', target.consumerId]));
  assert.equal(out.consumer?.id, target.consumerId);

  const refused = await service.request('GET', '/v1/event', { key: target.key });
  assert.equal(refused.status, 403, refused.text);
  assert.deepEqual(refused.body, KEY_REFUSED);
  assert.equal((await service.request('GET', '/v1/key/current', { key: bystander.key })).status, 200);

  await service.waitForEvents(target.projectId, 3);
  await service.waitForJobsDrained();
  const events = await eventsOf(target.consumerId);
  assert.equal(events.length, 1);
  assert.deepEqual({ ...events[0], id: undefined }, {
    id: undefined, project_id: target.projectId, type: 'consumer.disabled', related_table: 'consumer',
    origin: 'workspace', ip_address: '127.0.0.1', details: [],
  });
});

test('an unknown id exits non-zero with a message on stderr, nothing on stdout, and changes nothing', async () => {
  const p = await helper('CLI unknown ids');
  await service.waitForEvents(p.projectId, 2);
  await service.waitForJobsDrained();
  const before = await allEventCount();

  const [noProject, noConsumer, notAnId] = await Promise.all([
    workspace(['project', 'disable', 'proj_00000000000000000000']),
    workspace(['consumer', 'disable', 'cons_00000000000000000000']),
    workspace(['project', 'disable', p.consumerId]),
  ]);
  failed(noProject, 'project disable <unknown>');
  failed(noConsumer, 'consumer disable <unknown>');
  failed(notAnId, 'project disable <a consumer id>');

  await service.waitForJobsDrained();
  assert.equal(await allEventCount(), before);
  const { rows: [row] } = await service.db.query('SELECT status FROM projects WHERE id = $1', [p.projectId]);
  assert.equal(row.status, 'active');
  assert.equal((await service.request('GET', '/v1/key/current', { key: p.key })).status, 200);
});

test('an unknown command, or a command missing its argument, exits non-zero', async () => {
  const outcomes = await Promise.all([
    workspace(['frobnicate']),
    workspace(['project', 'explode', 'proj_00000000000000000000']),
    workspace([]),
    workspace(['project', 'create']),
    workspace(['project', 'disable']),
  ]);
  const names = ['frobnicate', 'project explode', '(nothing)', 'project create without --name', 'project disable without id'];
  for (const [i, outcome] of outcomes.entries()) failed(outcome, names[i]!);
});

test('neither the service log nor the command line\'s stderr holds a secret, a hash or a Bearer value', async () => {
  assert.ok(secrets.length >= 5, 'the file made its keys');
  await new Promise((resolve) => setTimeout(resolve, 500));
  const text = `${service.logText()}\n${stderrSeen.join('\n')}`;
  assert.match(text, /\/v1\/key\/current/, 'the log records the requests made');
  assert.ok(!text.includes('Bearer '));
  assert.doesNotMatch(text, /sk-project-[0-9A-Za-z]{8,}/);
  for (const secret of secrets) {
    assert.ok(!text.includes(secret), 'a key secret');
    assert.ok(!text.includes(createHash('sha256').update(secret).digest('hex')), 'a secret hash');
  }
});
