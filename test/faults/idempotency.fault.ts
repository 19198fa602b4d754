// Idempotent retries across a crash: key and app creations, each with an Idempotency-Key of its
// own, stream into a web process that is killed -9 under them and restarted. Every one is then sent
// again with its value: each made exactly once with one event, and each retry answers what was
// committed (the same id; for a key the same secret), replayed or run afresh.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { hashSecret } from '../../domain/secrets.ts';
import { recordFigure } from '../support/figures.ts';
import { ConnectionError, ProcessGroup, type ApiClient, type ServiceProcess } from '../support/processes.ts';
import { Secrets } from '../support/secrets.ts';
import { createTestDatabase, type Reply, type TestProject } from '../support/service.ts';
import { sleep } from '../support/wait.ts';
import {
  Ledger, appBody, assertLogsClean, assertNoProblems, checkEvents, describePending, ledgerProjects, openDb, random,
  waitJobsDrained,
} from './helpers.ts';
import type pg from 'pg';

const SUITE = 'idempotency';
const ROUNDS = 3;
const PROJECTS = 3;
const SENDERS_PER_PROJECT = 4;
/** How long the creations stream before the kill, per round. */
const LOAD_MS: [number, number] = [400, 1200];
/** The default plan's limit is 100 live apps a project: past this many, a project's senders make keys. */
const APPS_PER_PROJECT = 90;
/** A retry that meets the first try's lock (409) or a 503 waits as told, this long at most. */
const RETRY_FOR_MS = 30_000;

interface Creation {
  kind: 'key' | 'app';
  project: TestProject;
  name: string;
  value: string;
  round: number;
  /** The first try's answer, or the code of its connection error. */
  first?: Reply | string;
  retry?: Reply;
}

let group: ProcessGroup;
let db: pg.Pool;
let web: ServiceProcess;
let client: ApiClient;
const ledger = new Ledger();
const secrets = new Secrets();
let projects: TestProject[] = [];
const creations: Creation[] = [];
const appsPlanned = new Map<string, number>();

before(async () => {
  const url = await createTestDatabase();
  group = new ProcessGroup(url, 'idempotency');
  db = openDb(url);
  await group.release();
  web = await group.startWeb('web');
  await group.startWorker('worker');
  client = group.client(web, { timeoutMs: 20_000 });
  projects = await ledgerProjects(group, ledger, secrets, Array.from({ length: PROJECTS }, (_, i) => `Idempotency ${i}`));
});

after(async () => {
  await group?.stopAll();
  await db?.end();
});

const send = (creation: Creation) => client.request('POST', creation.kind === 'key' ? '/v1/key' : '/v1/app/create', {
  key: creation.project.key,
  body: creation.kind === 'key' ? { name: creation.name, scope: ['key:read'] } : appBody(creation.name),
  headers: { 'Idempotency-Key': creation.value },
});

/** One sender: creations one after another, each with a new value, until `stop`. */
async function sender(project: TestProject, round: number, stop: () => boolean, inFlight: Set<Creation>): Promise<void> {
  while (!stop()) {
    const apps = appsPlanned.get(project.projectId) ?? 0;
    const kind = apps < APPS_PER_PROJECT && Math.random() < 0.5 ? 'app' : 'key';
    if (kind === 'app') appsPlanned.set(project.projectId, apps + 1);
    const creation: Creation = { kind, project, name: ledger.uniqueName(kind), value: randomUUID(), round };
    creations.push(creation);
    inFlight.add(creation);
    try {
      creation.first = await send(creation);
    } catch (err) {
      if (!(err instanceof ConnectionError)) throw err;
      creation.first = err.code;
    } finally {
      inFlight.delete(creation);
    }
  }
}

/** Sends a creation again with its value until it is answered for good (a 409 or 503 waits as told). */
async function retry(creation: Creation): Promise<Reply> {
  const deadline = Date.now() + RETRY_FOR_MS;
  for (;;) {
    let reply: Reply | undefined;
    try {
      reply = await send(creation);
    } catch (err) {
      if (!(err instanceof ConnectionError) || Date.now() > deadline) throw err;
    }
    if (reply && ((reply.status !== 409 && reply.status !== 503) || Date.now() > deadline)) return reply;
    ledger.count(reply ? `retry ${reply.status}` : 'retry no answer');
    await sleep(Number(reply?.headers['retry-after'] ?? 0) * 1000 || 100);
  }
}

/** Runs `count` workers over `items`, each item once. */
async function eachOf<T>(items: T[], count: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: count }, async () => {
    while (next < items.length) await work(items[next++]!);
  }));
}

