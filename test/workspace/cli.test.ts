// The workspace command line (decisions.md "Running it"): `node bin/workspace.ts <command>` on the
// test's own database prints one JSON object and exits 0, or a message on stderr and a non-zero
// exit; its changes carry origin `workspace` and its keys work against the HTTPS API.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { envelope, MESSAGES } from '../support/assertions.ts';
import { assertCliFailed, assertCliSucceeded, runWorkspace, type CliOutcome } from '../support/cli.ts';
import { ID, SECRET } from '../support/ids.ts';
import { Secrets } from '../support/secrets.ts';
import { TestService } from '../support/service.ts';
import { sleep } from '../support/wait.ts';

const KEY_REFUSED = envelope(403, MESSAGES.refused);

let service: TestService;
const secrets = new Secrets();
/** Everything the command line wrote on stderr in this file. */
const stderrSeen: string[] = [];

before(async () => {
  service = await TestService.start();
});
after(() => service.stop());

/** Runs the command line on this file's database, keeping what it wrote on stderr. */
async function workspace(args: string[]): Promise<CliOutcome> {
  const outcome = await runWorkspace(service, args);
  stderrSeen.push(outcome.stderr);
  return outcome;
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

const helper = (name: string) => secrets.project(service, name);

test('project create --name prints the new project, consumer and * key; the key works over HTTPS', async () => {
  const made = assertCliSucceeded(await workspace(['project', 'create', '--name', 'CLI project']));
  assert.deepEqual(Object.keys(made), ['project', 'consumer', 'key']);
  assert.deepEqual(Object.keys(made.project), ['id']);
  assert.deepEqual(Object.keys(made.consumer), ['id']);
  assert.deepEqual(Object.keys(made.key), ['id', 'key']);
  assert.match(made.project.id, ID.project);
  assert.match(made.consumer.id, ID.consumer);
  assert.match(made.key.id, ID.key);
  assert.match(made.key.key, SECRET);
  secrets.add(made.key.key);

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

  const out = assertCliSucceeded(await workspace(['project', 'disable', target.projectId]));
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

  const out = assertCliSucceeded(await workspace(['consumer', 'disable', target.consumerId]));
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
  assertCliFailed(noProject, 'project disable <unknown>');
  assertCliFailed(noConsumer, 'consumer disable <unknown>');
  assertCliFailed(notAnId, 'project disable <a consumer id>');

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
  for (const [i, outcome] of outcomes.entries()) assertCliFailed(outcome, names[i]!);
});

test('neither the service log nor the command line\'s stderr holds a secret, a hash or a Bearer value', async () => {
  assert.ok(secrets.seen.length >= 5, 'the file made its keys');
  await sleep(500);
  secrets.assertLogClean(`${service.logText()}\n${stderrSeen.join('\n')}`, /\/v1\/key\/current/, 'the log and stderr');
});
