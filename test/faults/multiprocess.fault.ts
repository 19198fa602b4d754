// Many processes on one database (decisions.md "Running it": any number of `web` and `worker`
// processes may share one database): 2 web + 2 worker. A key both web processes know from memory
// (gateway/known-keys.ts) and revoked or rolled through one, disabled with its project or consumer
// through the workspace, or past its expires_at (a roll's cut one too), is refused by each on the
// very next call; one key rolled through both at once is rolled as often as a 201 says; and every
// audit job is processed exactly once.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertError, assertSuccess, MESSAGES } from '../support/assertions.ts';
import { recordFigure } from '../support/figures.ts';
import { ProcessGroup, type ApiClient, type ServiceProcess } from '../support/processes.ts';
import { Secrets } from '../support/secrets.ts';
import { createTestDatabase, type TestProject } from '../support/service.ts';
import { sleep } from '../support/wait.ts';
import {
  Actor, Ledger, assertLogsClean, assertNoProblems, checkEvents, describePending, ledgerProjects, openDb, settleUnknown,
  waitJobsDrained, type Target,
} from './helpers.ts';
import type pg from 'pg';

const SUITE = 'multiprocess';
const REVOCATIONS = 20;
const PROJECTS = 2;
const ACTORS_PER_PROJECT = 3;
const LOAD_MS = 15_000;
/** With traffic flowing until the end, the last jobs are in hand within a few seconds. */
const DRAIN_BOUND_MS = 20_000;

let group: ProcessGroup;
let db: pg.Pool;
const webs: ServiceProcess[] = [];
const workers: ServiceProcess[] = [];
const clients: ApiClient[] = [];
const ledger = new Ledger();
const secrets = new Secrets();
let projects: TestProject[] = [];

before(async () => {
  const url = await createTestDatabase();
  group = new ProcessGroup(url, 'multiprocess');
  db = openDb(url);
  await group.release();
  for (const name of ['web-a', 'web-b']) webs.push(await group.startWeb(name));
  for (const name of ['worker-1', 'worker-2']) workers.push(await group.startWorker(name));
  for (const web of webs) clients.push(group.client(web, { timeoutMs: 20_000 }));
  projects = await ledgerProjects(group, ledger, secrets, Array.from({ length: PROJECTS }, (_, i) => `Multiprocess ${i}`));
});

after(async () => {
  await group?.stopAll();
  await db?.end();
});

test(`a key revoked through one web process is refused (403) by the other on the very next call (${REVOCATIONS} times)`, async () => {
  const owner = projects[0]!;
  for (let i = 0; i < REVOCATIONS; i++) {
    // Alternate: revoke through A and call B, then revoke through B and call A.
    const [revoker, caller] = i % 2 === 0 ? [clients[0]!, clients[1]!] : [clients[1]!, clients[0]!];
    const made = assertSuccess(await revoker.request('POST', '/v1/key', { key: owner.key, body: { name: ledger.uniqueName('key'), scope: ['key:read'] } }), 201, 'create');
    secrets.add(made.key);
    ledger.changes.push({ type: 'key.created', projectId: owner.projectId, relatedId: made.id, name: made.name, outcome: 'committed', via: 'revoker', answers: [201] });
    assertSuccess(await caller.request('GET', '/v1/key/current', { key: made.key }), 200, 'the new key works on the other process');
    assertSuccess(await revoker.request('GET', '/v1/key', { key: made.key }), 200, 'and on the revoking one: both know it now');
    assertSuccess(await revoker.request('DELETE', `/v1/key/${made.id}`, { key: owner.key }), 200, 'revoke');
    ledger.changes.push({ type: 'key.revoked', projectId: owner.projectId, relatedId: made.id, outcome: 'committed', via: 'revoker', answers: [200] });
    assertError(await caller.request('GET', '/v1/key/current', { key: made.key }), 403, MESSAGES.refused, `revocation ${i}: the very next call on the other process`);
    assertError(await revoker.request('GET', '/v1/key/current', { key: made.key }), 403, MESSAGES.refused, `revocation ${i}: and on the revoking process`);
  }
  recordFigure(SUITE, 'revocations seen by the other web process at once', REVOCATIONS);
});

/** Calls on both web processes, so that each knows the key (gateway/known-keys.ts). */
async function knownToBoth(key: string): Promise<void> {
  for (const client of clients) assertSuccess(await client.request('GET', '/v1/key', { key }), 200, 'the key works on both processes');
}

async function refusedByBoth(key: string, status: number, message: string, what: string): Promise<void> {
  for (const [i, client] of clients.entries()) {
    assertError(await client.request('GET', '/v1/key', { key }), status, message, `${what}: the very next call on web ${i}`);
  }
}

test('a key both web processes know is refused by each on the very next call when the workspace disables its project or consumer', async () => {
  const doomed = await group.createProject('Project to disable');
  secrets.add(doomed.key);
  await knownToBoth(doomed.key);
  await group.workspace('project', 'disable', doomed.projectId);
  await refusedByBoth(doomed.key, 403, MESSAGES.refused, 'project disabled');

  const orphaned = await group.createProject('Consumer to disable');
  secrets.add(orphaned.key);
  await knownToBoth(orphaned.key);
  await group.workspace('consumer', 'disable', orphaned.consumerId);
  await refusedByBoth(orphaned.key, 403, MESSAGES.refused, 'consumer disabled');
});

