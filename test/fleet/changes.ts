// A steady stream of key creations through the balancer, each with its own Idempotency-Key and
// retried until it is answered 2xx (or given up), every attempt written down; then the check that
// each creation left exactly one key and one event, and nothing else was made.
import type pg from 'pg';
import type { FleetClient } from './fleet.ts';

export interface Attempt {
  at: number;
  ms: number;
  /** The HTTP status, or the connection error's code. */
  status: number | string;
  replayed: boolean;
  /** Who answered: the service (its X-Request-Id), the balancer itself, or nobody. */
  by: 'service' | 'balancer' | 'none';
  retryAfter?: string;
}

export interface Creation {
  name: string;
  idempotencyKey: string;
  attempts: Attempt[];
  /** The key the 2xx answer named; undefined while none came. */
  keyId?: string;
  /** What a 2xx answered; a replay must answer the same. */
  secret?: string;
}

export interface StreamOptions {
  writers?: number;
  /** How long one creation is retried before it is given up (and settled by the rows). */
  retryForMs?: number;
  /** An attempt not answered in this long counts as a hang (and is retried). */
  attemptTimeoutMs?: number;
  /** Pause between one writer's creations. */
  pauseMs?: number;
  /** Where to send them: the balancer (default), or a web host's own origin. */
  origin?: string;
}

/** Statuses that say nothing was decided, or that the first try is still running: sent again. */
const RETRIED = new Set([409, 502, 503, 504]);
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class ChangeStream {
  readonly creations: Creation[] = [];
  /** Answers that should never come (a 4xx other than 409, a 500, a different replay …). */
  readonly unexpected: string[] = [];
  readonly secrets: string[] = [];
  readonly #client: FleetClient;
  readonly #key: string;
  readonly #tag = Math.random().toString(36).slice(2, 8);
  readonly #options: Required<StreamOptions>;
  #counter = 0;
  #stopped = false;
  #running: Promise<void>[] = [];

  constructor(client: FleetClient, projectKey: string, options: StreamOptions = {}) {
    this.#client = client;
    this.#key = projectKey;
    this.#options = { writers: 6, retryForMs: 60_000, attemptTimeoutMs: 30_000, pauseMs: 20, origin: '', ...options };
  }

  /** Names every creation of this stream starts with. */
  get prefix(): string {
    return `fleet ${this.#tag}-`;
  }

  start(): void {
    this.#stopped = false;
    this.#running = Array.from({ length: this.#options.writers }, () => this.#write());
  }

  /** Stops starting creations; resolves once those in hand are answered or given up. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all(this.#running);
  }

  async #write(): Promise<void> {
    while (!this.#stopped) {
      await this.#create();
      await sleep(this.#options.pauseMs);
    }
  }

  async #create(): Promise<void> {
    const n = ++this.#counter;
    const creation: Creation = { name: `${this.prefix}${n}`, idempotencyKey: `fleet-${this.#tag}-${n}`, attempts: [] };
    this.creations.push(creation);
    const deadline = Date.now() + this.#options.retryForMs;
    for (;;) {
      const at = Date.now();
      const reply = await this.#client.request('POST', `${this.#options.origin}/v1/key`, {
        headers: { authorization: `Bearer ${this.#key}`, 'idempotency-key': creation.idempotencyKey },
        body: { name: creation.name, scope: ['key:read'] },
        timeoutMs: this.#options.attemptTimeoutMs,
      });
      const status = 'status' in reply ? reply.status : reply.error;
      const replayed = 'status' in reply && reply.headers['idempotent-replayed'] === 'true';
      const by = !('status' in reply) ? 'none' : reply.headers['x-request-id'] ? 'service' : 'balancer';
      const retryAfter = 'status' in reply ? reply.headers['retry-after'] as string | undefined : undefined;
      creation.attempts.push({ at, ms: Date.now() - at, status, replayed, by, ...(retryAfter ? { retryAfter } : {}) });
      if ('status' in reply && reply.status === 201) {
        const { id, key } = JSON.parse(reply.text).response as { id: string; key: string };
        if (creation.keyId !== undefined && (creation.keyId !== id || creation.secret !== key)) {
          this.unexpected.push(`${creation.name}: a replay answered ${id}, the first answer ${creation.keyId}`);
        }
        creation.keyId = id;
        creation.secret = key;
        this.secrets.push(key);
        return;
      }
      if ('status' in reply && !RETRIED.has(reply.status)) {
        this.unexpected.push(`${creation.name}: ${reply.status} ${reply.text.slice(0, 300)}`);
        return;
      }
      if (Date.now() > deadline) return;
      // 409: the first try still holds the value's lock (its Retry-After is 1 s; a quarter is soon enough).
      const inProgress = 'status' in reply && reply.status === 409;
      await sleep((inProgress ? 250 : 50) + Math.random() * (inProgress ? 250 : 150));
    }
  }

  /** Every attempt that started in [from, to). */
  attempts(from = 0, to = Infinity): Attempt[] {
    return this.creations.flatMap((c) => c.attempts).filter((a) => a.at >= from && a.at < to);
  }

  /** Every attempt in [from, to) that was not a 2xx. */
  failures(from = 0, to = Infinity): Attempt[] {
    return this.attempts(from, to).filter((a) => !(typeof a.status === 'number' && a.status < 300));
  }

  /** When the first 2xx after `from` was answered, in ms after `from`; undefined if none. */
  firstSuccessAfter(from: number): number | undefined {
    const ends = this.attempts(from).filter((a) => a.status === 201).map((a) => a.at + a.ms - from);
    return ends.length > 0 ? Math.min(...ends) : undefined;
  }

  /** The longest attempt that started in [from, to). */
  longestMs(from = 0, to = Infinity): number {
    return Math.max(0, ...this.attempts(from, to).map((a) => a.ms));
  }

  /**
   * The longest wait for an answer once `from` had come: of every attempt answered after it, from
   * the later of its start and `from` to its answer (an attempt in flight at `from` counts too).
   */
  longestWaitAfter(from: number): number {
    const all = this.creations.flatMap((c) => c.attempts).filter((a) => a.at + a.ms >= from);
    return Math.max(0, ...all.map((a) => a.at + a.ms - Math.max(a.at, from)));
  }

  /** How many times each status or error came, in [from, to). */
  statusCounts(from = 0, to = Infinity): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const a of this.attempts(from, to)) {
      const label = a.by === 'balancer' ? `${a.status} (balancer)` : String(a.status);
      counts[label] = (counts[label] ?? 0) + 1;
    }
    return counts;
  }
}

