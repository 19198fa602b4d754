// A change made with a key and that key's revocation, or its project's disable, are in one order:
// the change commits before the revocation commits, or it is refused (sql/migrations/0014). Each
// change is held in flight at a chosen point by a row lock the test holds, as a slow change would be.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { disableProject } from '../../domain/projects.ts';
import { appBody } from '../apps/helpers.ts';
import { assertError, assertSuccess, MESSAGES } from '../support/assertions.ts';
import { createKey } from '../support/keys.ts';
import { countLocks, holdLock, lockWaiters } from '../support/locks.ts';
import { TestService, type Reply, type TestProject } from '../support/service.ts';
import { sleep, waitFor } from '../support/wait.ts';

const WORKSPACE = { origin: 'workspace' as const, ip: '127.0.0.1' };

let service: TestService;

before(async () => {
  service = await TestService.start();
});
after(() => service.stop());

/** A new key of the project, called once so that the process knows it. */
async function knownKey(project: TestProject, name: string) {
  const made = await createKey(service, project.key, { name, scope: ['*'] });
  assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));
  return made;
}

/** A revocation or a disable holds its change lock (hold_changes_of, sql/migrations/0014). */
async function endingHoldsChanges(): Promise<boolean> {
  return (await countLocks(service.db, "locktype = 'advisory' AND granted AND mode = 'ExclusiveLock' AND classid::int IN (1801, 1802, 1803)")) >= 1;
}

/**
 * Sessions of this test's database waiting for an advisory lock: changes held behind a
 * revocation, or the reverse. Another test file's waiter, on the same server at the same moment,
 * would let this one go on before its own change waited.
 */
async function advisoryWaiters(): Promise<number> {
  return countLocks(service.db, "locktype = 'advisory' AND NOT granted");
}

/** Whether the promise is still pending after `ms`. */
async function pendingAfter(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false;
  void promise.then(() => { settled = true; }, () => { settled = true; });
  await sleep(ms);
  return !settled;
}

/** The sequences of the project's events of these types, by type. */
async function sequences(projectId: string, types: string[]): Promise<Record<string, number[]>> {
  await service.waitForJobsDrained();
  const { rows } = await service.db.query(
    `SELECT t.name, e.sequence::int AS sequence FROM events e JOIN event_types t ON t.id = e.type_id
     WHERE e.project_id = $1 AND t.name = ANY ($2) ORDER BY e.sequence`, [projectId, types]);
  const byType: Record<string, number[]> = {};
  for (const { name, sequence } of rows) (byType[name] ??= []).push(sequence);
  return byType;
}

test('a change in flight when its key is revoked commits first; the revocation waits for it', async () => {
  const project = await service.createProject('Change before revocation');
  const changer = await knownKey(project, 'changer');
  const app = assertSuccess(await service.request('POST', '/v1/app/create', { key: project.key, body: appBody() }));
  const held = await holdLock(service.db, 'SELECT id FROM apps WHERE id = $1 AND project_id = $2 FOR UPDATE', [app.id, project.projectId]);
  let patch: Promise<Reply>;
  let revoke: Promise<Reply>;
  try {
    patch = service.request('PATCH', `/v1/app/detail/${app.id}`, { key: changer.key, body: { name: 'renamed in flight' } });
    // The PATCH has checked its key and waits on the app's row.
    await waitFor('the PATCH to wait on the app', async () => (await lockWaiters(service.db, held)) >= 1 || undefined);
    revoke = service.request('DELETE', `/v1/key/${changer.id}`, { key: project.key });
    await waitFor('the revocation to wait for the change', async () => (await advisoryWaiters()) >= 1 || undefined);
    assert.ok(await pendingAfter(revoke, 200), 'the revocation waits while the change is in flight');
  } finally {
    await held.release();
  }
  assertSuccess(await patch!, 200, 'the change checked before the revocation');
  assertSuccess(await revoke!, 200, 'the revocation, once the change committed');
  assertError(await service.request('GET', '/v1/key/current', { key: changer.key }), 403, MESSAGES.refused);
  const order = await sequences(project.projectId, ['app.updated', 'key.revoked']);
  assert.ok(order['app.updated']![0]! < order['key.revoked']![0]!, `the change's event before the revocation's: ${JSON.stringify(order)}`);
});

/**
 * Starts `ending` (a revocation or a disable), which takes its advisory lock and then waits on a
 * row the test holds; then `change`, which must wait for `ending`; then lets both go.
 */
