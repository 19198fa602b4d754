// A follower of GET /v1/event/stream for the fault suite: whenever its connection drops it pauses
// and reconnects with Last-Event-ID. Like an EventSource it counts only complete event blocks and
// keeps them in arrival order, so a test can check it holds each event exactly once, in order.
// It never throws from a socket callback: failures go to `problems`.
import { isDeepStrictEqual } from 'node:util';
import https from 'node:https';
import type pg from 'pg';
import { checkAgainstSchema } from '../support/openapi-check.ts';
import { ConnectionError, type ApiClient } from '../support/processes.ts';
import type { TestProject } from '../support/service.ts';
import type { StreamedEvent } from '../support/sse.ts';
import { sleep } from '../support/wait.ts';

export interface StreamTarget {
  name: string;
  baseUrl: string;
}

export interface FollowerOptions {
  /** How long to pause before reconnecting, ms (uniform in the range). */
  pauseMs?: [number, number];
  /** The follower drops its own connection after a random time in this range (a flaky network); never when absent. */
  dropAfterMs?: [number, number];
  /** A stream silent this long (no event, no comment line) counts as dropped; keep it above the heartbeat. */
  idleMs?: number;
  /** A connection whose status line has not come in this long counts as a problem, and is dropped. */
  headTimeoutMs?: number;
  /** Statuses that mean "not now, reconnect" rather than a problem (default 503). */
  retryStatuses?: number[];
}

const random = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));

export class StreamFollower {
  readonly name: string;
  readonly project: TestProject;
  /** Every event received, in arrival order. */
  readonly events: StreamedEvent[] = [];
  /** The id of the last complete event received: what a reconnect sends as Last-Event-ID. */
  lastId = 0;
  /** Streams that started (200); reconnects are all but the first. */
  streams = 0;
  /** Why each stream or attempt ended: 'ended by the server', 'ECONNRESET', 'dropped by the client', '503', 'ECONNREFUSED' … */
  readonly endings = new Map<string, number>();
  /** Streams per target. */
  readonly byTarget = new Map<string, number>();
  /** What no stream should ever do (a repeat, a gap, a malformed block, an unexpected status): the evidence. */
  readonly problems: string[] = [];
  comments = 0;
  /** Longest time without a stream: from a connection's end to the next stream's status line. */
  maxOfflineMs = 0;
  private readonly targets: () => StreamTarget[];
  private readonly ca: Buffer;
  private readonly options: Required<Omit<FollowerOptions, 'dropAfterMs'>> & Pick<FollowerOptions, 'dropAfterMs'>;
  private running = false;
  private done: Promise<void> | undefined;
  private current: ReturnType<typeof https.request> | undefined;
  private offlineSince = 0;

  constructor(name: string, project: TestProject, targets: () => StreamTarget[], ca: Buffer, options: FollowerOptions = {}) {
    this.name = name;
    this.project = project;
    this.targets = targets;
    this.ca = ca;
    this.options = { pauseMs: [50, 250], idleMs: 60_000, headTimeoutMs: 15_000, retryStatuses: [503], ...options };
  }

  get reconnects(): number {
    return Math.max(0, this.streams - 1);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.offlineSince = Date.now();
    this.done = this.loop();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.current?.destroy();
    await this.done;
  }