test('a key both web processes know answers 401 on each from the second its expires_at passes', async () => {
  // A project out of the ledger: the key.expire job, each minute, may record key.expired for it.
  const owner = await group.createProject('Expiring key');
  secrets.add(owner.key);
  const expiresAt = Math.floor(Date.now() / 1000) + 3;
  const made = assertSuccess(await clients[0]!.request('POST', '/v1/key', { key: owner.key, body: { name: ledger.uniqueName('key'), scope: ['key:read'], expires_at: expiresAt } }), 201, 'create');
  secrets.add(made.key);
  await knownToBoth(made.key);
  await sleep(Math.max(0, expiresAt * 1000 - Date.now()) + 50);
  await refusedByBoth(made.key, 401, MESSAGES.expired, 'expires_at passed');
});

const OUTLIVES = 'Cannot create a key that outlives the calling key.';
const ROLL_RACES = 10;

/** A key of a rolls' project (out of the ledger, as the expiring key's), made through A. */
async function rollTarget(rolls: TestProject, scope: string[]): Promise<{ id: string; key: string }> {
  const made = assertSuccess(await clients[0]!.request('POST', '/v1/key', { key: rolls.key, body: { name: ledger.uniqueName('rolled'), scope } }), 201, 'create');
  secrets.add(made.key);
  return made;
}

async function roll(via: ApiClient, rolls: TestProject, keyId: string, grace: number) {
  const reply = await via.request('POST', `/v1/key/${keyId}/roll`, { key: rolls.key, body: { grace_s: grace } });
  if (reply.status === 201) secrets.add(reply.body.response.key);
  return reply;
}

test('a key both web processes know, rolled through one, keeps working on the other until its cut second, then is expired, revoked or bounded there', async () => {
  const rolls = await group.createProject('Rolls');
  secrets.add(rolls.key);
  const [a, b] = clients as [ApiClient, ApiClient];

  // grace_s 2: B answers K until the second the roll cut, and 401 from the very next call.
  const k = await rollTarget(rolls, ['key:read']);
  await knownToBoth(k.key);
  assertSuccess(await roll(a, rolls, k.id, 2), 201, 'roll K through A');
  const cut = assertSuccess(await b.request('GET', '/v1/key/current', { key: k.key }), 200, 'B, from memory').expires_at * 1000;
  const during: Array<{ status: number; answeredAt: number }> = [];
  while (Date.now() < cut) {
    const reply = await b.request('GET', '/v1/key/current', { key: k.key });
    during.push({ status: reply.status, answeredAt: Date.now() });
    if (reply.status === 200) assert.equal(reply.body.response.expires_at * 1000, cut, 'B shows the cut expiry');
    await sleep(Math.min(100, Math.max(0, cut - Date.now())));
  }
  const early = during.filter((call) => call.answeredAt < cut && call.status !== 200);
  assert.deepEqual(early, [], 'refused on B before the cut second');
  assert.ok(during.filter((call) => call.answeredAt < cut).length >= 5, `B answered K through the grace (${during.length} calls)`);
  await refusedByBoth(k.key, 401, MESSAGES.expired, 'K past its cut second');
  recordFigure(SUITE, 'calls B answered with a rolled key in its 2 s grace, then 401', during.filter((call) => call.status === 200).length);

  // grace_s 0: revoked, refused by B on its very next call as any revoked key.
  const l = await rollTarget(rolls, ['key:read']);
  await knownToBoth(l.key);
  assertSuccess(await roll(a, rolls, l.id, 0), 201, 'roll L through A, grace_s 0');
  await refusedByBoth(l.key, 403, MESSAGES.refused, 'L rolled with grace_s 0');

  // A grace: B remembers M with no expiry, yet M cannot make a key that outlives its cut one.
  const m = await rollTarget(rolls, ['key:*']);
  await knownToBoth(m.key);
  assertSuccess(await roll(a, rolls, m.id, 3600), 201, 'roll M through A');
  for (const [i, client] of clients.entries()) {
    assertError(await client.request('POST', '/v1/key', { key: m.key, body: { name: ledger.uniqueName('key'), scope: ['key:read'] } }), 403, OUTLIVES, `M on web ${i}`);
  }
});

