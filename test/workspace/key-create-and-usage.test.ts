// The workspace command line's usage (decisions.md "Running it": `--help` and `help` print it on
// stdout and exit 0; no command or a usage error is one line on stderr, no stack, exit 2) and
// `key create --project <proj_id> [--name <name>] [--scope <scope>]...`: a key for an existing
// project, made as a workspace change, printed like the API's key creation answer, secret once.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { runWorkspace, type CliOutcome } from '../support/cli.ts';
import { ID, SECRET } from '../support/ids.ts';
import { TestService, type TestProject } from '../support/service.ts';

const USAGE = `usage: npm run --silent workspace -- <command> [--ip <address>]
  project create --name <name>
  project disable <proj_id>
  consumer disable <cons_id>
  plan set <proj_id> [--custom-apps true|false] [--app-limit N] [--rate-limit N/S|none]
      (--rate-limit: the default limit of the project's keys created from now on,
       N requests per S seconds, N 1..1000000, S 1..86400; none for no default)
  app logo <mapp_id> --file <path>
  app activate <mapp_id>
  run record --app <mapp_id> --project <proj_id> --status succeeded|error [--input N --output N]
  key create --project <proj_id> [--name <name>] [--scope <scope>]...
      (name "Workspace key" and scope * when absent; --scope may be repeated)
  events verify <proj_id>
      (recomputes the project's hash chain; exit 1 naming the first sequence that breaks)
  help, --help
Each command prints one JSON object; --ip sets the address recorded on events (default 127.0.0.1).
`;
const SEE_HELP = '`npm run --silent workspace -- --help` lists the commands.';

let service: TestService;
let project: TestProject;

before(async () => {
  service = await TestService.start();
  project = await service.createProject('Workspace keys');
});
after(() => service.stop());

const workspace = (args: string[]) => runWorkspace(service, args);

function assertOutcome(outcome: CliOutcome, expected: { code: number; stdout: string; stderr: string }, what: string): void {
  assert.deepEqual({ code: outcome.code, signal: outcome.signal, stdout: outcome.stdout, stderr: outcome.stderr },
    { ...expected, signal: null }, what);
}

async function keyCount(projectId: string): Promise<number> {
  const { rows } = await service.db.query('SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1', [projectId]);
  return rows[0].n;
}

test('--help, -h and help print the usage on stdout and exit 0', async () => {
  const outcomes = await Promise.all([workspace(['--help']), workspace(['-h']), workspace(['help']), workspace(['key', 'create', '--help'])]);
  for (const [i, outcome] of outcomes.entries()) assertOutcome(outcome, { code: 0, stdout: USAGE, stderr: '' }, `run ${i}`);
});

test('no command, an unknown command or a bad option: one line on stderr, no stack, exit 2', async () => {
  const [none, unknown, unknownPair, badOption, missingValue] = await Promise.all([
    workspace([]),
    workspace(['frobnicate']),
    workspace(['project', 'explode']),
    workspace(['project', 'create', '--colour', 'red']),
    workspace(['key', 'create', '--project']),
  ]);
  assertOutcome(none, { code: 2, stdout: '', stderr: `no command given; ${SEE_HELP}\n` }, 'no command');
  assertOutcome(unknown, { code: 2, stdout: '', stderr: `unknown command: frobnicate; ${SEE_HELP}\n` }, 'unknown command');
  assertOutcome(unknownPair, { code: 2, stdout: '', stderr: `unknown command: project explode; ${SEE_HELP}\n` }, 'unknown pair');
  for (const [outcome, what] of [[badOption, 'unknown option'], [missingValue, 'option without its value']] as const) {
    assert.equal(outcome.code, 2, what);
    assert.equal(outcome.stdout, '', what);
    assert.match(outcome.stderr, /^[^\n]+\n$/, `${what}: one line`);
    assert.doesNotMatch(outcome.stderr, /\bat .*:\d+:\d+/, `${what}: no stack`);
  }
  assert.match(badOption.stderr, /'--colour'/);
  assert.match(missingValue.stderr, /'--project <value>' argument missing/);
});

test('a usage error found by a command is one line too (no log line with a stack beside it)', async () => {
  const [noName, badStatus] = await Promise.all([
    workspace(['project', 'create']),
    workspace(['run', 'record', '--app', 'mapp_00000000000000000000', '--project', project.projectId, '--status', 'maybe']),
  ]);
  assertOutcome(noName, { code: 2, stdout: '', stderr: 'project create needs --name <name>.\n' }, 'project create');
  assertOutcome(badStatus, { code: 2, stdout: '', stderr: '--status takes succeeded or error.\n' }, 'run record');
});