export interface CountCheck {
  answered: number;
  givenUp: number;
  keys: number;
  events: number;
  problems: string[];
}

/**
 * Each creation answered 2xx has exactly one key of its name, the one answered, and that key exactly
 * one key.created event; one given up has at most one key, with one event if so; and the project
 * holds no other key of the stream's names.
 */
export async function checkCreations(db: pg.Pool, projectId: string, stream: ChangeStream): Promise<CountCheck> {
  const problems = [...stream.unexpected];
  const { rows: keys } = await db.query<{ id: string; name: string }>(
    'SELECT id, name FROM api_keys WHERE project_id = $1 AND starts_with(name, $2)', [projectId, stream.prefix]);
  const { rows: events } = await db.query<{ related_id: string; n: number }>(
    `SELECT e.related_id, count(*)::int AS n FROM events e JOIN event_types t ON t.id = e.type_id
     WHERE e.project_id = $1 AND t.name = 'key.created' AND e.related_id = ANY($2) GROUP BY e.related_id`, [projectId, keys.map((k) => k.id)]);
  const byName = new Map<string, string[]>();
  for (const key of keys) byName.set(key.name, [...(byName.get(key.name) ?? []), key.id]);
  const eventsOf = new Map(events.map((e) => [e.related_id, e.n]));
  const names = new Set(stream.creations.map((c) => c.name));
  let answered = 0;
  let givenUp = 0;
  for (const creation of stream.creations) {
    const ids = byName.get(creation.name) ?? [];
    if (ids.length > 1) problems.push(`doubled: ${ids.length} keys named ${creation.name} (answers ${creation.attempts.map((a) => a.status).join(',')})`);
    if (creation.keyId !== undefined) {
      answered += 1;
      if (ids.length === 0) problems.push(`lost: ${creation.name} was answered 201 (${creation.keyId}) and has no key`);
      else if (!ids.includes(creation.keyId)) problems.push(`${creation.name}: answered ${creation.keyId}, stored ${ids.join(', ')}`);
    } else {
      givenUp += 1;
    }
    for (const id of ids) {
      const n = eventsOf.get(id) ?? 0;
      if (n !== 1) problems.push(`${n} key.created events for ${id} (${creation.name}, answers ${creation.attempts.map((a) => a.status).join(',')})`);
    }
  }
  for (const name of byName.keys()) if (!names.has(name)) problems.push(`a key named ${name}, which no creation made`);
  return { answered, givenUp, keys: keys.length, events: events.reduce((sum, e) => sum + e.n, 0), problems };
}
