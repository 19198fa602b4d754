// The worker's side of webhooks: events turned into deliveries owed (fan-out), deliveries claimed
// under a lease, attempted concurrently within bounds, and their results recorded in batches.
// What is owed lives in PostgreSQL; a process holds only what it has claimed.
import https from 'node:https';
import pg from 'pg';
import { newIds } from '../lib/ids.ts';
import { createPool, pipelined, queryFile } from '../lib/pool.ts';
import { errorFields } from '../lib/log.ts';
import type { NamedValues } from '../lib/sql-files.ts';
import { SYSTEM_ACTOR } from './actor.ts';
import { recordEvent, EVENTS_CHANNEL, REPLAYS_CHANNEL } from './audit.ts';
import { sealingKeyOf, unseal } from './sealing.ts';
import { change, type Services } from './services.ts';
import { deliveryBody, startAttempt, type Attempt, type AttemptResult } from './webhook-attempt.ts';

/** Events one endpoint's fan-out looks at per statement. */
const FANOUT_BATCH = 1000;
/**
 * An attempt is bounded well inside its lease, so two workers never hold one delivery at once;
 * what a killed worker held waits this long. At least twice the attempt's bound and a margin.
 */
const LEASE_MIN_SECONDS = 30;
/**
 * Claimed per endpoint, over all workers, as a multiple of the attempts one worker runs at once
 * there: the next attempt starts as one ends, not a claim's round trips later. A lease frees when
 * its result is recorded, which the next claim does first, so the depth covers a claim's time.
 */
const CLAIM_DEPTH = 8;
/** A claimed delivery not begun this long before its lease would end is handed back instead. */
const LEASE_MARGIN_MS = 5000;

/** The lease: at least LEASE_MIN_SECONDS, and twice the attempt's bound and the margin. */
const leaseSeconds = (timeoutMs: number) => Math.max(LEASE_MIN_SECONDS, Math.ceil((2 * timeoutMs + LEASE_MARGIN_MS) / 1000));
/** Retry-After is honoured up to a day, the default schedule's longest wait: no receiver parks a delivery. */
const RETRY_AFTER_MAX_S = 86_400;
/** Every attempt failing this long disables the endpoint (`failing`). */
export const FAILING_DISABLES_AFTER_S = 5 * 86_400;
/** The least time between two passes: a stream of completions shares one record and claim. */
const PASS_GAP_MS = 5;
const RECORD_RETRY_MS = 500;
const LISTEN_RETRY_MS = 1000;
/** Endpoints whose connections and opened secrets are kept; the least recently used go past it. */
const AGENTS_KEPT = 1000;
/** The worker's listener to the writer's notices, by name (a web process's own is unnamed). */
export const WEBHOOK_LISTENER = 'pms-webhooks';
/** How long a stopping worker lets its attempts finish before it hands them back. */
const STOP_GRACE_MS = 3000;

interface ClaimRow {
  endpoint_id: string;
  event_id: string;
  sequence: number;
  attempts: number;
  url: string;
  secret: string;
  previous_secret: string | null;
  body: string;
  type: string;
  created_at: number;
}

/** An endpoint's secrets as sealed in its row, and opened once rather than at each attempt. */
interface OpenedSecrets {
  sealed: string;
  previousSealed: string | null;
  secret: string;
  previousSecret: string | null;
}

interface Finished {
  claim: ClaimRow;
  result: AttemptResult;
  beganMs: number;
}

/** Seconds until the next attempt after a failed `attempt`, or null when it was the last. */
export function retryDelay(schedule: readonly number[], attempt: number, retryAfterS: number | null): number | null {
  const step = schedule[attempt - 1];
  if (step === undefined) return null;
  return Math.max(step, Math.min(retryAfterS ?? 0, RETRY_AFTER_MAX_S));
}

/** One run of `work` at a time; asked during a run, it runs once more after it, at least PASS_GAP_MS apart. */
class Coalesced {
  private readonly work: () => Promise<void>;
  private readonly failed: (err: unknown) => void;
  private running: Promise<void> | undefined;
  private again = false;
  private lastAt = 0;

  constructor(work: () => Promise<void>, failed: (err: unknown) => void) {
    this.work = work;
    this.failed = failed;
  }

