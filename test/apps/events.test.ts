import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import { assertSuccess } from '../support/assertions.ts';
import { workspaceFails, workspaceOk } from '../support/cli.ts';
import { ID } from '../support/ids.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { appBody, createApp, events, LOGO_BYTES, logoFile } from './helpers.ts';

let service: TestService;

before(async () => {
  service = await TestService.start();
});
after(() => service.stop());

const EVENT_MEMBERS = ['id', 'object', 'type', 'related', 'origin', 'ip_address', 'details', 'created_at', 'sequence', 'actor', 'hash'];
const LOOPBACK = new Set(['127.0.0.1', '::ffff:127.0.0.1']);
const patch = (p: TestProject, id: string, body: unknown) => service.request('PATCH', `/v1/app/detail/${id}`, { key: p.key, body });

/** The project's app and plan events. Events of one second have no defined order among themselves. */
async function appEvents(p: TestProject): Promise<any[]> {
  const all = await events(service, p.key);
  for (const e of all) {
    assert.deepEqual(Object.keys(e).sort(), [...EVENT_MEMBERS].sort());
    assert.match(e.id, ID.event);
    assert.equal(e.object, 'event');
    assert.ok(typeof e.details === 'object' && e.details !== null, 'details is decoded JSON, never a string');
  }
  return all.filter((e) => e.type.name.startsWith('app.') || e.type.name === 'plan.changed');
}

/** [type, origin] pairs as a sorted multiset: each change exactly once, whatever the order. */
const kinds = (list: any[]) => list.map((e) => `${e.type.name} ${e.origin}`).sort();
const only = (list: any[], type: string) => list.filter((e) => e.type.name === type);

function assertNoSecret(p: TestProject, list: any[]) {
  const text = JSON.stringify(list);
  assert.ok(!text.includes(p.key), 'no key secret');
  assert.ok(!/sk-project-/.test(text), 'no secret-looking value');
  assert.ok(!text.includes(createHash('sha256').update(p.key).digest('hex')), "no secret's hash");
  // Each event's own chain `hash` is hex; its details hold no hash-looking value at all.
  assert.ok(!/[0-9a-f]{64}/.test(JSON.stringify(list.map((e) => e.details))), 'no hash-looking value in details');
}

test('create, rename, publish, unpublish and delete through the API each record one event, origin api', async () => {
  const p = await service.createProject('API events');
  const app = await createApp(service, p.key, { name: 'a', description: 'first' });
  const renamed = assertSuccess(await patch(p, app.id, { name: 'b' }));
  const redescribed = assertSuccess(await patch(p, app.id, { name: 'c', description: 'second' }));
  await workspaceOk(service, ['app', 'logo', app.id, '--file', logoFile(LOGO_BYTES.png, 'logo.png')]);
  const published = assertSuccess(await patch(p, app.id, { type: 'public' }));
  const unpublished = assertSuccess(await patch(p, app.id, { type: 'private' }));
  assertSuccess(await service.request('DELETE', `/v1/app/detail/${app.id}`, { key: p.key }));

  const list = await appEvents(p);
  assert.deepEqual(kinds(list), [
    'app.created api',
    'app.deleted api',
    'app.logo_changed workspace',
    'app.published api',
    'app.unpublished api',
    'app.updated api',
    'app.updated api',
  ]);
  for (const e of list) {
    assert.deepEqual(e.related, { table: 'app', id: app.id }, e.type.name);
    assert.ok(LOOPBACK.has(e.ip_address), `${e.type.name} ip ${e.ip_address}`);
    assert.match(e.type.id, /^evty_[0-9a-f]{20}$/);
  }
  const [created] = only(list, 'app.created');
  assert.equal(created.created_at, app.created_at, 'the time of the change');
  const updates = only(list, 'app.updated');
  const update1 = updates.find((e) => e.details.changes?.name?.to === 'b');
  const update2 = updates.find((e) => e.details.changes?.name?.to === 'c');
  assert.deepEqual(update1.details, { changes: { name: { from: 'a', to: 'b' } } });
  assert.equal(update1.created_at, renamed.updated_at);
  assert.deepEqual(update2.details, { changes: { name: { from: 'b', to: 'c' }, description: { from: 'first', to: 'second' } } });
  assert.equal(update2.created_at, redescribed.updated_at);
  assert.equal(only(list, 'app.published')[0].created_at, published.updated_at);
  assert.equal(only(list, 'app.unpublished')[0].created_at, unpublished.updated_at);
  assertNoSecret(p, await events(service, p.key));

  // One event reads back through its own endpoint.
  const one = assertSuccess(await service.request('GET', `/v1/event/${update1.id}`, { key: p.key }));
  assert.deepEqual(one, update1);
});

test('a PATCH that renames and publishes records one app.updated and one app.published', async () => {
  const p = await service.createProject('Combined patch');
  const app = await createApp(service, p.key, { name: 'before' });
  await workspaceOk(service, ['app', 'logo', app.id, '--file', logoFile(LOGO_BYTES.webp, 'logo.webp')]);
  assertSuccess(await patch(p, app.id, { name: 'after', type: 'public' }));
  const list = await appEvents(p);
  assert.deepEqual(kinds(list), ['app.created api', 'app.logo_changed workspace', 'app.published api', 'app.updated api']);
  assert.deepEqual(only(list, 'app.updated')[0].details, { changes: { name: { from: 'before', to: 'after' } } });
  assert.deepEqual(only(list, 'app.published')[0].details, { changes: { type: { from: 'private', to: 'public' } } });
  assert.ok(only(list, 'app.updated')[0].sequence < only(list, 'app.published')[0].sequence, 'app.updated first, then app.published');
});

