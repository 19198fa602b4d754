// The fault suite's own helpers (not a fault file itself): a steady stream of changes through the
// API whose every outcome is written down (a ledger), the check that each committed change has
// exactly one event and nothing else does, pg-boss job states, and the log leak check.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { ensureDatabase, startEmbedded, type EmbeddedServer } from '../../lib/embedded-server.ts';
import { createLogger } from '../../lib/log.ts';
import { sql, startCitusCluster, stopNode, type CitusCluster } from '../citus/cluster.ts';
import { databaseMade, onCitus } from '../citus/databases.ts';
import { freePort } from '../support/ports.ts';
import { MESSAGES } from '../support/assertions.ts';
import { SECRET_SHAPED } from '../support/ids.ts';
import { ConnectionError, type ApiClient, type ProcessGroup } from '../support/processes.ts';
import type { Secrets } from '../support/secrets.ts';
import type { Reply, TestProject } from '../support/service.ts';
import { sleep } from '../support/wait.ts';

/**
 * The queues whose jobs a change (or a run report) leaves behind; key.expire is a cron tick.
 * audit.write holds only jobs of the hand-over before audit_outbox; pendingJobs counts that table's
 * rows too.
 */
export const CHANGE_QUEUES = ['audit.write', 'audit.drain', 'app.totals', 'run.finished'];

export function openDb(url: string, max = 4): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max });
  pool.on('error', () => {});
  return pool;
}

export const random = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));
export const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;

// ---------------------------------------------------------------------------------------------
// The ledger.

export type ChangeType = 'key.created' | 'key.revoked' | 'app.created' | 'app.updated' | 'app.deleted' | 'project.created';

export interface Change {
  type: ChangeType;
  projectId: string;
  /** The key or app (or project) changed; for a create whose answer never came, found by name later. */
  relatedId?: string;
  /** The name of a created key or app; the new name of an app.updated. Unique in the run. */
  name?: string;
  /** committed: a 2xx said so, or the rows prove it. unknown: no answer, to be settled by reading rows. */
  outcome: 'committed' | 'unknown' | 'not-committed';
  via: string;
  /** Each status the change was answered with, in order ('ECONNRESET' etc. for no answer). */
  answers: Array<number | string>;
}

export class Ledger {
  readonly changes: Change[] = [];
  /** Answers nobody should ever get for these requests (a 500, a 422 …): the evidence, verbatim. */
  readonly unexpected: string[] = [];
  readonly statusCounts = new Map<string, number>();
  private counter = 0;
  private readonly runTag = Math.random().toString(36).slice(2, 8);

  uniqueName(kind: string): string {
    return `${kind} ${this.runTag}-${++this.counter}`;
  }

  count(label: number | string): void {
    const key = String(label);
    this.statusCounts.set(key, (this.statusCounts.get(key) ?? 0) + 1);
  }

  /** The project and its first key, made by the workspace command line. */
  addProject(project: TestProject): void {
    this.changes.push({ type: 'project.created', projectId: project.projectId, relatedId: project.projectId, outcome: 'committed', via: 'workspace', answers: [] });
    this.changes.push({ type: 'key.created', projectId: project.projectId, relatedId: project.keyId, outcome: 'committed', via: 'workspace', answers: [] });
  }

  committed(): Change[] {
    return this.changes.filter((c) => c.outcome === 'committed');
  }
}

/** Projects made by the workspace command line, their keys' secrets kept and their making in the ledger. */
export async function ledgerProjects(group: ProcessGroup, ledger: Ledger, secrets: Secrets, names: string[]): Promise<TestProject[]> {
  const projects: TestProject[] = [];
  for (const name of names) {
    const project = await group.createProject(name);
    secrets.add(project.key);
    ledger.addProject(project);
    projects.push(project);
  }
  return projects;
}

// ---------------------------------------------------------------------------------------------
// The actors: each works on one project's own keys and apps, one change at a time.

export interface Target {
  name: string;
  client: ApiClient;
}

export interface Answer {
  startedAt: number;
  ms: number;
  /** The HTTP status, or the connection error's code. */
  status: number | string;
  method: string;
  path: string;
  target: string;
  reply?: Reply;
}

