// Graceful shutdown: a `web` told to stop answers every request it accepted and exits within 10 s;
// a `worker` finishes or hands back its jobs, and another completes them, none lost, none twice.
// "In flight" is made certain: a held row lock keeps them waiting while SIGTERM is sent.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertSuccess } from '../support/assertions.ts';
import { recordFigure } from '../support/figures.ts';
import { holdLock, lockWaiters, type HeldLock } from '../support/locks.ts';
import { ConnectionError, ProcessGroup, tail, type ServiceProcess } from '../support/processes.ts';
import { Secrets } from '../support/secrets.ts';
import { createTestDatabase, type Reply, type TestProject } from '../support/service.ts';
import { sleep, waitFor } from '../support/wait.ts';
import {
  Ledger, appBody, assertLogsClean, assertNoProblems, checkEvents, describePending, openDb, pendingJobs, waitJobsDrained,
} from './helpers.ts';
import type pg from 'pg';

const SUITE = 'shutdown';
const IN_FLIGHT = 50;
/** decisions.md / bin/lifecycle.ts: a process exits within 10 s of SIGTERM. */
const EXIT_BOUND_MS = 10_000;
/** How long the test keeps the requests (or jobs) waiting after the SIGTERM. */
const HELD_AFTER_SIGTERM_MS = 500;
const BACKLOG = 300;
/** Once a stopping worker is gone, another must have the rest done within this long. */
const TAKEOVER_BOUND_MS = 15_000;
/** Past the bound (a report, not a pass): wake the worker as traffic would, to check nothing is lost. */
const NUDGED_BOUND_MS = 60_000;

let group: ProcessGroup;
let db: pg.Pool;
let project: TestProject;
const ledger = new Ledger();
const secrets = new Secrets();

before(async () => {
  const url = await createTestDatabase();
  group = new ProcessGroup(url, 'shutdown');
  db = openDb(url, 6);
  await group.release();
  project = await group.createProject('Shutdown');
  secrets.add(project.key);
  ledger.addProject(project);
});

after(async () => {
  await group?.stopAll();
  await db?.end();
});

/** The audit backlog: the project's events waiting in audit_outbox as `created`, the audit.drain jobs by their states. */
async function jobsByState(): Promise<Record<string, number>> {
  const { rows } = await db.query(
    "SELECT state::text, count(*)::int AS n FROM pgboss.job WHERE name = 'audit.drain' AND state <> 'created' GROUP BY 1");
  const { rows: [waiting] } = await db.query('SELECT count(*)::int AS n FROM audit_outbox WHERE project_id = $1', [project.projectId]);
  return { ...Object.fromEntries(rows.map((r) => [r.state, r.n])), created: waiting.n };
}

/** Waits for the rest of the audit jobs: within the bound as it should, else nudged, to check the events all the same. */
async function drainAfterTakeover(what: string): Promise<{ drained: boolean; message: string }> {
  const first = await waitJobsDrained(db, TAKEOVER_BOUND_MS);
  if (first.drained) {
    recordFigure(SUITE, `${what}: next worker drained the rest, ms`, first.ms);
    return { drained: true, message: '' };
  }
  recordFigure(SUITE, `${what}: jobs pending ${TAKEOVER_BOUND_MS / 1000} s after the next worker started`, `${first.last.total} ${JSON.stringify(first.last.byState)}`);
  const nudged = await waitJobsDrained(db, NUDGED_BOUND_MS, { nudge: true });
  recordFigure(SUITE, `${what}: drained once woken as traffic would, ms`, nudged.drained ? nudged.ms : `never (${nudged.last.total} pending)`);
  return { drained: false, message: `${what}: jobs still pending ${TAKEOVER_BOUND_MS} ms after another worker took over:\n${describePending(first.last)}` };
}

/** Every worker of the group still running is stopped, so that the next one is alone with the queue. */
async function stopWorkers(): Promise<void> {
  for (const proc of group.processes) if (proc.kind === 'worker' && proc.running) await proc.terminate();
}

async function createKeys(web: ServiceProcess, count: number): Promise<void> {
  const client = group.client(web);
  let next = 0;
  await Promise.all(Array.from({ length: 10 }, async () => {
    while (next < count) {
      next += 1;
      const name = ledger.uniqueName('key');
      const made = assertSuccess(await client.request('POST', '/v1/key', { key: project.key, body: { name, scope: ['key:read'] } }), 201, 'backlog key');
      secrets.add(made.key);
      ledger.changes.push({ type: 'key.created', projectId: project.projectId, relatedId: made.id, name, outcome: 'committed', via: web.name, answers: [201] });
    }
  }));
}