test('an event holds exactly the text of its change, whatever SQL or escapes the text spells', async () => {
  // An event is handed over with its values bound (a change of one statement: creation, PATCH)
  // or quoted into the text of its COMMIT's message (the workspace's changes, a deletion).
  const p = await service.createProject('Quoted text');
  const names = [
    "O'Brien's \\app\\", "a\n;\nCOMMIT;\nDROP TABLE audit_outbox; --", "$1 {{id}} E'\\x00' $$ \\\\'", '\u{1F680} \u00e9\u200d\u2028 "quoted"',
  ];
  let current = { name: names[0]!, description: names[1]! };
  const app = await createApp(service, p.key, current);
  const expected = [];
  for (const [i, name] of names.slice(1).entries()) {
    const next = { name, description: names[i]! };
    assertSuccess(await patch(p, app.id, next));
    expected.push({ name: { from: current.name, to: next.name }, description: { from: current.description, to: next.description } });
    current = next;
  }
  const list = await appEvents(p);
  assert.deepEqual(only(list, 'app.created')[0].details.name, names[0]);
  const renames = only(list, 'app.updated').sort((a, b) => a.sequence - b.sequence).map((e) => e.details.changes);
  assert.deepEqual(renames, expected);
  const total = (await events(service, p.key)).length;
  const { checkpoint, ...verdict } = await workspaceOk(service, ['events', 'verify', p.projectId]) as Record<string, unknown>;
  assert.deepEqual(verdict, { project: { id: p.projectId }, events: total, verified: true });
  assert.ok(checkpoint === null || (Number.isInteger(checkpoint) && (checkpoint as number) <= total), `checkpoint ${checkpoint}`);
});

test('workspace changes record app.logo_changed, app.activated and plan.changed, origin workspace', async () => {
  const p = await service.createProject('Workspace events');
  const app = await createApp(service, p.key, { status: 'draft' });
  await workspaceOk(service, ['app', 'logo', app.id, '--file', logoFile(LOGO_BYTES.text, 'notes.txt')]);
  await workspaceOk(service, ['app', 'activate', app.id]);
  await workspaceOk(service, ['app', 'activate', app.id]); // already activated: no change
  await workspaceOk(service, ['plan', 'set', p.projectId, '--app-limit', '5']);
  await workspaceOk(service, ['plan', 'set', p.projectId, '--custom-apps', 'false']);

  const list = await appEvents(p);
  assert.deepEqual(kinds(list), [
    'app.activated workspace',
    'app.created api',
    'app.logo_changed workspace',
    'plan.changed workspace',
    'plan.changed workspace',
  ]);
  for (const e of [...only(list, 'app.logo_changed'), ...only(list, 'app.activated')]) assert.deepEqual(e.related, { table: 'app', id: app.id });
  for (const e of only(list, 'plan.changed')) assert.deepEqual(e.related, { table: 'project', id: p.projectId });
  for (const e of list.filter((x) => x.origin === 'workspace')) assert.equal(e.ip_address, '127.0.0.1', 'the command line records 127.0.0.1');
  assertNoSecret(p, await events(service, p.key));
});

test('refused changes record no event', async () => {
  const p = await service.createProject('No events for failures');
  const app = await createApp(service, p.key, { status: 'draft' });
  assert.deepEqual(kinds(await appEvents(p)), ['app.created api']);

  await service.request('POST', '/v1/app/create', { key: p.key, body: appBody({ name: '' }) });
  await service.request('POST', '/v1/app/create', { key: p.key, body: appBody({ category: 'poetry' }) });
  await patch(p, app.id, { type: 'public' }); // draft: refused
  await patch(p, app.id, { name: '' });
  await patch(p, app.id, {});
  await service.request('DELETE', '/v1/app/detail/mapp_0123456789abcdef0123', { key: p.key });
  await workspaceFails(service, ['app', 'activate', 'mapp_0123456789abcdef0123']);
  await workspaceOk(service, ['plan', 'set', p.projectId, '--custom-apps', 'false']);
  await service.request('POST', '/v1/app/create', { key: p.key, body: appBody() }); // 402

  assert.deepEqual(kinds(await appEvents(p)), ['app.created api', 'plan.changed workspace'], 'only the plan change was recorded');
});

test('events of one project are not in another project\'s trail', async () => {
  const a = await service.createProject('Trail A');
  const b = await service.createProject('Trail B');
  const app = await createApp(service, a.key);
  const aEvents = await appEvents(a);
  assert.ok(aEvents.some((e) => e.related.id === app.id));
  const bEvents = await appEvents(b);
  assert.equal(bEvents.length, 0);
  const foreign = aEvents[0];
  const reply = await service.request('GET', `/v1/event/${foreign.id}`, { key: b.key });
  assert.deepEqual(reply.body, { code: 404, title: 'Not Found', response: 'Event not found.' });
});