export interface ActorOptions {
  /** Statuses that mean "no answer about the change, try again" besides connection errors (e.g. 503). */
  retryStatuses?: number[];
  /** How long one change is retried before it is left `unknown` and settled by the rows. */
  retryForMs?: number;
  /** Per-request bound: an answer slower than this counts as a hang. */
  timeoutMs?: number;
  /** Mix of reads between changes (0..1). */
  readShare?: number;
  /** Called on every answer: for timing figures. */
  onAnswer?: (answer: Answer) => void;
}

/** Live apps one actor keeps at most (the default plan's limit is 100 per project). */
const MAX_APPS_PER_ACTOR = 20;

/** Codes that prove the request never reached the server: safe to send again, whatever it was. */
const NEVER_SENT = new Set(['ECONNREFUSED']);

export function appBody(name: string): Record<string, unknown> {
  return {
    name,
    description: 'Made by the fault suite.',
    data: [{ type: 'input', name: 'topic', placeholder: 'A topic', required: true }],
    instruction: [{ type: 'system', instruction: 'Summarise the topic in one line.' }],
  };
}

export class Actor {
  readonly keys: string[] = [];
  readonly apps: string[] = [];
  private readonly project: TestProject;
  private readonly targets: Target[];
  private readonly ledger: Ledger;
  private readonly secrets: Secrets;
  private readonly options: Required<Omit<ActorOptions, 'onAnswer'>> & Pick<ActorOptions, 'onAnswer'>;

  constructor(project: TestProject, targets: Target[], ledger: Ledger, secrets: Secrets, options: ActorOptions = {}) {
    this.project = project;
    this.targets = targets;
    this.ledger = ledger;
    this.secrets = secrets;
    this.options = { retryStatuses: [], retryForMs: 60_000, timeoutMs: 30_000, readShare: 0, ...options };
  }

  /** Works until `stop()` returns true, then finishes the change in hand. */
  async run(stop: () => boolean): Promise<void> {
    while (!stop()) await this.step();
  }

  async step(): Promise<void> {
    if (Math.random() < this.options.readShare) {
      await this.read();
      return;
    }
    const roll = Math.random();
    // The default plan allows 100 live apps per project: an actor keeps its share well below.
    const roomForApps = this.apps.length < MAX_APPS_PER_ACTOR;
    if (roll < 0.25) await this.createKey();
    else if (roll < 0.4 && this.keys.length > 0) await this.revokeKey();
    else if (roll < 0.65 && roomForApps) await this.createApp();
    else if (roll < 0.85 && this.apps.length > 0) await this.patchApp();
    else if (this.apps.length > 0) await this.deleteApp();
    else await this.createApp();
  }

  private async send(target: Target, method: string, path: string, body?: unknown): Promise<Reply | ConnectionError> {
    const startedAt = Date.now();
    try {
      const reply = await target.client.request(method, path, { key: this.project.key, body, timeoutMs: this.options.timeoutMs });
      this.ledger.count(reply.status);
      this.options.onAnswer?.({ startedAt, ms: Date.now() - startedAt, status: reply.status, method, path, target: target.name, reply });
      if (reply.status >= 500 && !this.options.retryStatuses.includes(reply.status)) {
        this.ledger.unexpected.push(`${method} ${path} via ${target.name}: ${reply.status} ${reply.text} (x-request-id ${reply.headers['x-request-id']})`);
      }
      return reply;
    } catch (err) {
      if (!(err instanceof ConnectionError)) throw err;
      this.ledger.count(err.code);
      this.options.onAnswer?.({ startedAt, ms: Date.now() - startedAt, status: err.code, method, path, target: target.name });
      if (err.code === 'ETESTTIMEOUT') this.ledger.unexpected.push(`${method} ${path} via ${target.name}: no answer (${err.message})`);
      return err;
    }
  }

  private noAnswer(outcome: Reply | ConnectionError): boolean {
    return outcome instanceof ConnectionError || this.options.retryStatuses.includes(outcome.status);
  }