test('key create: the API\'s key object with the secret once; it works over HTTPS with its scopes', async () => {
  const outcome = await workspace(['key', 'create', '--project', project.projectId, '--name', 'ci reader',
    '--scope', 'key:read', '--scope', 'event:read', '--scope', 'key:read']);
  assert.equal(outcome.code, 0, outcome.stderr);
  assert.equal(outcome.stderr, '');
  assert.match(outcome.stdout, /^\{"key":\{[^\n]+\}\}\n$/, 'one line, one object');
  const { key } = JSON.parse(outcome.stdout);

  // The members of the API's own answer to POST /v1/key, in its order.
  const api = await service.request('POST', '/v1/key', { key: project.key, body: { name: 'through the API' } });
  assert.equal(api.status, 201, api.text);
  assert.deepEqual(Object.keys(key), Object.keys(api.body.response));

  assert.match(key.id, ID.key);
  assert.equal(key.object, 'api_key');
  assert.equal(key.name, 'ci reader');
  assert.match(key.key, SECRET);
  assert.equal(key.key_preview, `sk-project-...${key.key.slice(-4)}`);
  assert.deepEqual(key.scope, ['key:read', 'event:read'], 'in order given, the repeat dropped');
  assert.equal(key.status, 'activated');
  assert.equal(key.expires_at, null);
  assert.equal(key.last_used_at, null);
  assert.equal(key.created_by, project.consumerId, 'made by the project\'s owner');
  assert.equal(typeof key.created_at, 'number');
  assert.equal(key.updated_at, key.created_at);

  const current = await service.request('GET', '/v1/key/current', { key: key.key });
  assert.equal(current.status, 200, current.text);
  const { key: _secret, ...read } = key;
  assert.deepEqual({ ...current.body.response, last_used_at: null }, read);
  // key:read only: no app access.
  const apps = await service.request('GET', '/v1/app/list', { key: key.key });
  assert.equal(apps.status, 403, apps.text);

  // A workspace change: its key.created event, origin workspace, no secret in it.
  await service.waitForEvents(project.projectId, 4);
  await service.waitForJobsDrained();
  const { rows } = await service.db.query(
    `SELECT t.name AS type, e.related_table, e.related_id, e.origin, e.ip_address, e.details
     FROM events e JOIN event_types t ON t.id = e.type_id WHERE e.related_id = $1`, [key.id]);
  assert.deepEqual(rows, [{
    type: 'key.created', related_table: 'key', related_id: key.id, origin: 'workspace', ip_address: '127.0.0.1',
    details: { name: 'ci reader', scope: ['key:read', 'event:read'], expires_at: null },
  }]);
});

test('key create without --name or --scope: named "Workspace key", scope *; --ip is recorded', async () => {
  const outcome = await workspace(['key', 'create', '--project', project.projectId, '--ip', '10.1.2.3']);
  assert.equal(outcome.code, 0, outcome.stderr);
  const { key } = JSON.parse(outcome.stdout);
  assert.equal(key.name, 'Workspace key');
  assert.deepEqual(key.scope, ['*']);
  assert.equal((await service.request('GET', '/v1/app/list', { key: key.key })).status, 200);
  await service.waitForJobsDrained();
  const { rows } = await service.db.query('SELECT origin, ip_address FROM events WHERE related_id = $1', [key.id]);
  assert.deepEqual(rows, [{ origin: 'workspace', ip_address: '10.1.2.3' }]);
});

test('key create refuses what the API refuses, and an unknown project, creating nothing', async () => {
  const before = await keyCount(project.projectId);
  const [unknownScope, emptyName, longName, noProject, unknownProject, notAProject] = await Promise.all([
    workspace(['key', 'create', '--project', project.projectId, '--scope', 'key:read', '--scope', 'key:delete']),
    workspace(['key', 'create', '--project', project.projectId, '--name', '  ']),
    workspace(['key', 'create', '--project', project.projectId, '--name', 'x'.repeat(201)]),
    workspace(['key', 'create', '--scope', '*']),
    workspace(['key', 'create', '--project', 'proj_00000000000000000000']),
    workspace(['key', 'create', '--project', project.consumerId]),
  ]);
  assertOutcome(unknownScope, { code: 2, stdout: '', stderr: 'Unknown scope: key:delete.\n' }, 'unknown scope');
  assertOutcome(emptyName, { code: 2, stdout: '', stderr: 'name is required.\n' }, 'blank name');
  assertOutcome(longName, { code: 2, stdout: '', stderr: 'name must be at most 200 characters.\n' }, 'long name');
  assertOutcome(noProject, { code: 2, stdout: '', stderr: '--project is required.\n' }, 'no --project');
  // Not found, like `project disable <unknown>`: exit 1.
  assertOutcome(unknownProject, { code: 1, stdout: '', stderr: 'No project proj_00000000000000000000.\n' }, 'unknown project');
  assertOutcome(notAProject, { code: 1, stdout: '', stderr: `No project ${project.consumerId}.\n` }, 'a consumer id');
  assert.equal(await keyCount(project.projectId), before);
});