async function changeBehind<E>(row: { sql: string; id: string; project?: string }, ending: () => Promise<E>, change: () => Promise<Reply>): Promise<[E, Reply]> {
  const held = await holdLock(service.db, row.sql, row.project ? [row.id, row.project] : [row.id]);
  let ended: Promise<E>;
  let changed: Promise<Reply>;
  try {
    ended = ending();
    // Its change lock taken too: another session waiting on the row (the drain's foreign-key check
    // of an event of the project) would otherwise let the change go first, in flight before it.
    await waitFor('the revocation or disable to wait on the held row', async () => ((await lockWaiters(service.db, held)) >= 1 && await endingHoldsChanges()) || undefined);
    changed = change();
    await waitFor('the change to wait for it', async () => (await advisoryWaiters()) >= 1 || undefined);
  } finally {
    await held.release();
  }
  return [await ended!, await changed!];
}

test('a change checked while its key\'s revocation is in flight waits for it, then is refused', async () => {
  const project = await service.createProject('Revocation before change');
  const changer = await knownKey(project, 'changer');
  const [revoked, created] = await changeBehind(
    { sql: 'SELECT id FROM api_keys WHERE id = $1 AND project_id = $2 FOR UPDATE', id: changer.id, project: project.projectId },
    () => service.request('DELETE', `/v1/key/${changer.id}`, { key: project.key }),
    () => service.request('POST', '/v1/key', { key: changer.key, body: { name: 'minted by a key being revoked', scope: ['key:read'] } }));
  assertSuccess(revoked, 200);
  assertError(created, 403, MESSAGES.refused);
  const { rows } = await service.db.query(`SELECT count(*)::int AS n FROM api_keys WHERE name = 'minted by a key being revoked'`);
  assert.equal(rows[0].n, 0, 'no key minted by the revoked key');
});

test('two keys revoking each other at once: exactly one revocation succeeds, the other key is refused', async () => {
  for (let round = 0; round < 10; round++) {
    const project = await service.createProject(`Mutual ${round}`);
    const a = await knownKey(project, 'a');
    const b = await knownKey(project, 'b');
    const [byA, byB] = await Promise.all([
      service.request('DELETE', `/v1/key/${b.id}`, { key: a.key }),
      service.request('DELETE', `/v1/key/${a.id}`, { key: b.key }),
    ]);
    const statuses = [byA.status, byB.status].sort();
    assert.deepEqual(statuses, [200, 403], `round ${round}: ${byA.text} / ${byB.text}`);
    const refused = byA.status === 403 ? byA : byB;
    assertError(refused, 403, MESSAGES.refused);
    const { rows } = await service.db.query(`SELECT count(*)::int AS n FROM api_keys WHERE id IN ($1, $2) AND status = 'revoked'`, [a.id, b.id]);
    assert.equal(rows[0].n, 1, `round ${round}: one key revoked`);
  }
});

test('a change checked while its project is being disabled waits for the disable, then is refused', async () => {
  const project = await service.createProject('Disabled under a change');
  const changer = await knownKey(project, 'changer');
  const [, created] = await changeBehind(
    { sql: 'SELECT id FROM projects WHERE id = $1 FOR UPDATE', id: project.projectId },
    () => disableProject(service.services, WORKSPACE, project.projectId),
    () => service.request('POST', '/v1/app/create', { key: changer.key, body: appBody({ name: 'made in a disabled project' }) }));
  assertError(created, 403, MESSAGES.refused);
  const { rows } = await service.db.query(`SELECT count(*)::int AS n FROM apps WHERE project_id = $1`, [project.projectId]);
  assert.equal(rows[0].n, 0, 'no app made in the disabled project');
});

test('a key created while its project is being disabled waits for the disable, then is refused: its one statement holds the key and its owners before it writes or locks a row', async () => {
  const project = await service.createProject('Disabled under a key creation');
  const changer = await knownKey(project, 'changer');
  // The test holds the project's row: a creation that wrote its key first would wait on that row
  // (the key's owners are read FOR SHARE), not on the disable's advisory lock, and this would time out.
  const [, created] = await changeBehind(
    { sql: 'SELECT id FROM projects WHERE id = $1 FOR UPDATE', id: project.projectId },
    () => disableProject(service.services, WORKSPACE, project.projectId),
    () => service.request('POST', '/v1/key', { key: changer.key, body: { name: 'minted in a disabled project', scope: ['key:read'] } }));
  assertError(created, 403, MESSAGES.refused);
  const { rows } = await service.db.query(`SELECT count(*)::int AS n FROM api_keys WHERE name = 'minted in a disabled project'`);
  assert.equal(rows[0].n, 0, 'no key minted in the disabled project');
  const { rows: handedOver } = await service.db.query(
    `SELECT count(*)::int AS n FROM audit_outbox o JOIN event_types t ON t.id = o.type_id WHERE o.project_id = $1 AND t.name = 'key.created'`, [project.projectId]);
  assert.equal(handedOver[0].n, 0, 'no key.created handed over for it');
});