test(`SIGTERM to a web process with ${IN_FLIGHT} requests in flight: each gets its normal answer, and it exits within 10 s`, async () => {
  const web = await group.startWeb('web-a');
  const worker = await group.startWorker('worker-1');
  const client = group.client(web, { maxSockets: IN_FLIGHT, timeoutMs: 30_000 });
  // Every request gets a connection of its own, open before the SIGTERM.
  await Promise.all(Array.from({ length: IN_FLIGHT }, () => client.request('GET', '/healthz')));

  // App creation waits for its project's admission before it commits, held here exclusively as a
  // plan's change holds it (sql/migrations/0018).
  const lock = await holdLock(db, "SELECT hold_changes_of('admission', $1)", [project.projectId]);
  const names = Array.from({ length: IN_FLIGHT }, () => ledger.uniqueName('app'));
  const outcomes: Array<Reply | ConnectionError> = new Array(IN_FLIGHT);
  const sent = names.map((name, i) => client.request('POST', '/v1/app/create', { key: project.key, body: appBody(name) })
    .then((reply) => { outcomes[i] = reply; }, (err: ConnectionError) => { outcomes[i] = err; }));
  let waiting = 0;
  try {
    waiting = await waitFor(() => 'app creations waiting on the admission', async () => {
      const n = await lockWaiters(db, lock);
      return n >= 4 ? n : undefined;
    }, 10_000);
    // The rest are parsed and queued for a thread (or a connection) by now: the gateway is not blocked.
    await sleep(300);
  } catch (err) {
    await lock.release();
    throw err;
  }
  const exiting = web.terminate(20_000);
  await sleep(HELD_AFTER_SIGTERM_MS);
  await lock.release();
  const [exit] = await Promise.all([exiting, ...sent]);

  recordFigure(SUITE, 'web: requests in flight at SIGTERM (of them waiting in the database)', `${IN_FLIGHT} (${waiting})`);
  recordFigure(SUITE, 'web: exit after SIGTERM, ms', exit.ms);
  const problems: string[] = [];
  outcomes.forEach((outcome, i) => {
    if (outcome instanceof ConnectionError) problems.push(`${names[i]}: no answer (${outcome.code} ${outcome.message})`);
    else if (outcome.status !== 200) problems.push(`${names[i]}: ${outcome.status} ${outcome.text}`);
  });
  recordFigure(SUITE, 'web: in-flight requests answered 200', outcomes.filter((o) => !(o instanceof ConnectionError) && o.status === 200).length);
  for (const [i, outcome] of outcomes.entries()) {
    const ok = !(outcome instanceof ConnectionError) && outcome.status === 200;
    ledger.changes.push({ type: 'app.created', projectId: project.projectId, relatedId: ok ? (outcome as Reply).body.response.id : undefined, name: names[i], outcome: ok ? 'committed' : 'unknown', via: web.name, answers: [] });
  }
  assertNoProblems(problems, 'requests accepted before the SIGTERM');
  assert.equal(exit.timedOut, false, `the web process did not exit within 20 s:\n${tail(web.logFile)}`);
  assert.ok(exit.ms < EXIT_BOUND_MS, `the web process exited ${exit.ms} ms after SIGTERM`);
  assert.equal(exit.code, 0, `exit code (signal ${exit.signal}):\n${tail(web.logFile)}`);

  // Stopped means stopped: nothing listens any more.
  await assert.rejects(client.request('GET', '/healthz'), (err: ConnectionError) => err.code === 'ECONNREFUSED');
  // Their events, written by the worker still running.
  const { drained, last } = await waitJobsDrained(db, 15_000);
  assert.ok(drained, describePending(last));
  await worker.terminate();
});

/**
 * The worker's audit handler bumps the project's event counter (sql/queries/events_insert.sql):
 * holding that row makes every job of the batch in hand wait.
 */
async function workerWithJobsInHand(name: string): Promise<{ worker: ServiceProcess; lock: HeldLock; inHand: number }> {
  const lock = await holdLock(db, 'SELECT 1 FROM project_event_counts WHERE project_id = $1 FOR UPDATE', [project.projectId]);
  try {
    const worker = await group.startWorker(name);
    const inHand = await waitFor(() => `${name} holding audit jobs`, async () => {
      const waiting = await lockWaiters(db, lock);
      const active = (await pendingJobs(db)).byState.active ?? 0;
      return waiting > 0 && active > 0 ? active : undefined;
    }, 15_000);
    return { worker, lock, inHand };
  } catch (err) {
    await lock.release();
    throw err;
  }
}