  /**
   * Sends one change until it gets a definite answer. `idempotent`: a repeat of a change that did
   * commit is answered without a second commit (PATCH to the same name, DELETE, revoke), so it is
   * safe to repeat after an ambiguous failure. A create is repeated only when it never reached the server.
   */
  private async change(method: string, path: string, body: unknown, idempotent: boolean, change: Change): Promise<Reply | undefined> {
    const deadline = Date.now() + this.options.retryForMs;
    for (;;) {
      const target = pick(this.targets);
      change.via = target.name;
      const outcome = await this.send(target, method, path, body);
      const answer = outcome instanceof ConnectionError ? outcome.code : outcome.status;
      change.answers.push(answer);
      if (!this.noAnswer(outcome)) return outcome as Reply;
      const neverSent = outcome instanceof ConnectionError && NEVER_SENT.has(outcome.code);
      if (!neverSent && !idempotent) return undefined;
      if (Date.now() > deadline) return undefined;
      await sleep(random(20, 150));
    }
  }

  private ambiguous(change: Change): boolean {
    return change.answers.slice(0, -1).some((a) => a !== 'ECONNREFUSED');
  }

  private expect(change: Change, reply: Reply | undefined, ok: number, what: string): boolean {
    if (reply === undefined) {
      change.outcome = 'unknown';
      return false;
    }
    if (reply.status === ok) {
      change.outcome = 'committed';
      return true;
    }
    // A 404 to the repeat of a revoke or delete whose first try went unanswered: that try committed.
    if (reply.status === 404 && this.ambiguous(change) && (change.type === 'key.revoked' || change.type === 'app.deleted')) {
      change.outcome = 'committed';
      return true;
    }
    // A 5xx says nothing certain about the change (it may have committed before the fault): the rows tell.
    change.outcome = reply.status >= 500 ? 'unknown' : 'not-committed';
    // A 5xx is in the list already (send); anything else is a refusal no one expected.
    if (reply.status < 500) this.ledger.unexpected.push(`${what} via ${change.via}: ${reply.status} ${reply.text} (answers ${change.answers.join(',')})`);
    return false;
  }

  async createKey(): Promise<void> {
    const name = this.ledger.uniqueName('key');
    const change: Change = { type: 'key.created', projectId: this.project.projectId, name, outcome: 'unknown', via: '', answers: [] };
    this.ledger.changes.push(change);
    const reply = await this.change('POST', '/v1/key', { name, scope: ['key:read'] }, false, change);
    if (this.expect(change, reply, 201, `create key ${name}`)) {
      change.relatedId = reply!.body.response.id;
      this.secrets.add(reply!.body.response.key);
      this.keys.push(change.relatedId!);
    }
  }

  async revokeKey(): Promise<void> {
    const id = this.keys.splice(Math.floor(Math.random() * this.keys.length), 1)[0]!;
    const change: Change = { type: 'key.revoked', projectId: this.project.projectId, relatedId: id, outcome: 'unknown', via: '', answers: [] };
    this.ledger.changes.push(change);
    this.expect(change, await this.change('DELETE', `/v1/key/${id}`, undefined, true, change), 200, `revoke key ${id}`);
  }

  async createApp(): Promise<void> {
    const name = this.ledger.uniqueName('app');
    const change: Change = { type: 'app.created', projectId: this.project.projectId, name, outcome: 'unknown', via: '', answers: [] };
    this.ledger.changes.push(change);
    const reply = await this.change('POST', '/v1/app/create', appBody(name), false, change);
    if (this.expect(change, reply, 200, `create app ${name}`)) {
      change.relatedId = reply!.body.response.id;
      this.apps.push(change.relatedId!);
    }
  }

  async patchApp(): Promise<void> {
    const index = Math.floor(Math.random() * this.apps.length);
    const id = this.apps[index]!;
    const name = this.ledger.uniqueName('renamed');
    const change: Change = { type: 'app.updated', projectId: this.project.projectId, relatedId: id, name, outcome: 'unknown', via: '', answers: [] };
    this.ledger.changes.push(change);
    const ok = this.expect(change, await this.change('PATCH', `/v1/app/detail/${id}`, { name }, true, change), 200, `rename app ${id}`);
    // An app whose rename stayed unsettled is touched no more: the rows then tell what happened.
    if (!ok) this.apps.splice(index, 1);
  }