  /** Waits until the last event received is `id` or later; false if that did not happen in time. */
  async reach(id: number, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.lastId < id) {
      if (Date.now() > deadline) return false;
      await sleep(50);
    }
    return true;
  }

  private count(map: Map<string, number>, key: string): void {
    map.set(key, (map.get(key) ?? 0) + 1);
  }

  private async loop(): Promise<void> {
    while (this.running) {
      const targets = this.targets();
      const target = targets[Math.floor(Math.random() * targets.length)]!;
      const ending = await this.follow(target);
      this.count(this.endings, ending);
      if (!this.running) break;
      await sleep(random(...this.options.pauseMs));
    }
  }

  /** One connection, from the request to its end, whichever way it ends; resolves with why it ended. */
  private follow(target: StreamTarget): Promise<string> {
    return new Promise((resolve) => {
      let settled = false;
      let buffered = '';
      let headTimer: NodeJS.Timeout | undefined;
      let idleTimer: NodeJS.Timeout | undefined;
      let dropTimer: NodeJS.Timeout | undefined;
      const finish = (why: string) => {
        if (settled) return;
        settled = true;
        // The test stopping it is no drop.
        if (!this.running) why = 'stopped by the test';
        clearTimeout(headTimer);
        clearTimeout(idleTimer);
        clearTimeout(dropTimer);
        req.destroy();
        if (this.current === req) this.current = undefined;
        if (this.offlineSince === 0) this.offlineSince = Date.now();
        resolve(why);
      };
      const idle = () => {
        clearTimeout(idleTimer);
        idleTimer = setTimeout(() => finish('silent past idleMs'), this.options.idleMs);
      };
      const req = https.request(new URL('/v1/event/stream', target.baseUrl), {
        headers: { authorization: `Bearer ${this.project.key}`, accept: 'text/event-stream', 'last-event-id': String(this.lastId) },
        agent: false, ca: this.ca,
      });
      this.current = req;
      if (!this.running) return finish('stopped');
      headTimer = setTimeout(() => {
        this.problems.push(`${this.name}: no status line from ${target.name} within ${this.options.headTimeoutMs} ms`);
        finish('no status line');
      }, this.options.headTimeoutMs);
      req.on('response', (res) => {
        clearTimeout(headTimer);
        const status = res.statusCode ?? 0;
        if (status !== 200) {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => { text += chunk; });
          res.on('end', () => {
            if (!this.options.retryStatuses.includes(status)) this.problems.push(`${this.name}: ${target.name} answered ${status} ${text.slice(0, 300)}`);
            finish(String(status));
          });
          res.on('error', () => finish(String(status)));
          res.on('close', () => finish(String(status)));
          return;
        }
        const now = Date.now();
        this.maxOfflineMs = Math.max(this.maxOfflineMs, now - this.offlineSince);
        this.offlineSince = 0;
        this.streams += 1;
        this.count(this.byTarget, target.name);
        if (!String(res.headers['content-type']).startsWith('text/event-stream')) {
          this.problems.push(`${this.name}: a 200 from ${target.name} that is not an event stream: ${res.headers['content-type']}`);
        }
        idle();
        if (this.options.dropAfterMs) dropTimer = setTimeout(() => finish('dropped by the client'), random(...this.options.dropAfterMs));
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          if (settled) return;
          idle();
          buffered += text;
          let end: number;
          while ((end = buffered.indexOf('\n\n')) >= 0) {
            const block = buffered.slice(0, end);
            buffered = buffered.slice(end + 2);
            this.block(block, target.name);
          }
        });
        res.on('end', () => finish('ended by the server'));
        res.on('error', (err: Error & { code?: string }) => finish(err.code ?? 'response error'));
        res.on('close', () => finish('closed'));
      });
      req.on('error', (err: Error & { code?: string }) => finish(err.code ?? 'request error'));
      req.end();
    });
  }

  /** One complete block: a comment, or an event that must be the one after the last. */
  private block(block: string, from: string): void {
    const lines = block.split('\n');
    if (lines.every((line) => line.startsWith(':'))) {
      this.comments += 1;
      return;
    }
    const fields: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(': ');
      if (colon < 0) {
        this.problems.push(`${this.name}: a malformed line from ${from}: ${line.slice(0, 200)}`);
        return;
      }
      fields[line.slice(0, colon)] = line.slice(colon + 2);
    }
    if (Object.keys(fields).join() !== 'id,event,data') {
      this.problems.push(`${this.name}: a block from ${from} that is not id, event, data: ${block.slice(0, 300)}`);
      return;
    }
    const id = Number(fields.id);
    let data: any;
    try {
      data = JSON.parse(fields.data!);
      checkAgainstSchema('Event', data, `streamed event ${id}`);
    } catch (err) {
      this.problems.push(`${this.name}: event ${fields.id} from ${from}: ${(err as Error).message.slice(0, 300)}`);
      return;
    }
    if (!Number.isSafeInteger(id) || data.sequence !== id) this.problems.push(`${this.name}: id ${fields.id} from ${from} is not the sequence ${data.sequence}`);
    if (data.type?.name !== fields.event) this.problems.push(`${this.name}: event: ${fields.event} from ${from} is not the type ${data.type?.name}`);
    if (id <= this.lastId) this.problems.push(`${this.name}: event ${id} from ${from} again (last id ${this.lastId})`);
    else if (id !== this.lastId + 1) this.problems.push(`${this.name}: a gap: event ${id} from ${from} after ${this.lastId}`);
    this.events.push({ id, event: fields.event!, data });
    this.lastId = Math.max(this.lastId, id);
  }
}

export interface FollowerCheck {
  /** Events per project (N: each follower of it must hold 1..N). */
  counts: Map<string, number>;
  /** From the check's start until every follower held its N (or gave up). */
  caughtUpMs: number;
  /** Distinct events compared with GET /v1/event/<id>. */
  compared: number;
  problems: string[];
}

/**
 * Once every change has its event: each follower must come to hold exactly its project's events
 * 1..N (N from the database), in order, each once, and each event object must be the one
 * GET /v1/event/<id> answers. Stops the followers.
 */
