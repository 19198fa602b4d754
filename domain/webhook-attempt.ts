// One delivery attempt: the signed POST of an event to an endpoint, to the address that was
// checked, within one deadline, reading at most 64 kB of the answer and following no redirect.
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { hostOf, PrivateAddress, resolveChecked, type Resolved } from './webhook-addresses.ts';

/** The most of an answer read: enough for any acknowledgement, and no more held per attempt. */
export const ANSWER_READ_BYTES = 64 * 1024;

export interface AttemptTarget {
  url: string;
  /** The endpoint's secret, and the one before its last rotation while that is still signed with. */
  secret: string;
  previousSecret: string | null;
  eventId: string;
  /** The request body: the same bytes on every attempt. */
  body: string;
}

export interface AttemptResult {
  statusCode: number | null;
  /** Why no answer came, or null when one did. */
  error: string | null;
  durationMs: number;
  /** Seconds the receiver asked to wait (Retry-After), if it said. */
  retryAfterS: number | null;
}

/** The body of a delivery: `{"type", "timestamp", "data"}`, the event as stored, not rebuilt. */
export function deliveryBody(type: string, createdAt: number, eventJson: string): string {
  return `{"type":${JSON.stringify(type)},"timestamp":${JSON.stringify(new Date(createdAt * 1000).toISOString().replace('.000Z', 'Z'))},"data":${eventJson}}`;
}

/**
 * The Standard Webhooks headers. The package signs under one secret per call; during a rotation's
 * grace the two signatures it makes are sent space-separated, as the standard allows.
 */
export function signedHeaders(target: AttemptTarget, now: Date): Record<string, string> {
  const signatures = [target.secret, ...(target.previousSecret ? [target.previousSecret] : [])]
    .map((secret) => new Webhook(secret).sign(target.eventId, now, target.body));
  return {
    'content-type': 'application/json',
    'user-agent': 'pms-webhooks/1',
    'webhook-id': target.eventId,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}

const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH|ERR_OSSL_|EPROTO$)/;

/** A short reason for the delivery log, never the receiver's words. */
export function reasonOf(err: unknown): string {
  if (err instanceof PrivateAddress) return 'private address';
  const code = String((err as { code?: unknown } | null)?.code ?? '');
  if (code === 'ETIMEDOUT' || code === 'ABORT_ERR') return 'timeout';
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'connection reset';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME' || code === 'EAI_NODATA') return 'dns';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'unreachable';
  if (TLS_CODES.test(code)) return 'tls';
  if (code.startsWith('HPE_')) return 'invalid response';
  return 'connection error';
}

/** Retry-After as seconds from now (a number of seconds or an HTTP date); null when absent or unreadable. */
export function retryAfterSeconds(value: string | undefined, nowMs = Date.now()): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - nowMs) / 1000));
}

/** A lookup that answers the address already checked, whatever the name resolves to now. */
function fixedLookup(resolved: Resolved): LookupFunction {
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address: resolved.address, family: resolved.family }]);
    else callback(null, resolved.address, resolved.family);
  }) as LookupFunction;
}

const timedOut = () => Object.assign(new Error('the attempt took too long'), { code: 'ETIMEDOUT' });
const givenUp = () => Object.assign(new Error('the attempt was given up'), { code: 'ABORT_ERR' });

export interface AttemptOptions {
  allowPrivate: boolean;
  timeoutMs: number;
  agent: https.Agent;
}

/** An attempt under way: its result (never a rejection: every failure is a result), and how to give it up. */
export interface Attempt {
  done: Promise<AttemptResult>;
  /** Gives the attempt up (the worker stopping): then its result is not to be kept. */
  cancel(): void;
}

/**
 * One attempt under way. One timer and plain callbacks end it early, not an AbortController,
 * signals and their listeners: those weighed in the worker's profile beside the request itself.
 */
class AttemptRun implements Attempt {
  readonly done: Promise<AttemptResult>;
  private readonly began = performance.now();
  private readonly timer: NodeJS.Timeout;
  private ended: Error | undefined;
  /** Ends the step under way (the lookup's wait, or the request). */
  private stopStep: ((err: Error) => void) | undefined;

  constructor(target: AttemptTarget, options: AttemptOptions) {
    this.timer = setTimeout(() => this.end(timedOut()), options.timeoutMs).unref();
    this.done = this.run(target, options);
  }

  cancel(): void {
    this.end(givenUp());
  }

  private end(err: Error): void {
    if (this.ended) return;
    this.ended = err;
    this.stopStep?.(err);
  }

  /** Waits for one step, which end() stops with its error (`stop` undoes what the step began). */
  private step<T>(work: Promise<T>, stop?: (err: Error) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.stopStep = (err) => {
        stop?.(err);
        reject(err);
      };
      if (this.ended) this.stopStep(this.ended);
      work.then(resolve, reject);
    });
  }

  private async run(target: AttemptTarget, options: AttemptOptions): Promise<AttemptResult> {
    try {
      const url = new URL(target.url);
      // A lookup cannot be cancelled: the attempt stops waiting for it instead.
      const resolved = await this.step(resolveChecked(hostOf(url), options.allowPrivate));
      if (this.ended) throw this.ended;
      const request = post(url, resolved, signedHeaders(target, new Date()), target.body, options.agent);
      const answer = await this.step(request.answer, request.abort);
      return this.result(answer.statusCode, null, answer.retryAfterS);
    } catch (err) {
      return this.result(null, reasonOf(this.ended ?? err));
    } finally {
      clearTimeout(this.timer);
    }
  }

  private result(statusCode: number | null, error: string | null, retryAfterS: number | null = null): AttemptResult {
    return { statusCode, error, retryAfterS, durationMs: Math.round(performance.now() - this.began) };
  }
}

/** Starts one attempt. */
export function startAttempt(target: AttemptTarget, options: AttemptOptions): Attempt {
  return new AttemptRun(target, options);
}

/** Makes one attempt to its end; never throws: every failure is a result. */
export function attemptDelivery(target: AttemptTarget, options: AttemptOptions): Promise<AttemptResult> {
  return startAttempt(target, options).done;
}

/** The request, and what ends it early (destroying it, so its connection is not reused). */
function post(url: URL, resolved: Resolved, headers: Record<string, string>, body: string, agent: https.Agent) {
  const payload = Buffer.from(body, 'utf8');
  let req!: ReturnType<typeof https.request>;
  const answer = new Promise<{ statusCode: number; retryAfterS: number | null }>((resolve, reject) => {
    req = https.request(url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(payload.length) },
      agent,
      lookup: fixedLookup(resolved),
    }, (res) => {
      let read = 0;
      const done = () => resolve({ statusCode: res.statusCode ?? 0, retryAfterS: retryAfterSeconds(res.headers['retry-after']) });
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read >= ANSWER_READ_BYTES) {
          // Enough read: the rest is not wanted, and the connection cannot be reused without it.
          res.destroy();
          done();
        }
      });
      res.on('end', done);
      res.on('error', reject);
    });
    req.on('error', reject);
  });
  req.end(payload);
  return { answer, abort: (err: Error) => req.destroy(err) };
}