test(`one key rolled through both web processes at once (${ROLL_RACES} times each with grace_s 0 and 60): each roll commits or is 404, one key.created and one key.rolled per 201`, async () => {
  const rolls = await group.createProject('Roll races');
  secrets.add(rolls.key);
  await knownToBoth(rolls.key);
  const outcomes: Record<number, string[]> = { 0: [], 60: [] };
  const made = new Map<string, string[]>();
  for (const grace of [0, 60]) {
    for (let i = 0; i < ROLL_RACES; i++) {
      const old = await rollTarget(rolls, ['key:read']);
      const replies = await Promise.all(clients.map((client) => roll(client, rolls, old.id, grace)));
      for (const reply of replies) {
        if (reply.status !== 201) assertError(reply, 404, MESSAGES.keyNotFound, `race ${i}, grace_s ${grace}`);
      }
      const created = replies.filter((reply) => reply.status === 201).map((reply) => reply.body.response.id as string);
      // grace_s 0 revokes the old key: the roll that waited on the first finds it gone.
      if (grace === 0) assert.equal(created.length, 1, `race ${i}: one roll with grace_s 0 commits`);
      else assert.equal(created.length, 2, `race ${i}: both rolls with a grace commit`);
      outcomes[grace]!.push(replies.map((reply) => reply.status).join('/'));
      made.set(old.id, created);
    }
  }
  for (const [grace, seen] of Object.entries(outcomes)) {
    const tally = [...new Set(seen)].sort().map((pair) => `${pair} x${seen.filter((s) => s === pair).length}`);
    recordFigure(SUITE, `simultaneous rolls through A/B, grace_s ${grace}`, tally.join(', '));
  }

  const { drained, last } = await waitJobsDrained(db, DRAIN_BOUND_MS);
  assert.ok(drained, `jobs still pending:\n${describePending(last)}`);
  const { rows: events } = await db.query<{ type: string; related_id: string; details: any }>(
    `SELECT t.name AS type, e.related_id, e.details FROM events e JOIN event_types t ON t.id = e.type_id
     WHERE e.project_id = $1 AND t.name IN ('key.created', 'key.rolled')`, [rolls.projectId]);
  const problems: string[] = [];
  for (const [old, created] of made) {
    const rolled = events.filter((e) => e.type === 'key.rolled' && e.related_id === old).map((e) => e.details.replaced_by).sort();
    const from = events.filter((e) => e.type === 'key.created' && e.details.rolled_from === old).map((e) => e.related_id).sort();
    if (JSON.stringify(rolled) !== JSON.stringify([...created].sort())) problems.push(`${old}: key.rolled for ${rolled.join(', ')}, rolls answered 201 ${created.join(', ')}`);
    if (JSON.stringify(from) !== JSON.stringify([...created].sort())) problems.push(`${old}: key.created rolled from it for ${from.join(', ')}, rolls answered 201 ${created.join(', ')}`);
  }
  assertNoProblems(problems, 'roll events against the 201s');
});

test('under concurrent changes through both web processes, every change\'s event is drained exactly once, and every drain job completes', async () => {
  const targets: Target[] = webs.map((web, i) => ({ name: web.name, client: clients[i]! }));
  const actors = projects.flatMap((project) => Array.from({ length: ACTORS_PER_PROJECT },
    () => new Actor(project, targets, ledger, secrets, { timeoutMs: 20_000 })));
  let stop = false;
  const running = actors.map((actor) => actor.run(() => stop));
  await sleep(LOAD_MS);
  stop = true;
  await Promise.all(running);
  assertNoProblems(ledger.unexpected, 'answers no client should get');

  const { drained, ms, last } = await waitJobsDrained(db, DRAIN_BOUND_MS);
  recordFigure(SUITE, drained ? 'jobs drained after the load, ms' : `jobs pending ${DRAIN_BOUND_MS / 1000} s after the load`, drained ? ms : `${last.total} ${JSON.stringify(last.byState)}`);
  assert.ok(drained, `jobs still pending:\n${describePending(last)}`);

  assert.equal(await settleUnknown(db, ledger), 0, 'no change went unanswered (no process was harmed)');
  const projectIds = projects.map((p) => p.projectId);
  const check = await checkEvents(db, ledger, projectIds);
  recordFigure(SUITE, 'changes committed (incl. project setup)', check.committed);
  recordFigure(SUITE, 'events checked', check.checked);
  assertNoProblems(check.problems, 'events against committed changes');
  assert.equal(check.checked, check.committed, 'events == committed changes');

  // The hand-over's side: no job per change, nothing left in audit_outbox, every drain job completed.
  const { rows: jobs } = await db.query<{ name: string; state: string; n: number }>(
    "SELECT name, state::text, count(*)::int AS n FROM pgboss.job WHERE name IN ('audit.write', 'audit.drain') GROUP BY 1, 2");
  const { rows: [outbox] } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_outbox');
  const problems = jobs.filter((job) => job.name === 'audit.write' || job.state !== 'completed').map((job) => `${job.n} ${job.name} job(s) ${job.state}`);
  if (outbox!.n > 0) problems.push(`${outbox!.n} events left in audit_outbox`);
  recordFigure(SUITE, 'audit.drain jobs completed, for events', `${jobs.find((job) => job.name === 'audit.drain' && job.state === 'completed')?.n ?? 0}, ${check.checked}`);
  assertNoProblems(problems, 'audit hand-over');
});

test('the logs of every process hold no key secret, no secret hash and no Authorization value', () => {
  recordFigure(SUITE, 'log files checked for leaks', assertLogsClean(group, secrets));
});
