// Crashes: `worker` and `web` are killed -9 at random moments under a steady stream of changes.
// Every committed change has exactly one event, no uncommitted one has any, no job is left stuck,
// and stream followers over two web processes end up with each project's events 1..N exactly once.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { recordFigure } from '../support/figures.ts';
import { ProcessGroup, type ApiClient, type ServiceProcess } from '../support/processes.ts';
import { Secrets } from '../support/secrets.ts';
import { createTestDatabase, type TestProject } from '../support/service.ts';
import { sleep } from '../support/wait.ts';
import {
  Actor, Ledger, assertLogsClean, assertNoProblems, checkEvents, describePending, fastForwardExpiry, openDb,
  random, settleUnknown, waitJobsDrained, type PendingJobs,
} from './helpers.ts';
import { StreamFollower, checkFollowers, followerFigures } from './stream-client.ts';
import type pg from 'pg';

const SUITE = 'crash';
const KILLS_PER_KIND = 22;
const PROJECTS = 3;
const ACTORS_PER_PROJECT = 2;
const STREAMS_PER_PROJECT = 2;
/** A stream client also drops its own connection now and then, as a flaky network would. */
const STREAM_DROP_AFTER_MS: [number, number] = [1000, 6000];
/** A worker's life between kills: from "handlers registered" to the kill. */
const WORKER_LIFE_MS: [number, number] = [50, 1500];
const WEB_LIFE_MS: [number, number] = [50, 1500];
/** How long a process stays dead before its restart. */
const DEAD_MS: [number, number] = [0, 300];
/**
 * Jobs a killed worker held must be back in a live worker's hands within this long of the load
 * stopping. pg-boss takes an active job back only once its expire_seconds (default 900 s) have
 * passed, checked on its supervise pass (every 60 s); the figure the run records says how long it was.
 */
const DRAIN_BOUND_MS = 60_000;
/** After moving orphaned jobs' start back past their expiry: two supervise passes and a margin. */
const RECOVERY_BOUND_MS = 150_000;

let group: ProcessGroup;
let db: pg.Pool;
let web: ServiceProcess;
let worker: ServiceProcess;
/** A second web process, never killed: stream clients reconnect to whichever answers. */
let streamWeb: ServiceProcess;
let client: ApiClient;
let followers: StreamFollower[] = [];
const ledger = new Ledger();
const secrets = new Secrets();
const projects: TestProject[] = [];
let actors: Actor[] = [];
let drainedInBound = false;
let pendingAfterBound: PendingJobs | undefined;

before(async () => {
  const url = await createTestDatabase();
  group = new ProcessGroup(url, 'crash');
  db = openDb(url);
  await group.release();
  web = await group.startWeb('web');
  worker = await group.startWorker('worker');
  client = group.client(web, { timeoutMs: 20_000 });
  for (let i = 0; i < PROJECTS; i++) {
    const project = await group.createProject(`Crash ${i}`);
    secrets.add(project.key);
    ledger.addProject(project);
    projects.push(project);
  }
  actors = projects.flatMap((project) => Array.from({ length: ACTORS_PER_PROJECT },
    () => new Actor(project, [{ name: 'web', client }], ledger, secrets, { retryForMs: 60_000, timeoutMs: 20_000 })));
  streamWeb = await group.startWeb('web-streams');
  const targets = [web, streamWeb].map((p) => ({ name: p.name, baseUrl: p.baseUrl }));
  followers = projects.flatMap((project, i) => Array.from({ length: STREAMS_PER_PROJECT },
    (_, j) => new StreamFollower(`stream ${i}.${j}`, project, () => targets, group.ca, { dropAfterMs: STREAM_DROP_AFTER_MS })));
  for (const follower of followers) follower.start();
});

after(async () => {
  await Promise.all(followers.map((f) => f.stop()));
  await group?.stopAll();
  await db?.end();
});