  ask(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        const wait = this.lastAt + PASS_GAP_MS - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        this.lastAt = Date.now();
        await this.work();
      } while (this.again);
    })().catch(this.failed).finally(() => {
      this.running = undefined;
      // Asked as the last run ended.
      if (this.again) this.ask();
    });
  }

  settled(): Promise<void> {
    return this.running ?? Promise.resolve();
  }
}

const succeeded = (result: AttemptResult) => result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;

export class WebhookDispatcher {
  private readonly services: Services;
  private readonly pool: pg.Pool;
  private readonly agents = new Map<string, https.Agent>();
  private readonly secrets = new Map<string, OpenedSecrets>();
  private listener: pg.Client | undefined;
  private stopped = false;
  /** Deliveries this worker holds: claimed, waiting or in flight, or finished and not yet recorded. */
  private held = 0;
  /** Claimed deliveries waiting for a place among their endpoint's attempts, by endpoint. */
  private readonly waiting = new Map<string, Array<{ claim: ClaimRow; claimedAt: number }>>();
  /** Attempts running, by endpoint, and in all. */
  private readonly running = new Map<string, number>();
  private runningAll = 0;
  /** Attempts in flight, to give up if the worker stops before they end. */
  private readonly attempts = new Set<Attempt>();
  /** Set when the attempts in flight were given up: their results are not kept. */
  private gaveUp = false;
  private handingBack: Promise<void> | undefined;
  /** Attempts ended, their results not recorded yet: the next claim records them first. */
  private readonly finished: Finished[] = [];
  /** Claims given back undone (too near their lease's end, or the worker stopping), to release. */
  private readonly abandoned: ClaimRow[] = [];
  /** Fan-outs and claims run apart: neither waits for the other's round trips. */
  private readonly fanOuts: Coalesced;
  private readonly claims: Coalesced;
  /** Projects whose events moved since the last fan-out; null: look at every project. */
  private moved: Set<string> | null = new Set();
  private drained: (() => void) | undefined;

  constructor(services: Services) {
    const connectionString = services.pool.options.connectionString!;
    // Pipelining: a claim's four statements, and a fan-out's two, go in one round trip.
    this.pool = createPool(services.config, services.log, connectionString, 4, { pipelining: true });
    this.services = { ...services, pool: this.pool, db: this.pool };
    const warn = (what: string) => (err: unknown) => this.services.log.warn({ err: errorFields(err) }, what);
    this.fanOuts = new Coalesced(() => this.fanOutMoved(), warn('webhook fan-out failed'));
    this.claims = new Coalesced(() => this.recordAndClaim(), warn('webhook claim failed'));
  }

  start(): void {
    this.listen();
  }

  /** Soon: a fan-out of the projects named (every project when none is), and claims. */
  kick(projects?: string[]): void {
    if (this.stopped) return;
    if (projects === undefined) this.moved = null;
    else if (this.moved) for (const project of projects) this.moved.add(project);
    if (projects === undefined || projects.length > 0) this.fanOuts.ask();
    // A fan-out asks for a claim when it ends; a notice's claim before it would find nothing new.
    if (projects === undefined) this.claims.ask();
  }

  private async fanOutMoved(): Promise<void> {
    const moved = this.moved;
    this.moved = new Set();
    if (this.stopped || (moved !== null && moved.size === 0)) return;
    try {
      await this.fanOut(moved === null ? null : [...moved]);
    } catch (err) {
      this.moved = null;
      throw err;
    }
    this.claims.ask();
  }

  /** New events and replays together, each its own statement, on one connection: in turn, in one round trip. */
  private async fanOut(projects: string[] | null): Promise<void> {
    const fanOut = (client: pg.PoolClient, query: string) => queryFile<{ more: boolean }>(client, query, [projects, FANOUT_BATCH]);
    for (;;) {
      const more = await pipelined(this.pool, (client) => Promise.all([fanOut(client, 'webhook_fanout'), fanOut(client, 'webhook_fanout_replay')])
        .then((answers) => answers.some(([row]) => row?.more)));
      if (!more || this.stopped) break;
    }
  }