test('SIGTERM to a worker holding jobs it can finish: it finishes them and exits; another worker completes the rest, once each', async () => {
  await stopWorkers();
  const web = await group.startWeb('web-b');
  await createKeys(web, BACKLOG);
  const before = await jobsByState();
  assert.ok((before.created ?? 0) >= BACKLOG, `a backlog of audit jobs with no worker running: ${JSON.stringify(before)}`);

  const { worker, lock, inHand } = await workerWithJobsInHand('worker-2');
  const exiting = worker.terminate(20_000);
  await sleep(HELD_AFTER_SIGTERM_MS);
  await lock.release();
  const exit = await exiting;
  const afterExit = await jobsByState();
  recordFigure(SUITE, 'worker (can finish): jobs in hand at SIGTERM', inHand);
  recordFigure(SUITE, 'worker (can finish): exit after SIGTERM, ms', exit.ms);
  recordFigure(SUITE, 'worker (can finish): jobs completed / left', `${afterExit.completed ?? 0} / ${(afterExit.created ?? 0) + (afterExit.retry ?? 0) + (afterExit.active ?? 0)}`);
  assert.equal(exit.timedOut, false, `the worker did not exit:\n${tail(worker.logFile)}`);
  assert.ok(exit.ms < EXIT_BOUND_MS, `the worker exited ${exit.ms} ms after SIGTERM`);
  assert.equal(exit.code, 0, `exit code:\n${tail(worker.logFile)}`);
  assert.equal(afterExit.active ?? 0, 0, `no job left active by the stopped worker: ${JSON.stringify(afterExit)}`);

  const next = await group.startWorker('worker-3');
  const takeover = await drainAfterTakeover('worker (can finish)');
  await next.terminate();
  const check = await checkEvents(db, ledger, [project.projectId]);
  recordFigure(SUITE, 'events checked after the worker stops', check.checked);
  assertNoProblems(check.problems, 'events against committed changes');
  assert.ok(takeover.drained, takeover.message);
});

test('SIGTERM to a worker whose jobs cannot finish before its deadline: it hands them back and exits; another worker completes them, once each', async () => {
  await stopWorkers();
  const web = group.processes.find((p) => p.name === 'web-b')!;
  await createKeys(web, BACKLOG);
  const { worker, lock, inHand } = await workerWithJobsInHand('worker-4');
  // The lock is held past the worker's own deadline: its jobs cannot finish before it must exit.
  const [exit, afterExit] = await (async () => {
    try {
      const exited = await worker.terminate(20_000);
      return [exited, await jobsByState()] as const;
    } finally {
      await lock.release();
    }
  })();
  recordFigure(SUITE, 'worker (stuck): jobs in hand at SIGTERM', inHand);
  recordFigure(SUITE, 'worker (stuck): exit after SIGTERM, ms (code)', `${exit.ms} (${exit.code})`);
  recordFigure(SUITE, 'worker (stuck): jobs handed back (retry) / left active', `${afterExit.retry ?? 0} / ${afterExit.active ?? 0}`);
  assert.equal(exit.timedOut, false, `the worker did not exit:\n${tail(worker.logFile)}`);
  // bin/lifecycle.ts's own deadline is 10 s from the signal; a second for the exit itself.
  assert.ok(exit.ms < EXIT_BOUND_MS + 1000, `the worker exited ${exit.ms} ms after SIGTERM`);
  assert.equal(afterExit.active ?? 0, 0, `no job left active by the stopped worker: ${JSON.stringify(afterExit)}`);

  const next = await group.startWorker('worker-5');
  const takeover = await drainAfterTakeover('worker (stuck)');
  await next.terminate();
  const check = await checkEvents(db, ledger, [project.projectId]);
  recordFigure(SUITE, 'events checked after the stuck worker stops', check.checked);
  assertNoProblems(check.problems, 'events against committed changes');
  assert.ok(takeover.drained, takeover.message);
});

test('the logs of every process hold no key secret, no secret hash and no Authorization value', () => {
  recordFigure(SUITE, 'log files checked for leaks', assertLogsClean(group, secrets));
});