test('key create for a disabled project, or one whose owner is disabled, is refused (exit 1), creating nothing: its key could never authenticate', async () => {
  const [disabledProject, disabledOwner] = await Promise.all([service.createProject('Disabled, then keyed'), service.createProject('Owner disabled, then keyed')]);
  assert.equal((await workspace(['project', 'disable', disabledProject.projectId])).code, 0);
  assert.equal((await workspace(['consumer', 'disable', disabledOwner.consumerId])).code, 0);
  const [forProject, forOwner] = await Promise.all([
    workspace(['key', 'create', '--project', disabledProject.projectId]),
    workspace(['key', 'create', '--project', disabledOwner.projectId]),
  ]);
  assertOutcome(forProject, { code: 1, stdout: '', stderr: `Project ${disabledProject.projectId} is disabled.\n` }, 'disabled project');
  assertOutcome(forOwner, { code: 1, stdout: '', stderr: `Consumer ${disabledOwner.consumerId}, the project's owner, is disabled.\n` }, 'disabled owner');
  assert.equal(await keyCount(disabledProject.projectId), 1, 'only the key made with the project');
  assert.equal(await keyCount(disabledOwner.projectId), 1, 'only the key made with the project');
});

test('a command that takes options only refuses a word beside them (it would be ignored): exit 2, nothing made', async () => {
  const before = await keyCount(project.projectId);
  const { rows: [{ n: projects }] } = await service.db.query('SELECT count(*)::int AS n FROM projects');
  const [keyCreate, projectCreate, runRecord] = await Promise.all([
    workspace(['key', 'create', '--project', project.projectId, 'extra']),
    workspace(['project', 'create', '--name', 'Acme', 'Corp']),
    workspace(['run', 'record', '--app', 'mapp_00000000000000000000', '--project', project.projectId, '--status', 'succeeded', 'twice']),
  ]);
  assertOutcome(keyCreate, { code: 2, stdout: '', stderr: 'unexpected argument: extra; key create takes options only.\n' }, 'key create');
  assertOutcome(projectCreate, { code: 2, stdout: '', stderr: 'unexpected argument: Corp; project create takes options only.\n' }, 'project create');
  assertOutcome(runRecord, { code: 2, stdout: '', stderr: 'unexpected argument: twice; run record takes options only.\n' }, 'run record');
  assert.equal(await keyCount(project.projectId), before);
  assert.equal((await service.db.query('SELECT count(*)::int AS n FROM projects')).rows[0].n, projects);
});

test('an option the command does not take, or one given twice (--scope aside), is a usage error: exit 2, nothing made', async () => {
  const before = await keyCount(project.projectId);
  const { rows: [{ n: projects }] } = await service.db.query('SELECT count(*)::int AS n FROM projects');
  const [foreign, foreignToo, twice, projectTwice, ipTwice] = await Promise.all([
    workspace(['project', 'create', '--name', 'Acme', '--file', 'x']),
    workspace(['key', 'create', '--project', project.projectId, '--status', 'succeeded']),
    workspace(['project', 'create', '--name', 'A', '--name', 'B']),
    workspace(['key', 'create', '--project', project.projectId, '--project', project.projectId]),
    workspace(['key', 'create', '--project', project.projectId, '--ip', '10.0.0.1', '--ip', '10.0.0.2']),
  ]);
  assertOutcome(foreign, { code: 2, stdout: '', stderr: `--file is not an option of project create; ${SEE_HELP}\n` }, '--file');
  assertOutcome(foreignToo, { code: 2, stdout: '', stderr: `--status is not an option of key create; ${SEE_HELP}\n` }, '--status');
  assertOutcome(twice, { code: 2, stdout: '', stderr: '--name is given more than once.\n' }, '--name twice');
  assertOutcome(projectTwice, { code: 2, stdout: '', stderr: '--project is given more than once.\n' }, '--project twice');
  assertOutcome(ipTwice, { code: 2, stdout: '', stderr: '--ip is given more than once.\n' }, '--ip twice');
  assert.equal(await keyCount(project.projectId), before);
  assert.equal((await service.db.query('SELECT count(*)::int AS n FROM projects')).rows[0].n, projects);
  // --scope may be repeated, and every command takes --ip.
  assert.equal((await workspace(['key', 'create', '--project', project.projectId, '--scope', 'key:read', '--scope', 'app:read', '--ip', '10.0.0.1'])).code, 0);
});

test('--ip must be an address (it is recorded on the events for good): anything else is a usage error, nothing made', async () => {
  const before = await keyCount(project.projectId);
  for (const ip of ['not an ip', '', '300.1.1.1', '127.0.0.1 ']) {
    assertOutcome(await workspace(['key', 'create', '--project', project.projectId, '--ip', ip]),
      { code: 2, stdout: '', stderr: `--ip takes an IPv4 or IPv6 address, not ${JSON.stringify(ip)}.\n` }, JSON.stringify(ip));
  }
  assert.equal(await keyCount(project.projectId), before);
  for (const ip of ['203.0.113.9', '2001:db8::1']) assert.equal((await workspace(['key', 'create', '--project', project.projectId, '--ip', ip])).code, 0, ip);
});