/** Runs every actor until `faults` is done, then lets each finish the change in hand. */
async function underLoad(faults: () => Promise<void>): Promise<void> {
  let stop = false;
  const running = actors.map((actor) => actor.run(() => stop));
  try {
    await faults();
  } finally {
    stop = true;
    await Promise.all(running);
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

function assertNoUnexpected(from: number, what: string): void {
  assertNoProblems(ledger.unexpected.slice(from), `${what}: answers no client should get`);
}

test(`kill -9 of the worker at random moments, ${KILLS_PER_KIND} times, under concurrent changes`, async () => {
  const from = ledger.unexpected.length;
  let kills = 0;
  await underLoad(async () => {
    for (let i = 0; i < KILLS_PER_KIND; i++) {
      await sleep(random(...WORKER_LIFE_MS));
      await worker.kill9();
      kills += 1;
      await sleep(random(...DEAD_MS));
      await worker.start();
    }
  });
  recordFigure(SUITE, 'kills (worker)', kills);
  recordFigure(SUITE, 'worker restart to ready, median ms', median(worker.startMs.slice(1)));
  assert.ok(kills >= 20);
  assertNoUnexpected(from, 'while the worker was being killed');
});

test(`kill -9 of the web process at random moments, ${KILLS_PER_KIND} times, under concurrent changes`, async () => {
  const from = ledger.unexpected.length;
  let kills = 0;
  await underLoad(async () => {
    for (let i = 0; i < KILLS_PER_KIND; i++) {
      await sleep(random(...WEB_LIFE_MS));
      await web.kill9();
      kills += 1;
      await sleep(random(...DEAD_MS));
      await web.start();
    }
  });
  recordFigure(SUITE, 'kills (web)', kills);
  recordFigure(SUITE, 'web restart to /healthz 200, median ms', median(web.startMs.slice(1)));
  const refused = ledger.statusCounts.get('ECONNREFUSED') ?? 0;
  const reset = (ledger.statusCounts.get('ECONNRESET') ?? 0) + (ledger.statusCounts.get('EPIPE') ?? 0);
  recordFigure(SUITE, 'client connection errors (refused / reset)', `${refused} / ${reset}`);
  assert.ok(kills >= 20);
  assertNoUnexpected(from, 'while the web process was being killed');
});

test(`no job is left stuck: the change queues drain within ${DRAIN_BOUND_MS / 1000} s of the load stopping`, async () => {
  const { drained, ms, last } = await waitJobsDrained(db, DRAIN_BOUND_MS);
  drainedInBound = drained;
  if (drained) {
    recordFigure(SUITE, 'jobs drained after the load, ms', ms);
  } else {
    pendingAfterBound = last;
    const latest = last.active.reduce((max, job) => Math.max(max, job.expires_at.getTime()), 0);
    recordFigure(SUITE, `jobs still pending after ${DRAIN_BOUND_MS / 1000} s`, `${last.total} ${JSON.stringify(last.byState)}`);
    if (latest) recordFigure(SUITE, 'stuck jobs recover (expire_seconds) no sooner than, s from now', Math.round((latest - Date.now()) / 1000));
  }
  assert.ok(drained, `jobs still pending ${ms} ms after the load stopped:\n${describePending(last)}`);
});

test('every committed change has exactly one event; no event exists for a change that did not commit', async () => {
  if (!drainedInBound) {
    // Let pg-boss's own supervisor take the orphaned jobs back, as it would once expire_seconds
    // had passed, and wake the workers as continuing traffic would (a backlog is otherwise fetched
    // only every notifyPollingIntervalSeconds, 30 s), so that what the events say can be checked.
    const moved = await fastForwardExpiry(db);
    const started = Date.now();
    const { drained, last } = await waitJobsDrained(db, RECOVERY_BOUND_MS, { nudge: true });
    recordFigure(SUITE, 'orphaned active jobs fast-forwarded past expiry', moved);
    recordFigure(SUITE, 'drain after fast-forward, ms', Date.now() - started);
    assert.ok(drained, `even past their expiry the jobs did not drain:\n${describePending(last)}\n(before: ${pendingAfterBound ? describePending(pendingAfterBound) : '-'})`);
  }
  const settled = await settleUnknown(db, ledger);
  const check = await checkEvents(db, ledger, projects.map((p) => p.projectId));
  recordFigure(SUITE, 'changes committed (incl. project setup)', check.committed);
  recordFigure(SUITE, 'changes not committed', check.notCommitted);
  recordFigure(SUITE, 'changes with no answer, settled by reading rows', settled);
  recordFigure(SUITE, 'events checked', check.checked);
  assert.ok(check.committed > 200, `a steady stream of changes (got ${check.committed})`);
  assertNoProblems(check.problems, 'events against committed changes');
});

test('every stream client holds exactly its project\'s events 1..N, in order, each as GET /v1/event/<id> answers it', async () => {
  const check = await checkFollowers(followers, db, group.client(web, { timeoutMs: 20_000 }));
  for (const [figure, value] of Object.entries(followerFigures(followers))) recordFigure(SUITE, figure, value);
  recordFigure(SUITE, 'stream clients holding all events, ms after the check began', check.caughtUpMs);
  recordFigure(SUITE, 'stream events compared with GET /v1/event/<id>', check.compared);
  assert.ok(followers.every((f) => f.reconnects >= 10), `every stream client reconnected many times (${followers.map((f) => f.reconnects).join(', ')})`);
  assertNoProblems(check.problems, 'stream clients');
});

test('the logs of every process hold no key secret, no secret hash and no Authorization value', () => {
  const files = assertLogsClean(group, secrets);
  recordFigure(SUITE, 'log files checked for leaks', files);
});