  /**
   * One pass: the results finished since the last, then a claim. Endpoints whose every result
   * succeeded are recorded in the claim's own transaction (BEGIN, record, lock, claim, COMMIT in
   * one round trip), so the leases they free are claimed again at once; the others first, in a
   * transaction with the disablings they call for. One pass at a time keeps each endpoint's results
   * in order. While the database is away the results wait, retried every RECORD_RETRY_MS.
   */
  private async recordAndClaim(): Promise<void> {
    const batch = this.finished.splice(0);
    const failing = new Set(batch.filter((f) => !succeeded(f.result)).map((f) => f.claim.endpoint_id));
    const withFailures = batch.filter((f) => failing.has(f.claim.endpoint_id));
    const successes = batch.filter((f) => !failing.has(f.claim.endpoint_id));
    let unrecorded = batch;
    try {
      if (withFailures.length > 0) {
        await this.recordBatch(withFailures);
        this.settled(withFailures.length);
        unrecorded = successes;
      }
      await this.claim(successes);
    } catch (err) {
      if (unrecorded.length > 0) {
        this.finished.unshift(...unrecorded);
        this.services.log.warn({ err: errorFields(err), attempts: unrecorded.length }, 'webhook attempts not recorded yet; retrying');
        setTimeout(() => this.claims.ask(), RECORD_RETRY_MS).unref();
        return;
      }
      throw err;
    }
  }

  /** Records `successes` (none failed) and, unless stopping, claims what is due, in one transaction. */
  private async claim(successes: Finished[]): Promise<void> {
    const free = this.stopped ? 0 : this.services.config.webhookMaxInFlight * CLAIM_DEPTH - this.held + successes.length;
    if (free <= 0 && successes.length === 0) return;
    const rows = await pipelined(this.pool, (client) => Promise.all([
      successes.length > 0 ? queryFile(client, 'webhook_attempts_record', this.recordValues(successes)) : undefined,
      ...(free > 0 ? [queryFile(client, 'webhook_claim_lock'), queryFile<ClaimRow>(client, 'webhook_claim', [
        free, this.services.config.webhookMaxInFlightPerEndpoint * CLAIM_DEPTH, leaseSeconds(this.services.config.webhookTimeoutMs),
      ])] : []),
    ]).then((answers) => (answers[2] ?? []) as ClaimRow[]), { transaction: true });
    this.settled(successes.length);
    const claimedAt = Date.now();
    this.held += rows.length;
    for (const claim of rows) {
      let queue = this.waiting.get(claim.endpoint_id);
      if (!queue) this.waiting.set(claim.endpoint_id, queue = []);
      queue.push({ claim, claimedAt });
    }
    this.pumpAll();
  }

  /**
   * Starts the endpoint's waiting deliveries while it runs fewer attempts than its bound and the
   * process fewer than its own; a waiting endpoint then goes to the back of the line.
   */
  private pump(endpoint: string): void {
    const queue = this.waiting.get(endpoint);
    if (!queue) return;
    const { webhookMaxInFlightPerEndpoint: bound, webhookMaxInFlight: processBound, webhookTimeoutMs } = this.services.config;
    const latestStart = leaseSeconds(webhookTimeoutMs) * 1000 - webhookTimeoutMs - LEASE_MARGIN_MS;
    while (queue.length > 0 && (this.stopped || ((this.running.get(endpoint) ?? 0) < bound && this.runningAll < processBound))) {
      const { claim, claimedAt } = queue.shift()!;
      if (this.stopped || Date.now() - claimedAt > latestStart) this.handBack(claim);
      else this.launch(claim);
    }
    this.waiting.delete(endpoint);
    if (queue.length > 0) this.waiting.set(endpoint, queue);
  }

  /** A place freed in the process: the endpoints waiting longest first. */
  private pumpAll(): void {
    for (const endpoint of [...this.waiting.keys()]) {
      if (!this.stopped && this.runningAll >= this.services.config.webhookMaxInFlight) return;
      this.pump(endpoint);
    }
  }

  private launch(claim: ClaimRow): void {
    const endpoint = claim.endpoint_id;
    this.running.set(endpoint, (this.running.get(endpoint) ?? 0) + 1);
    this.runningAll++;
    const beganMs = Date.now();
    const attempt = this.attempt(claim);
    this.attempts.add(attempt);
    attempt.done.then((result) => {
      this.attempts.delete(attempt);
      this.runningAll--;
      const left = this.running.get(endpoint)! - 1;
      if (left === 0) this.running.delete(endpoint);
      else this.running.set(endpoint, left);
      if (this.gaveUp) this.handBack(claim);
      else {
        this.finished.push({ claim, result, beganMs });
        this.claims.ask();
      }
      this.pump(endpoint);
      this.pumpAll();
    });
  }

