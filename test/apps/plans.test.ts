import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { setPlan } from '../../domain/projects.ts';
import { assertError, assertSuccess } from '../support/assertions.ts';
import { afterWaitingOn, holdLock } from '../support/locks.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { appBody, createApp } from './helpers.ts';

let service: TestService;

before(async () => {
  service = await TestService.start();
});
after(() => service.stop());

const NO_CUSTOM_APPS = 'The current billing plan does not allow custom app creation for this project.';
const LIMIT_REACHED = 'The current billing plan app limit has been reached for this project.';
const workspaceActor = { origin: 'workspace' as const, ip: '127.0.0.1' };

const plan = (p: TestProject, values: { customApps?: boolean; appLimit?: number }) =>
  setPlan(service.services, workspaceActor, p.projectId, values);
const create = (p: TestProject, body: unknown = appBody()) => service.request('POST', '/v1/app/create', { key: p.key, body });
const total = async (p: TestProject) => assertSuccess(await service.request('GET', '/v1/app/list', { key: p.key })).total as number;

test('a plan without custom apps refuses creation with 402 Payment Required', async () => {
  const p = await service.createProject('No custom apps');
  await createApp(service, p.key);
  await plan(p, { customApps: false });

  const reply = await create(p);
  assertError(reply, 402, NO_CUSTOM_APPS);
  assert.equal(await total(p), 1, 'nothing was created');

  // Turning custom apps back on allows creation again.
  await plan(p, { customApps: true });
  await createApp(service, p.key);
  assert.equal(await total(p), 2);
});

test('the plan is checked before validation: an invalid body still gets 402', async () => {
  const p = await service.createProject('Plan before validation');
  await plan(p, { customApps: false });
  assertError(await create(p, {}), 402, NO_CUSTOM_APPS);
  assertError(await create(p, appBody({ name: '' })), 402, NO_CUSTOM_APPS);
  assertError(await create(p, appBody({ category: 'poetry' })), 402, NO_CUSTOM_APPS);
  assertError(await create(p, appBody({ data: [{ type: 'video', name: 'x', required: true }] })), 402, NO_CUSTOM_APPS);

  const limited = await service.createProject('Limit before validation');
  await plan(limited, { appLimit: 1 });
  await createApp(service, limited.key);
  assertError(await create(limited, {}), 402, LIMIT_REACHED);
  assertError(await create(limited, appBody({ data: [] })), 402, LIMIT_REACHED);
  assertError(await create(limited, appBody({ type: 'secret' })), 402, LIMIT_REACHED);
});

test('at the app limit creation gets 402; below it creation works', async () => {
  const p = await service.createProject('Limit two');
  await plan(p, { appLimit: 2 });
  await createApp(service, p.key, { name: 'first' });
  await createApp(service, p.key, { name: 'second', status: 'draft' });
  assertError(await create(p), 402, LIMIT_REACHED);
  assert.equal(await total(p), 2);

  // Raising the limit lets one more in, then the new limit holds.
  await plan(p, { appLimit: 3 });
  await createApp(service, p.key, { name: 'third' });
  assertError(await create(p), 402, LIMIT_REACHED);
  assert.equal(await total(p), 3);
});

test("the plan's answer comes first for any body, one with a field name past what one index entry holds too", async () => {
  const p = await service.createProject('Closed, long names');
  await plan(p, { customApps: false });
  const data = [{ type: 'input', name: randomBytes(6000).toString('base64url'), required: true }];
  assertError(await create(p, appBody({ data })), 402, NO_CUSTOM_APPS);
  await plan(p, { customApps: true, appLimit: 0 });
  assertError(await create(p, appBody({ data })), 402, LIMIT_REACHED);
  assert.equal(await total(p), 0);
});

test('an app limit of 0 refuses the first app', async () => {
  const p = await service.createProject('Limit zero');
  await plan(p, { appLimit: 0 });
  assertError(await create(p), 402, LIMIT_REACHED);
  assert.equal(await total(p), 0);
});

test('deleted apps do not count towards the limit', async () => {
  const p = await service.createProject('Limit with deletions');
  await plan(p, { appLimit: 2 });
  const a = await createApp(service, p.key, { name: 'a' });
  await createApp(service, p.key, { name: 'b' });
  assertError(await create(p), 402, LIMIT_REACHED);

  assertSuccess(await service.request('DELETE', `/v1/app/detail/${a.id}`, { key: p.key }));
  const c = await createApp(service, p.key, { name: 'c' });
  assert.ok(c.id);
  assertError(await create(p), 402, LIMIT_REACHED);
  assert.equal(await total(p), 2);
});

test("one project's plan does not affect another project", async () => {
  const closed = await service.createProject('Closed');
  const open = await service.createProject('Open');
  await plan(closed, { customApps: false, appLimit: 0 });
  assert.equal(typeof (await createApp(service, open.key)).id, 'string');
});

test('the default plan allows custom apps', async () => {
  const p = await service.createProject('Default plan');
  for (let i = 0; i < 3; i++) await createApp(service, p.key, { name: `app ${i}` });
  assert.equal(await total(p), 3);
});