export async function checkFollowers(followers: StreamFollower[], db: pg.Pool, client: ApiClient, timeoutMs = 30_000): Promise<FollowerCheck> {
  const problems: string[] = [];
  const started = Date.now();
  const projectIds = [...new Set(followers.map((f) => f.project.projectId))];
  const { rows } = await db.query<{ project_id: string; n: number; last: number; total: number }>(
    // Joined on the project, as Citus runs a join of its tables (docs/citus.md).
    `SELECT p.id AS project_id, count(e.id)::int AS n, coalesce(max(e.sequence), 0)::int AS last,
            coalesce(max(c.total), 0)::int AS total
     FROM projects p
     LEFT JOIN project_event_counts c ON c.project_id = p.id
     LEFT JOIN events e ON e.project_id = p.id
     WHERE p.id = ANY ($1::text[])
     GROUP BY p.id`, [projectIds]);
  const counts = new Map<string, number>();
  for (const row of rows) {
    if (row.n !== row.last || row.n !== row.total) problems.push(`project ${row.project_id}: ${row.n} events, last sequence ${row.last}, counter ${row.total}`);
    counts.set(row.project_id, row.n);
  }
  await Promise.all(followers.map(async (f) => {
    const n = counts.get(f.project.projectId)!;
    if (!(await f.reach(n, timeoutMs))) problems.push(`${f.name}: only up to event ${f.lastId} of ${n} within ${timeoutMs} ms after the last change`);
  }));
  const caughtUpMs = Date.now() - started;
  // Anything beyond N would show up here too: let a straggler arrive before stopping.
  await sleep(500);
  await Promise.all(followers.map((f) => f.stop()));

  const byId = new Map<string, { project: TestProject; data: unknown }>();
  for (const f of followers) {
    problems.push(...f.problems);
    const n = counts.get(f.project.projectId)!;
    const ids = f.events.map((e) => e.id);
    const wrong = ids.findIndex((id, i) => id !== i + 1);
    if (ids.length !== n || wrong >= 0) {
      problems.push(`${f.name}: holds ${ids.length} events, not 1..${n} in order` +
        (wrong >= 0 ? `: at position ${wrong + 1} event ${ids[wrong]} (around: ${ids.slice(Math.max(0, wrong - 3), wrong + 4).join(',')})` : ''));
    }
    for (const e of f.events) {
      const seen = byId.get(e.data.id);
      if (!seen) byId.set(e.data.id, { project: f.project, data: e.data });
      else if (!isDeepStrictEqual(seen.data, e.data)) problems.push(`${f.name}: event ${e.data.id} differs from another follower's copy`);
    }
  }
  // Each distinct event once against the API's own answer, a few at a time.
  const queue = [...byId];
  const compare = async () => {
    for (let item = queue.shift(); item; item = queue.shift()) {
      const [id, { project, data }] = item;
      try {
        const reply = await client.request('GET', `/v1/event/${id}`, { key: project.key });
        if (reply.status !== 200) problems.push(`GET /v1/event/${id}: ${reply.status} ${reply.text.slice(0, 200)}`);
        else if (!isDeepStrictEqual(reply.body.response, data)) {
          problems.push(`event ${id} as streamed differs from GET /v1/event/${id}: ${JSON.stringify(data)} vs ${reply.text.slice(0, 600)}`);
        }
      } catch (err) {
        problems.push(`GET /v1/event/${id}: ${err instanceof ConnectionError ? err.code : (err as Error).message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: 24 }, compare));
  return { counts, caughtUpMs, compared: byId.size, problems };
}

/** The figures of a set of followers, for recordFigure: reconnects, events, why connections ended, the worst time offline. */
export function followerFigures(followers: StreamFollower[]): Record<string, string | number> {
  const projects = new Set(followers.map((f) => f.project.projectId)).size;
  const endings = new Map<string, number>();
  for (const f of followers) for (const [why, n] of f.endings) endings.set(why, (endings.get(why) ?? 0) + n);
  const targets = new Map<string, number>();
  for (const f of followers) for (const [name, n] of f.byTarget) targets.set(name, (targets.get(name) ?? 0) + n);
  return {
    'stream clients (projects x streams each)': `${projects} x ${followers.length / projects}`,
    'stream reconnects per client': followers.map((f) => f.reconnects).join(', '),
    'stream events received per client': followers.map((f) => f.events.length).join(', '),
    'stream connections ended by (all clients)': [...endings].sort((a, b) => b[1] - a[1]).map(([why, n]) => `${why} ${n}`).join(', '),
    'streams per web process (all clients)': [...targets].map(([name, n]) => `${name} ${n}`).join(', '),
    'stream longest without a connection, ms': Math.max(...followers.map((f) => f.maxOfflineMs)),
  };
}