  async deleteApp(): Promise<void> {
    const id = this.apps.splice(Math.floor(Math.random() * this.apps.length), 1)[0]!;
    const change: Change = { type: 'app.deleted', projectId: this.project.projectId, relatedId: id, outcome: 'unknown', via: '', answers: [] };
    this.ledger.changes.push(change);
    this.expect(change, await this.change('DELETE', `/v1/app/detail/${id}`, undefined, true, change), 200, `delete app ${id}`);
  }

  async read(): Promise<void> {
    const target = pick(this.targets);
    const path = pick(['/v1/key/current', '/v1/app/list?limit=5', '/v1/key?limit=5', '/v1/event']);
    const outcome = await this.send(target, 'GET', path);
    if (!(outcome instanceof ConnectionError) && outcome.status !== 200 && !this.options.retryStatuses.includes(outcome.status)) {
      this.ledger.unexpected.push(`GET ${path} via ${target.name}: ${outcome.status} ${outcome.text}`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Settling and checking.

/** Settles every `unknown` change by reading the rows it would have written. */
export async function settleUnknown(db: pg.Pool, ledger: Ledger): Promise<number> {
  let settled = 0;
  for (const change of ledger.changes.filter((c) => c.outcome === 'unknown')) {
    let committed = false;
    if (change.type === 'key.created') {
      const { rows } = await db.query('SELECT id FROM api_keys WHERE project_id = $1 AND name = $2', [change.projectId, change.name]);
      assert.ok(rows.length <= 1, `two keys named ${change.name}`);
      if (rows[0]) { committed = true; change.relatedId = rows[0].id; }
    } else if (change.type === 'app.created') {
      const { rows } = await db.query('SELECT id FROM apps WHERE project_id = $1 AND name = $2', [change.projectId, change.name]);
      assert.ok(rows.length <= 1, `two apps named ${change.name}`);
      if (rows[0]) { committed = true; change.relatedId = rows[0].id; }
    } else if (change.type === 'key.revoked') {
      const { rows } = await db.query("SELECT 1 FROM api_keys WHERE id = $1 AND status = 'revoked'", [change.relatedId]);
      committed = rows.length === 1;
    } else if (change.type === 'app.deleted') {
      const { rows } = await db.query('SELECT 1 FROM apps WHERE id = $1 AND deleted_at IS NOT NULL', [change.relatedId]);
      committed = rows.length === 1;
    } else if (change.type === 'app.updated') {
      // The app was touched no more after this rename, so its name tells.
      const { rows } = await db.query('SELECT 1 FROM apps WHERE id = $1 AND name = $2', [change.relatedId, change.name]);
      committed = rows.length === 1;
    }
    change.outcome = committed ? 'committed' : 'not-committed';
    settled += 1;
  }
  return settled;
}

interface EventRow {
  id: string;
  project_id: string;
  type: string;
  related_table: string;
  related_id: string;
  details: any;
}

function changeKey(type: string, relatedId: string | undefined, name: string | undefined): string {
  return `${type}|${relatedId}|${type === 'app.updated' ? name : ''}`;
}

export interface EventCheck {
  /** Events read and matched. */
  checked: number;
  committed: number;
  notCommitted: number;
  /** Every way the events disagree with the committed changes; empty when all is well. */
  problems: string[];
}

/**
 * Every committed change has exactly one event (by type and related.id; a rename also by its new
 * name), no event exists for a change that did not commit, each event's row agrees with it, and
 * the per-project counter equals the events stored.
 */
export async function checkEvents(db: pg.Pool, ledger: Ledger, projectIds: string[]): Promise<EventCheck> {
  const problems: string[] = [];
  const expected = new Map<string, Change>();
  for (const change of ledger.committed()) {
    const key = changeKey(change.type, change.relatedId, change.name);
    if (expected.has(key)) problems.push(`the ledger holds one change twice: ${key}`);
    expected.set(key, change);
  }
  const notCommitted = ledger.changes.filter((c) => c.outcome === 'not-committed');

  const { rows: events } = await db.query<EventRow>(
    `SELECT e.id, e.project_id, t.name AS type, e.related_table, e.related_id, e.details
     FROM events e JOIN event_types t ON t.id = e.type_id WHERE e.project_id = ANY($1) ORDER BY e.created_at, e.id`, [projectIds]);
  const seen = new Map<string, EventRow[]>();
  for (const event of events) {
    const name = event.type === 'app.updated' ? event.details?.changes?.name?.to : undefined;
    const key = changeKey(event.type, event.related_id, name);
    seen.set(key, [...(seen.get(key) ?? []), event]);
  }

  for (const [key, change] of expected) {
    const found = seen.get(key) ?? [];
    if (found.length === 0) problems.push(`lost: no event for committed ${key} (via ${change.via}, answers ${change.answers.join(',')})`);
    if (found.length > 1) problems.push(`duplicated: ${found.length} events for ${key}: ${found.map((e) => e.id).join(', ')}`);
  }
  for (const [key, found] of seen) {
    if (!expected.has(key)) problems.push(`no committed change for event(s) ${found.map((e) => e.id).join(', ')}: ${key}`);
  }
  for (const change of notCommitted) {
    // A change that did not commit must have left no event, even one keyed differently.
    const byName = events.filter((e) => change.name !== undefined && (e.details?.name === change.name || e.details?.changes?.name?.to === change.name));
    if (byName.length > 0) problems.push(`event(s) ${byName.map((e) => e.id).join(', ')} for ${change.type} ${change.name}, which did not commit`);
  }

  // Each event's row says the same: no event for a row that does not exist.
  const ids = (type: string) => events.filter((e) => e.type === type).map((e) => e.related_id);
  const missing = async (type: string, sql: string) => {
    const wanted = ids(type);
    if (wanted.length === 0) return;
    const { rows } = await db.query<{ id: string }>(sql, [wanted]);
    const present = new Set(rows.map((r) => r.id));
    for (const id of wanted) if (!present.has(id)) problems.push(`${type} event for ${id}, whose row does not show the change`);
  };
  await missing('key.created', 'SELECT id FROM api_keys WHERE id = ANY($1)');
  await missing('key.revoked', "SELECT id FROM api_keys WHERE id = ANY($1) AND status = 'revoked'");
  await missing('app.created', 'SELECT id FROM apps WHERE id = ANY($1)');
  await missing('app.updated', 'SELECT id FROM apps WHERE id = ANY($1)');
  await missing('app.deleted', 'SELECT id FROM apps WHERE id = ANY($1) AND deleted_at IS NOT NULL');

  const { rows: counts } = await db.query<{ project_id: string; total: number; stored: number }>(
    `SELECT p.id AS project_id, coalesce(c.total, 0)::int AS total,
            (SELECT count(*)::int FROM events e WHERE e.project_id = p.id) AS stored
     FROM projects p LEFT JOIN project_event_counts c ON c.project_id = p.id WHERE p.id = ANY($1)`, [projectIds]);
  for (const row of counts) {
    if (row.total !== row.stored) problems.push(`project ${row.project_id}: counter says ${row.total} events, ${row.stored} stored`);
  }
  return { checked: events.length, committed: expected.size, notCommitted: notCommitted.length, problems };
}

export function assertNoProblems(problems: string[], what: string): void {
  const shown = problems.slice(0, 25).join('\n  ');
  assert.equal(problems.length, 0, `${what}: ${problems.length} problem(s):\n  ${shown}${problems.length > 25 ? '\n  …' : ''}`);
}

// ---------------------------------------------------------------------------------------------
// pg-boss jobs.

export interface PendingJobs {
  total: number;
  byState: Record<string, number>;
  /** Active jobs with when they started and when pg-boss's supervisor will take them back. */
  active: Array<{ id: string; name: string; started_on: Date; expire_seconds: number; retry_count: number; expires_at: Date }>;
  /** Jobs waiting to be retried: why the last try failed and when the next is due. */
  retrying: Array<{ id: string; name: string; retry_count: number; retry_delay_max: number | null; start_after: Date; output: unknown }>;
}

export async function pendingJobs(db: pg.Pool, queues = CHANGE_QUEUES): Promise<PendingJobs> {
  const { rows } = await db.query<{ state: string; n: number }>(
    `SELECT state, count(*)::int AS n FROM pgboss.job WHERE name = ANY($1) AND state IN ('created', 'retry', 'active') GROUP BY state`, [queues]);
  const byState: Record<string, number> = Object.fromEntries(rows.map((r) => [r.state, r.n]));
  // Events handed over and not yet drained are pending work as much as a job is.
  const { rows: [outbox] } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_outbox');
  if (queues.includes('audit.drain') && outbox!.n > 0) byState.outbox = outbox!.n;
  const { rows: active } = await db.query(
    `SELECT id, name, started_on, expire_seconds, retry_count, started_on + expire_seconds * interval '1 second' AS expires_at
     FROM pgboss.job WHERE name = ANY($1) AND state = 'active' ORDER BY started_on`, [queues]);
  const { rows: retrying } = await db.query(
    `SELECT id, name, retry_count, retry_delay_max, start_after, output
     FROM pgboss.job WHERE name = ANY($1) AND state = 'retry' ORDER BY start_after`, [queues]);
  return { total: Object.values(byState).reduce((sum, n) => sum + n, 0), byState, active, retrying };
}

/**
 * What a new job on a queue sends (pg-boss's NOTIFY on its channel, plans.notifyQueue): wakes the
 * workers of the queues as continuing traffic would, without adding a job.
 */
export async function nudgeWorkers(db: pg.Pool, queues = CHANGE_QUEUES): Promise<void> {
  await db.query(
    "SELECT pg_notify('pgboss_' || left(encode(sha224('pgboss'::bytea), 'hex'), 24), q) FROM unnest($1::text[]) q", [queues]);
}

export interface DrainOptions {
  queues?: string[];
  /** Wake the workers every poll, as a steady stream of new jobs would (see nudgeWorkers). */
  nudge?: boolean;
}

/** Waits until no job of the queues is created, retry or active; returns how long that took. */
export async function waitJobsDrained(db: pg.Pool, timeoutMs: number, options: DrainOptions = {}): Promise<{ drained: boolean; ms: number; last: PendingJobs }> {
  const queues = options.queues ?? CHANGE_QUEUES;
  const started = Date.now();
  for (;;) {
    const last = await pendingJobs(db, queues);
    if (last.total === 0) return { drained: true, ms: Date.now() - started, last };
    if (Date.now() - started > timeoutMs) return { drained: false, ms: Date.now() - started, last };
    if (options.nudge) await nudgeWorkers(db, queues);
    await sleep(250);
  }
}

export function describePending(pending: PendingJobs): string {
  const lines = [`${pending.total} job(s) pending: ${JSON.stringify(pending.byState)}`];
  for (const job of pending.active.slice(0, 10)) {
    lines.push(`  active ${job.name} ${job.id} since ${job.started_on.toISOString()}, expire_seconds ${job.expire_seconds}: ` +
      `pg-boss takes it back no earlier than ${job.expires_at.toISOString()} (plus up to two supervise intervals of 60 s)`);
  }
  for (const job of pending.retrying.slice(0, 10)) {
    lines.push(`  retry ${job.name} ${job.id} try ${job.retry_count}, next at ${job.start_after.toISOString()} ` +
      `(retry_delay_max ${job.retry_delay_max}), last failure: ${JSON.stringify(job.output)}`);
  }
  return lines.join('\n');
}

/**
 * Moves the start of every orphaned active job back past its expiry, as if `expire_seconds` had
 * gone by: pg-boss's own supervisor then takes them back (to retry) on its next pass. Only for jobs
 * no live worker holds (call it once the load has stopped and live workers are idle).
 */
export async function fastForwardExpiry(db: pg.Pool, queues = CHANGE_QUEUES): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE pgboss.job SET started_on = started_on - (expire_seconds + 5) * interval '1 second'
     WHERE name = ANY($1) AND state = 'active'`, [queues]);
  return rowCount ?? 0;
}

// ---------------------------------------------------------------------------------------------
// The log leak check.

/**
 * No LOG_FILE (nor the stdout/stderr) of any process of the group holds a key secret, the hex or
 * base64 of a secret's SHA-256, an Authorization header value or anything secret-shaped.
 * Returns the number of files checked.
 */
export function assertLogsClean(group: ProcessGroup, secrets: Secrets): number {
  const files = group.logFiles();
  assert.ok(files.length > 0, 'no log files to check');
  let requestLines = 0;
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const what = `log ${path.basename(file)}`;
    requestLines += (text.match(/"msg":"request"/g) ?? []).length;
    assert.ok(!text.includes('Bearer '), `${what} holds a Bearer header value`);
    assert.doesNotMatch(text, /authorization"\s*:\s*"(?!\[redacted\])/i, `${what} holds an Authorization header`);
    assert.doesNotMatch(text, SECRET_SHAPED, `${what} holds a secret-shaped string`);
    secrets.assertNoneIn(text, what);
  }
  assert.ok(requestLines > 0, 'the web logs record the requests made (else the check proves nothing)');
  return files.length;
}

/** An answer is the 503 of decisions.md: the envelope, and Retry-After in whole seconds. */
export function isUnavailable(reply: Reply): boolean {
  const retryAfter = reply.headers['retry-after'];
  return reply.status === 503 && reply.body?.response === MESSAGES.unavailable && typeof retryAfter === 'string' && /^[1-9][0-9]*$/.test(retryAfter);
}

// ---------------------------------------------------------------------------------------------
// A PostgreSQL of a fault file's own, to stop and start again under load.

// A throwaway cluster, as test/support/postgres.ts makes it.
const THROWAWAY_FLAGS = ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'];

/**
 * An embedded PostgreSQL in a temporary directory; it never outlives the test process. When the
 * run's PostgreSQL is a Citus coordinator, a Citus cluster of its own instead, whose coordinator
 * is what stops and starts (its workers keep running; docs/citus.md).
 */
export class OwnPostgres {
  private readonly parent: string;
  private readonly dir: string;
  private readonly port: number;
  private server: EmbeddedServer | undefined;
  private cluster: CitusCluster | undefined;

  private constructor(label: string, port: number) {
    this.port = port;
    this.parent = mkdtempSync(path.join(tmpdir(), `pms-${label}-pg-`));
    this.dir = path.join(this.parent, 'pg');
    process.on('exit', () => this.killPostmaster());
  }

  /** Started, with `database` made in it. */
  static async start(label: string, database: string): Promise<OwnPostgres> {
    const own = new OwnPostgres(label, await freePort());
    if (await onCitus(process.env.TEST_PG_ADMIN_URL)) {
      own.cluster = await startCitusCluster();
      await sql(own.cluster.coordinatorUrl, `CREATE DATABASE ${database}`);
      await databaseMade(own.cluster.coordinatorUrl, own.cluster.coordinatorUrl, database);
      return own;
    }
    await own.startAgain();
    await ensureDatabase(own.server!.url('postgres'), database);
    return own;
  }

  /** What a figure says was stopped. */
  get kind(): string {
    return this.cluster ? `a Citus coordinator (its ${this.cluster.workers.length} workers kept running)` : 'one PostgreSQL';
  }

  url(database: string): string {
    if (this.cluster) return new URL(`/${database}`, this.cluster.coordinatorUrl).toString();
    return this.server!.url(database);
  }

  async stop(): Promise<void> {
    if (this.cluster) return stopNode(this.cluster.coordinator);
    const server = this.server;
    this.server = undefined;
    await server?.stop();
  }

  async startAgain(): Promise<void> {
    if (this.cluster) return this.cluster.coordinator.start();
    this.server = await startEmbedded({
      dir: this.dir, port: this.port, log: createLogger('info', 'own-postgres', path.join(this.parent, 'postgres.log')),
      flags: THROWAWAY_FLAGS, persistent: true, settings: { dir: 'TMPDIR', port: null },
    });
  }

  /** Stopped and its files removed. */
  async remove(): Promise<void> {
    await this.stop().catch(() => {});
    await this.cluster?.stop().catch(() => {});
    if (existsSync(this.parent)) rmSync(this.parent, { recursive: true, force: true });
  }

  private killPostmaster(): void {
    for (const node of this.cluster ? [this.cluster.coordinator, ...this.cluster.workers] : []) node.server?.kill('SIGQUIT');
    try {
      const pid = Number(readFileSync(path.join(this.dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      if (pid > 0) process.kill(pid, 'SIGQUIT');
    } catch { /* not running */ }
  }
}