test('concurrent creations at the limit: exactly the allowance succeeds', async () => {
  const p = await service.createProject('Racing');
  await plan(p, { appLimit: 3 });
  const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => create(p, appBody({ name: `race ${i}` }))));
  const ok = replies.filter((r) => r.status === 200);
  const refused = replies.filter((r) => r.status === 402);
  assert.equal(ok.length, 3, replies.map((r) => r.status).join(','));
  assert.equal(refused.length, 5);
  for (const r of refused) assertError(r, 402, LIMIT_REACHED);
  assert.equal(await total(p), 3);
});

test('creations that wrote their apps while the admission was held: exactly the allowance commits', async () => {
  // Each creation writes its app and then waits for its project's admission, held here
  // exclusively (as a plan's change holds it) until every connection of the service's pool has a
  // creation waiting on it; then all go at once. A count taken before the wait, not after it,
  // would let each of them pass.
  const p = await service.createProject('Racing behind the admission');
  await plan(p, { appLimit: 2 });
  const db = service.services.pool;
  const lock = await holdLock(db, "SELECT hold_changes_of('admission', $1, $1)", [p.projectId]);
  const replies = await afterWaitingOn(db, lock, 'every pool connection waiting on the admission',
    () => Promise.all(Array.from({ length: 6 }, (_, i) => create(p, appBody({ name: `queued ${i}` })))), service.config.dbPoolSize, 10_000);
  assert.deepEqual(replies.map((r) => r.status).sort(), [200, 200, 402, 402, 402, 402]);
  for (const r of replies.filter((reply) => reply.status === 402)) assertError(r, 402, LIMIT_REACHED);
  assert.equal(await total(p), 2);
});

// Far from the limit: more apps below it than the server could have creations in flight at once.
const FAR_FROM_ANY_LIMIT = 1_000_000;
const IN_FLIGHT_ADMISSION = 'SELECT plan_admission($1)';

/** `reply`, or a failure once `ms` pass: a creation that waits would otherwise hold the test. */
async function within<T>(ms: number, what: string, reply: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms); });
  try {
    return await Promise.race([reply, late]);
  } finally {
    clearTimeout(timer);
  }
}

test('far from the limit, a creation does not wait for another in flight', async () => {
  const p = await service.createProject('Far from the limit');
  await plan(p, { appLimit: FAR_FROM_ANY_LIMIT });
  const lock = await holdLock(service.services.pool, IN_FLIGHT_ADMISSION, [p.projectId]);
  try {
    const reply = await within(5000, 'a creation beside one in flight', create(p, appBody({ name: 'beside' })));
    assert.equal(assertSuccess(reply).name, 'beside');
  } finally {
    await lock.release();
  }
  assert.equal(await total(p), 1);
});

test('near the limit, a creation waits for the one in flight', async () => {
  const p = await service.createProject('Near the limit');
  await plan(p, { appLimit: 2 });
  const db = service.services.pool;
  const lock = await holdLock(db, IN_FLIGHT_ADMISSION, [p.projectId]);
  const behind = await afterWaitingOn(db, lock, 'the creation waiting on the one in flight', () => create(p, appBody({ name: 'behind' })));
  assert.equal(assertSuccess(behind).name, 'behind');
  assert.equal(await total(p), 1);
});

test('a creation that comes near the limit waits for one admitted far from it, then counts what it committed', async () => {
  // A limit of exactly as many transactions as the server could have open: with no app yet, a
  // creation is far from it and holds the admission shared; once one app has committed, the next
  // is near it, and must wait for every creation still in flight.
  const db = service.services.pool;
  const { rows: [{ most }] } = await db.query('SELECT transactions_at_most()::int AS most');
  const p = await service.createProject('Coming near the limit');
  await plan(p, { appLimit: most });
  const lock = await holdLock(db, IN_FLIGHT_ADMISSION, [p.projectId]);
  try {
    const far = await within(5000, 'a creation far from the limit', create(p, appBody({ name: 'far' })));
    assert.equal(assertSuccess(far).name, 'far');
  } catch (err) {
    await lock.release();
    throw err;
  }
  const near = await afterWaitingOn(db, lock, 'the creation near the limit waiting on the one in flight', () => create(p, appBody({ name: 'near' })));
  assert.equal(assertSuccess(near).name, 'near');
  assert.equal(await total(p), 2);
});

test("a plan's change waits for the creations in flight, and the next creation reads the plan it left", async () => {
  const p = await service.createProject('Plan changed in flight');
  await plan(p, { appLimit: FAR_FROM_ANY_LIMIT });
  const db = service.services.pool;
  const lock = await holdLock(db, IN_FLIGHT_ADMISSION, [p.projectId]);
  const changed = await afterWaitingOn(db, lock, "the plan's change waiting on the creation in flight", () => plan(p, { customApps: false }));
  assert.deepEqual(changed.plan, { custom_apps: false, app_limit: FAR_FROM_ANY_LIMIT, rate_limit: null });
  assertError(await create(p), 402, NO_CUSTOM_APPS);
  assert.equal(await total(p), 0);
});