  /** A delivery given back undone (its lease too near its end, or the worker stopping), in batches. */
  private handBack(claim: ClaimRow): void {
    this.abandoned.push(claim);
    this.settled(1);
    this.handingBack ??= new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.release(this.abandoned.splice(0)))
      .finally(() => { this.handingBack = undefined; });
  }

  private attempt(claim: ClaimRow): Attempt {
    const { config } = this.services;
    let secrets: OpenedSecrets;
    try {
      secrets = this.secretsOf(claim);
    } catch (err) {
      // Another SEALING_KEY than the one that sealed it: an operator's fault, not the receiver's.
      this.services.log.error({ endpoint: claim.endpoint_id, err: errorFields(err) }, 'webhook secret cannot be unsealed: is SEALING_KEY the one it was sealed with?');
      return { done: Promise.resolve({ statusCode: null, error: 'secret unreadable', durationMs: 0, retryAfterS: null }), cancel: () => {} };
    }
    return startAttempt({
      url: claim.url, secret: secrets.secret, previousSecret: secrets.previousSecret, eventId: claim.event_id, body: deliveryBody(claim.type, Number(claim.created_at), claim.body),
    }, { allowPrivate: config.webhookAllowPrivate, timeoutMs: config.webhookTimeoutMs, agent: this.agentOf(claim) });
  }

  /** The claim's secrets opened, once for each sealed value: a rotation seals another. */
  private secretsOf(claim: ClaimRow): OpenedSecrets {
    const kept = this.secrets.get(claim.endpoint_id);
    if (kept && kept.sealed === claim.secret && kept.previousSealed === claim.previous_secret) return kept;
    const key = sealingKeyOf(this.services.config);
    const opened: OpenedSecrets = {
      sealed: claim.secret,
      previousSealed: claim.previous_secret,
      secret: unseal(key, claim.secret, claim.endpoint_id),
      previousSecret: claim.previous_secret === null ? null : unseal(key, claim.previous_secret, claim.endpoint_id),
    };
    this.secrets.delete(claim.endpoint_id);
    if (this.secrets.size >= AGENTS_KEPT) this.secrets.delete(this.secrets.keys().next().value!);
    this.secrets.set(claim.endpoint_id, opened);
    return opened;
  }

  /** Kept-alive connections per endpoint; each was opened to an address that was checked. */
  private agentOf(claim: ClaimRow): https.Agent {
    // By URL as stored, not parsed at each attempt: a changed URL gets connections of its own.
    const key = `${claim.endpoint_id} ${claim.url}`;
    let agent = this.agents.get(key);
    if (agent) {
      this.agents.delete(key);
    } else {
      const perEndpoint = this.services.config.webhookMaxInFlightPerEndpoint;
      agent = new https.Agent({ keepAlive: true, maxSockets: perEndpoint, maxFreeSockets: perEndpoint, timeout: this.services.config.webhookTimeoutMs });
      if (this.agents.size >= AGENTS_KEPT) {
        const [oldest, old] = this.agents.entries().next().value!;
        this.agents.delete(oldest);
        old.destroy();
      }
    }
    this.agents.set(key, agent);
    return agent;
  }

  private settled(count: number): void {
    this.held -= count;
    if (this.held === 0) this.drained?.();
  }

  /**
   * The values of webhook_attempts_record for a batch: one statement logs the attempts, settles
   * their deliveries and moves each endpoint's failing streak.
   */
  private recordValues(batch: Finished[]): NamedValues {
    const schedule = this.services.config.webhookRetryScheduleS;
    const last = new Map<string, boolean>();
    for (const { claim, result } of batch) last.set(claim.endpoint_id, succeeded(result));
    return {
      endpoint_ids: batch.map((f) => f.claim.endpoint_id), event_ids: batch.map((f) => f.claim.event_id),
      attempts: batch.map((f) => f.claim.attempts), attempt_ids: newIds('whda', batch.length), sequences: batch.map((f) => f.claim.sequence),
      status_codes: batch.map((f) => f.result.statusCode), errors: batch.map((f) => f.result.error), durations_ms: batch.map((f) => f.result.durationMs),
      retries_in_s: batch.map(({ claim, result }) => (succeeded(result) ? null : retryDelay(schedule, claim.attempts, result.retryAfterS))),
      began_ms: batch.map((f) => f.beganMs),
      batch_endpoint_ids: [...last.keys()], last_succeeded: [...last.values()], failing_disables_after_s: FAILING_DISABLES_AFTER_S,
    };
  }

  /**
   * Records a batch with failures in a transaction with the disablings it calls for (410, or the
   * failing rule), so an attempt is never seen logged before them.
   */
  private async recordBatch(batch: Finished[]): Promise<void> {
    const gone = new Set(batch.filter((f) => f.result.statusCode === 410).map((f) => f.claim.endpoint_id));
    await change(this.services, async (tx) => {
      const failing = await queryFile<{ id: string }>(tx.client, 'webhook_attempts_record', this.recordValues(batch));
      const disabling = new Map<string, string>([...gone].map((id) => [id, 'gone']));
      for (const { id } of failing) if (!disabling.has(id)) disabling.set(id, 'failing');
      for (const [id, reason] of disabling) {
        const [disabled] = await queryFile<{ id: string; project_id: string; updated_at: number }>(tx.client, 'webhook_disable', [id, reason]);
        if (!disabled) continue;
        await recordEvent(tx, SYSTEM_ACTOR, {
          projectId: disabled.project_id, type: 'webhook.disabled', related: { table: 'webhook', id }, details: { reason }, at: disabled.updated_at,
        });
        this.services.log.info({ endpoint: id, reason }, 'webhook endpoint disabled');
      }
    });
  }

  /** Hands deliveries back undone: due again at once, for this or another worker. */
  private release(claims: ClaimRow[]): Promise<void> {
    if (claims.length === 0) return Promise.resolve();
    return queryFile(this.pool, 'webhook_attempts_release', [
      claims.map((c) => c.endpoint_id), claims.map((c) => c.event_id), claims.map((c) => c.attempts),
    ]).then(() => undefined, (err: unknown) => {
      // Their leases run out instead.
      this.services.log.warn({ err: errorFields(err) }, 'webhook deliveries not handed back');
    });
  }

  /**
   * The writer's notice of each batch of events (`<project>:<last sequence>`), and a replay's
   * (`<project>`), start a pass at once.
   */
  private listen(): void {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.pool.options.connectionString, application_name: WEBHOOK_LISTENER });
    const lost = () => {
      if (this.listener !== client) return;
      this.listener = undefined;
      client.end().catch(() => {});
      if (!this.stopped) setTimeout(() => this.listen(), LISTEN_RETRY_MS).unref();
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (message) => {
      const project = (message.payload ?? '').split(':')[0];
      if (project) this.kick([project]);
    });
    this.listener = client;
    // Notices sent while it was away are lost: a pass over every project makes up for them.
    client.connect().then(() => client.query(`LISTEN ${EVENTS_CHANNEL}; LISTEN ${REPLAYS_CHANNEL}`)).then(() => this.kick(), lost);
  }

  /** Stops claiming; attempts in flight get a grace to finish, the rest are handed back. */
  async stop(): Promise<void> {
    this.stopped = true;
    const listener = this.listener;
    this.listener = undefined;
    await listener?.end().catch(() => {});
    await this.fanOuts.settled();
    await this.claims.settled();
    // What waits for a place is handed back at once; what runs gets the grace.
    this.pumpAll();
    if (this.held > 0) {
      const drained = new Promise<void>((resolve) => { this.drained = resolve; });
      const grace = new Promise<void>((resolve) => setTimeout(resolve, STOP_GRACE_MS).unref());
      await Promise.race([drained, grace]);
      this.gaveUp = true;
      for (const attempt of this.attempts) attempt.cancel();
      await Promise.race([drained, new Promise<void>((resolve) => setTimeout(resolve, 2000).unref())]);
    }
    // What finished during the grace is recorded by a last pass (it claims nothing now), retried
    // while the database is away.
    for (;;) {
      this.claims.ask();
      await this.claims.settled();
      if (this.finished.length === 0) break;
      await new Promise((resolve) => setTimeout(resolve, RECORD_RETRY_MS));
    }
    await this.handingBack;
    await this.release(this.abandoned.splice(0));
    for (const agent of this.agents.values()) agent.destroy();
    await this.pool.end();
  }
}

/** Whether the sweep should send a job: a delivery due, or events or a replay to queue. */
export async function webhooksPending(pool: pg.Pool): Promise<boolean> {
  const [row] = await queryFile<{ pending: boolean }>(pool, 'webhook_pending');
  return row!.pending;
}