test(`creations with an Idempotency-Key each, killed -9 in flight ${ROUNDS} times and retried: each made once, each retry answers it`, async () => {
  const inFlightAtKills: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    let stop = false;
    const inFlight = new Set<Creation>();
    const senders = projects.flatMap((project) => Array.from({ length: SENDERS_PER_PROJECT }, () => sender(project, round, () => stop, inFlight)));
    await sleep(random(...LOAD_MS));
    stop = true;
    inFlightAtKills.push(inFlight.size);
    await web.kill9();
    await Promise.all(senders);
    client.reset();
    await web.start();
    await eachOf(creations.filter((c) => c.round === round), 8, async (creation) => { creation.retry = await retry(creation); });
  }

  const problems: string[] = [];
  for (const creation of creations) {
    const { kind, project, name, first, retry: reply } = creation;
    const what = `${kind} ${name} (first: ${typeof first === 'string' ? first : first?.status}, retry: ${reply!.status} ${reply!.text.slice(0, 200)})`;
    const table = kind === 'key' ? 'api_keys' : 'apps';
    const { rows } = await db.query<{ id: string; secret_hash?: Buffer }>(
      `SELECT id${kind === 'key' ? ', secret_hash' : ''} FROM ${table} WHERE project_id = $1 AND name = $2`, [project.projectId, name]);
    if (rows.length !== 1) {
      problems.push(`${what}: ${rows.length} rows`);
      continue;
    }
    const made = reply!.body?.response;
    if (reply!.status !== (kind === 'key' ? 201 : 200) || made?.id !== rows[0]!.id) problems.push(`${what}: the retry does not answer row ${rows[0]!.id}`);
    if (kind === 'key' && !(typeof made?.key === 'string' && hashSecret(made.key).equals(rows[0]!.secret_hash!))) problems.push(`${what}: the retry's secret is not the key's`);
    if (typeof first !== 'string' && first!.status < 300) {
      if (!isDeepStrictEqual(first!.body, reply!.body)) problems.push(`${what}: the retry answers otherwise than the first try`);
      if (reply!.headers['idempotent-replayed'] !== 'true') problems.push(`${what}: an answered creation was not replayed`);
    } else if (typeof first !== 'string' && first!.status !== 503) {
      problems.push(`${what}: a first try answered otherwise than 2xx or 503`);
    }
    if (kind === 'key') secrets.add(made.key);
    ledger.changes.push({ type: `${kind}.created`, projectId: project.projectId, relatedId: made?.id, name, outcome: 'committed', via: 'web', answers: [] });
  }
  assertNoProblems(problems, 'creations retried with their values');

  const unanswered = creations.filter((c) => typeof c.first === 'string' || c.first!.status >= 500);
  const replayed = (list: Creation[]) => list.filter((c) => c.retry!.headers['idempotent-replayed'] === 'true').length;
  recordFigure(SUITE, 'creations sent (keys / apps), over kills', `${creations.length} (${creations.filter((c) => c.kind === 'key').length} / ${creations.filter((c) => c.kind === 'app').length}), ${ROUNDS}`);
  recordFigure(SUITE, 'in flight at each kill', inFlightAtKills.join(', '));
  recordFigure(SUITE, 'retried: replayed / run afresh', `${creations.length}: ${replayed(creations)} / ${creations.length - replayed(creations)}`);
  recordFigure(SUITE, 'first try unanswered: replayed (committed before the kill) / run afresh', `${unanswered.length}: ${replayed(unanswered)} / ${unanswered.length - replayed(unanswered)}`);
  recordFigure(SUITE, 'retries that met 409 or 503 first', [...ledger.statusCounts].map(([status, n]) => `${status} x${n}`).join(', ') || 0);
  assert.ok(inFlightAtKills.every((n) => n > 0), `creations in flight at every kill (${inFlightAtKills.join(', ')})`);
});

test('after the drain, every creation has exactly one event and no other event exists', async () => {
  const { drained, last } = await waitJobsDrained(db, 30_000);
  assert.ok(drained, `jobs still pending:\n${describePending(last)}`);
  const check = await checkEvents(db, ledger, projects.map((p) => p.projectId));
  recordFigure(SUITE, 'events checked', check.checked);
  assertNoProblems(check.problems, 'events against creations');
  assert.equal(check.checked, check.committed);
});

test('the logs of every process hold no key secret, no secret hash and no Authorization value', () => {
  recordFigure(SUITE, 'log files checked for leaks', assertLogsClean(group, secrets));
});
