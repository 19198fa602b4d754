// A typed client of the API over `fetch`, for Node, browsers and edge runtimes alike: nothing of
// Node at run time, and types generated from the endpoint registry (api.ts), so a consumer needs
// none of the service's code or dependencies. Every write carries an Idempotency-Key, so a call
// whose answer was lost is sent again safely, with backoff. A Node program with a certificate of
// its own to trust (a self-signed one) takes the Client of node.ts.
import { ROUTES, type ApiKey, type AppListEntry, type Bodies, type Event, type JsonEndpointName, type Responses } from './api.ts';

export * from './api.ts';

/** What an endpoint answers on success. */
export type EndpointResponse<N extends JsonEndpointName> = Responses[N];
export interface Page<T> { object: 'list'; data: T[]; total: number }
export type NewKey = Bodies['keyCreate'];
export type NewApp = Bodies['appCreate'];
export type AppEdit = Bodies['appUpdate'];
export type NewWebhook = Bodies['webhookCreate'];
export type WebhookEdit = Bodies['webhookUpdate'];
export interface Paging { limit?: number; offset?: number }

/** What the client asks of `fetch`: the global one fits, and so does any that answers these members. */
export type Fetch = (url: string, init: FetchInit) => Promise<FetchResponse>;
export interface FetchInit { method: string; headers: Record<string, string>; body?: string; signal: AbortSignal }
export interface FetchResponse {
  status: number;
  statusText: string;
  headers: { get(name: string): string | null };
  body: ReadableStream<Uint8Array> | null;
}

/** A failure the service answered: the envelope's members, the HTTP status and the request id. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  /** The envelope's `code`: the status, or the string "404" for an unknown path. */
  readonly code: number | string;
  readonly title: string;
  readonly status: number;
  readonly requestId: string | undefined;
  /** Seconds to wait before retrying (429, 503), when the service said. */
  readonly retryAfterSeconds: number | undefined;

  constructor(fields: { code: number | string; title: string; message: string; status: number; requestId?: string | undefined; retryAfterSeconds?: number; cause?: unknown }) {
    super(fields.message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.code = fields.code;
    this.title = fields.title;
    this.status = fields.status;
    this.requestId = fields.requestId;
    this.retryAfterSeconds = fields.retryAfterSeconds;
  }
}

/** An answer that is not this API's envelope (a proxy's page, a truncated body): its status, and its first 200 characters as the message. */
export class NotAnApiAnswer extends ApiError {}

export interface ClientOptions {
  /** The HTTPS origin, e.g. https://127.0.0.1:8443. */
  baseUrl: string;
  /** The key secret, sk-project-…. */
  apiKey: string;
  /** Milliseconds before an attempt (or a stream's opening) is given up, from its start (default 30,000). */
  timeoutMs?: number;
  /**
   * How many times a call is sent again after a network failure, a timeout, a cut answer, 429 or
   * 502-504, and for a write 409 (default 3; 0 sends each call once). 4xx answers else are final.
   */
  maxRetries?: number;
  /** The fetch to send with (default: the global one). */
  fetch?: Fetch;
}

/** What a read takes besides its own arguments. */
export interface ReadOptions {
  /** This call's retries, instead of the client's `maxRetries`. */
  maxRetries?: number;
}

/** What a write (POST, PATCH, DELETE) takes besides its own arguments. */
export interface WriteOptions extends ReadOptions {
  /**
   * The Idempotency-Key to send, 1 to 255 visible ASCII characters: the service makes the change
   * at most once per key and value. Default: a new random UUID per call, the same on its retries.
   */
  idempotencyKey?: string;
}

/** A call of `Client.call`: path parameters by name, the query, the JSON body, an X-Request-Id to send. */
export interface Call extends WriteOptions {
  params?: Record<string, string>;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  requestId?: string;
}

export interface FollowOptions {
  /** Resume after this sequence (0: from the first event). */
  after?: number;
  /** Only these event type names. */
  types?: string[];
  /** Only the events of changes made with this key. */
  actor?: string;
  signal?: AbortSignal;
  /** Milliseconds to wait before reconnecting a dropped stream (default 1,000, at least 100; a 429's Retry-After if longer). */
  retryMs?: number;
  /** A stream silent this long is taken for a dead connection and reconnected (default 45,000: three of the service's 15 s heartbeats). */
  idleMs?: number;
}

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_RETRY_MS = 1000;
const MIN_RETRY_MS = 100;
const DEFAULT_IDLE_MS = 45_000;
const PAGE_SIZE = 100;
const DEFAULT_MAX_RETRIES = 3;
/** The first retry waits 250-500 ms, each next one up to twice as long, at most 2.5-5 s. */
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 5000;
/** A Retry-After longer than this ends the call with its error: the caller, not a hidden wait, decides. */
const MAX_RETRY_AFTER_S = 60;
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** A body's chunks as they come; `onChunk` hears of each. Leaving early cancels the rest. */
async function* chunksOf(body: ReadableStream<Uint8Array> | null, onChunk?: () => void): AsyncGenerator<Uint8Array> {
  if (!body) return;
  const reader = body.getReader();
  let done = false;
  try {
    while (true) {
      const read = await reader.read();
      if ((done = read.done)) return;
      onChunk?.();
      yield read.value;
    }
  } finally {
    if (!done) reader.cancel().catch(() => {});
  }
}

/** The messages of a text/event-stream body (the WHATWG rules this service's streams use). */
async function* serverSentEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<{ id?: string; event?: string; data?: string }> {
  // One decoder for the whole body: a character split between two chunks is decoded whole.
  const decoder = new TextDecoder();
  let buffered = '';
  let message: { id?: string; event?: string; data?: string } = {};
  for await (const chunk of body) {
    buffered += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline).replace(/\r$/, '');
      buffered = buffered.slice(newline + 1);
      if (line === '') {
        if (message.data !== undefined || message.id !== undefined) yield message;
        message = {};
      } else if (!line.startsWith(':')) {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') message.data = message.data === undefined ? value : `${message.data}\n${value}`;
        else if (field === 'id' || field === 'event') message[field] = value;
      }
    }
  }
}

/** The code Node gives a failure, on it or (fetch's "fetch failed") on its cause. */
function codeOf(err: unknown): string | undefined {
  const { code, cause } = (err ?? {}) as { code?: unknown; cause?: { code?: unknown } };
  if (typeof code === 'string') return code;
  return typeof cause?.code === 'string' ? cause.code : undefined;
}

const timedOut = (message: string) => Object.assign(new Error(message), { code: 'ETIMEDOUT' });

const requestIdOf = (res: FetchResponse) => res.headers.get('x-request-id') ?? undefined;

/** A whole answer's text; a body cut off (the connection reset mid-answer) is no answer of this API, what cut it its cause. */
async function textOf(res: FetchResponse): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  try {
    for await (const chunk of chunksOf(res.body)) text += decoder.decode(chunk, { stream: true });
  } catch (err) {
    throw new NotAnApiAnswer({
      code: res.status, title: res.statusText, status: res.status, requestId: requestIdOf(res), cause: err,
      message: `Not an answer of this API: the answer was cut off (${codeOf(err) ?? (err as Error).message})`,
    });
  }
  return text + decoder.decode();
}

/**
 * A path parameter as one segment. `.`, `..` and nothing would name another path (`GET /v1/key/.`
 * is the list), and no encoding keeps them (URLs resolve `%2E` segments too): refused here.
 */
function segment(name: string, value: string | undefined): string {
  if (value === undefined || value === '' || value === '.' || value === '..') throw new RangeError(`${name} must be an identifier, not ${JSON.stringify(value)}`);
  return encodeURIComponent(value);
}

interface Envelope { code: number | string; title: string; response: unknown }

/**
 * The envelope of an answer, or an ApiError saying the answer was none (not JSON, or JSON that is
 * not an object with a `code` and a `title`): a proxy's page, a truncated body.
 */
function envelopeOf(res: FetchResponse, text: string): Envelope {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const envelope = parsed as { code?: unknown; title?: unknown; response?: unknown } | null | undefined;
  if (typeof envelope !== 'object' || envelope === null || (typeof envelope.code !== 'number' && typeof envelope.code !== 'string') || typeof envelope.title !== 'string') {
    throw new NotAnApiAnswer({ code: res.status, title: res.statusText, message: `Not an answer of this API: ${text.slice(0, 200)}`, status: res.status, requestId: requestIdOf(res) });
  }
  return envelope as Envelope;
}

/** Retry-After in seconds: its number, or the seconds until its HTTP date. */
function retryAfterOf(res: FetchResponse): number | undefined {
  const header = res.headers.get('retry-after')?.trim();
  if (!header) return undefined;
  const seconds = /^\d+$/.test(header) ? Number(header) : Math.ceil((Date.parse(header) - Date.now()) / 1000);
  return Number.isFinite(seconds) ? Math.max(0, seconds) : undefined;
}

/** A failure answered in the envelope, as an ApiError. */
function failureOf(res: FetchResponse, envelope: Envelope): ApiError {
  const retryAfter = retryAfterOf(res);
  return new ApiError({
    code: envelope.code, title: envelope.title, message: String(envelope.response), status: res.status, requestId: requestIdOf(res),
    ...(retryAfter === undefined ? {} : { retryAfterSeconds: retryAfter }),
  });
}

/**
 * What a follower waits out and reconnects after: the network failing (the service restarting,
 * a connection cut) and the service, or a proxy in front of it, saying to wait (429, 502-504).
 * Anything else, an untrusted certificate, a refused key, a bad filter, ends the follow.
 */
const RECONNECTABLE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND',
  'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT',
]);
function reconnectable(err: unknown): boolean {
  if (err instanceof NotAnApiAnswer && err.cause !== undefined) return reconnectable(err.cause);
  if (err instanceof ApiError) return [429, 502, 503, 504].includes(err.status);
  const code = codeOf(err);
  // A browser's fetch tells a network failure by a bare TypeError, and nothing more.
  return code === undefined ? err instanceof TypeError : RECONNECTABLE_CODES.has(code);
}

/**
 * Whether a call is sent again after `err`: what a follower reconnects after, an answer cut off
 * whatever cut it, and for a write (sent with its Idempotency-Key) 409, its first try still running.
 */
function retryable(err: unknown, write: boolean): boolean {
  if (err instanceof NotAnApiAnswer && err.cause !== undefined) return true;
  if (write && err instanceof ApiError && err.status === 409) return true;
  return reconnectable(err);
}

/** The wait before retry number `retry` (from 0): backoff with jitter, or Retry-After if longer; undefined: not retried. */
function retryDelayMs(err: unknown, write: boolean, retry: number): number | undefined {
  if (!retryable(err, write)) return undefined;
  const retryAfterSeconds = err instanceof ApiError ? err.retryAfterSeconds ?? 0 : 0;
  if (retryAfterSeconds > MAX_RETRY_AFTER_S) return undefined;
  const backoff = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** retry) * (0.5 + Math.random() / 2);
  return Math.max(backoff, retryAfterSeconds * 1000);
}

function retriesOf(maxRetries: number | undefined): number {
  if (maxRetries === undefined) return DEFAULT_MAX_RETRIES;
  if (!Number.isSafeInteger(maxRetries) || maxRetries < 0) throw new RangeError(`maxRetries must be a whole number from 0, not ${maxRetries}`);
  return maxRetries;
}

/** The caller's Idempotency-Key, checked as the service checks it, or a new one. */
function idempotencyKeyOf(value: string | undefined): string {
  if (value === undefined) return crypto.randomUUID();
  if (!IDEMPOTENCY_KEY.test(value)) throw new RangeError(`idempotencyKey must be 1 to 255 visible ASCII characters, not ${JSON.stringify(value)}`);
  return value;
}

/**
 * A controller that aborts when any of `signals` does, with its reason, and `release` to unhook it
 * once its work is over (AbortSignal.any would stay hooked to the client's lifelong one).
 */
function linked(signals: AbortSignal[]): { controller: AbortController; release: () => void } {
  const controller = new AbortController();
  const unhooks = signals.map((signal) => {
    const abort = () => controller.abort(signal.reason);
    if (signal.aborted) abort();
    else signal.addEventListener('abort', abort, { once: true });
    return () => signal.removeEventListener('abort', abort);
  });
  return { controller, release: () => unhooks.forEach((unhook) => unhook()) };
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });
}

/** What a webhook delivery's body holds: the event's type, its time (RFC 3339) and the event itself. */
export interface WebhookPayload { type: string; timestamp: string; data: Event }

/** A delivery that does not verify: unsigned, signed under another secret, or too old or new. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}

const base64Bytes = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

/**
 * Verifies a webhook delivery as Standard Webhooks says, with WebCrypto only (Node or a browser):
 * an HMAC-SHA256 of `id.timestamp.body` under the secret's bytes among the `v1,` signatures, and
 * a timestamp within `toleranceS` of now. `body` is the raw text received. Returns the payload.
 */
export async function verifyWebhook(secret: string, headers: Record<string, string | string[] | undefined>, body: string, toleranceS = 300): Promise<WebhookPayload> {
  const header = (name: string) => {
    const found = Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
    return Array.isArray(found) ? found[0] : found;
  };
  const id = header('webhook-id');
  const timestamp = header('webhook-timestamp');
  const signatures = header('webhook-signature');
  if (!id || !timestamp || !signatures || !/^\d+$/.test(timestamp)) throw new WebhookVerificationError('Missing or malformed webhook headers.');
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceS) throw new WebhookVerificationError('The webhook timestamp is outside the tolerance.');
  const key = await crypto.subtle.importKey('raw', base64Bytes(secret.replace(/^whsec_/, '')), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
  const signed = new TextEncoder().encode(`${id}.${timestamp}.${body}`);
  for (const entry of signatures.split(' ')) {
    const [version, signature] = entry.split(',');
    if (version !== 'v1' || !signature) continue;
    let bytes: ReturnType<typeof base64Bytes>;
    try {
      bytes = base64Bytes(signature);
    } catch {
      continue;
    }
    // WebCrypto's verify compares in constant time.
    if (await crypto.subtle.verify('HMAC', key, bytes, signed)) return JSON.parse(body) as WebhookPayload;
  }
  throw new WebhookVerificationError('No signature matches.');
}

export type Checkpoint = Responses['eventCheckpoint'];

/**
 * Whether a checkpoint's signature holds under a raw Ed25519 public key (base64, as
 * /.well-known/audit-keys.json lists it): what a third party runs, with WebCrypto, in Node or a browser.
 */
export async function verifyCheckpoint(checkpoint: Checkpoint, publicKeyBase64: string): Promise<boolean> {
  const bytes = (base64: string) => Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  const raw = bytes(publicKeyBase64);
  if (raw.length !== 32) return false;
  const key = await crypto.subtle.importKey('raw', raw, { name: 'Ed25519' }, false, ['verify']);
  const text = `pms-audit-checkpoint/v1\n${checkpoint.project}\n${checkpoint.sequence}\n${checkpoint.hash}\n${checkpoint.created_at}\n`;
  return crypto.subtle.verify({ name: 'Ed25519' }, key, bytes(checkpoint.signature), new TextEncoder().encode(text));
}

export class Client {
  private readonly options: ClientOptions;
  private readonly fetch: Fetch;
  private readonly closed = new AbortController();

  readonly keys = {
    list: (paging: Paging = {}, options?: ReadOptions): Promise<Page<ApiKey>> => this.call('keyList', { ...options, query: { ...paging } }),
    iterate: (pageSize = PAGE_SIZE) => this.iterate((paging) => this.keys.list(paging), pageSize),
    current: (options?: ReadOptions) => this.call('keyCurrent', options),
    get: (keyId: string, options?: ReadOptions) => this.call('keyGet', { ...options, params: { key_id: keyId } }),
    create: (key: NewKey, options?: WriteOptions) => this.call('keyCreate', { ...options, body: key }),
    revoke: (keyId: string, options?: WriteOptions) => this.call('keyRevoke', { ...options, params: { key_id: keyId } }),
    roll: (keyId: string, roll: Bodies['keyRoll'] = {}, options?: WriteOptions) =>
      this.call('keyRoll', { ...options, params: { key_id: keyId }, body: roll }),
  };

  readonly apps = {
    create: (app: NewApp, options?: WriteOptions) => this.call('appCreate', { ...options, body: app }),
    list: (paging: Paging = {}, options?: ReadOptions): Promise<Page<AppListEntry>> => this.call('appList', { ...options, query: { ...paging } }),
    iterate: (pageSize = PAGE_SIZE) => this.iterate((paging) => this.apps.list(paging), pageSize),
    get: (appId: string, options?: ReadOptions) => this.call('appGet', { ...options, params: { app_id: appId } }),
    update: (appId: string, edit: AppEdit, options?: WriteOptions) => this.call('appUpdate', { ...options, params: { app_id: appId }, body: edit }),
    delete: (appId: string, options?: WriteOptions) => this.call('appDelete', { ...options, params: { app_id: appId } }),
  };

  readonly webhooks = {
    create: (endpoint: NewWebhook, options?: WriteOptions) => this.call('webhookCreate', { ...options, body: endpoint }),
    list: (paging: Paging = {}, options?: ReadOptions) => this.call('webhookList', { ...options, query: { ...paging } }),
    get: (id: string, options?: ReadOptions) => this.call('webhookGet', { ...options, params: { webhook_id: id } }),
    update: (id: string, edit: WebhookEdit, options?: WriteOptions) => this.call('webhookUpdate', { ...options, params: { webhook_id: id }, body: edit }),
    delete: (id: string, options?: WriteOptions) => this.call('webhookDelete', { ...options, params: { webhook_id: id } }),
    rotateSecret: (id: string, options?: WriteOptions) => this.call('webhookRotate', { ...options, params: { webhook_id: id } }),
    deliveries: (id: string, paging: Paging = {}, options?: ReadOptions) =>
      this.call('webhookDeliveries', { ...options, params: { webhook_id: id }, query: { ...paging } }),
    /** Sends again every event after sequence `after` that the endpoint's types match. */
    replay: (id: string, after: number, options?: WriteOptions) => this.call('webhookReplay', { ...options, params: { webhook_id: id }, body: { after } }),
  };

  readonly events = {
    /** The newest 100 events and the total (the contract gives this list no paging). */
    list: (options?: ReadOptions): Promise<Page<Event>> => this.call('eventList', options),
    get: (eventId: string, options?: ReadOptions) => this.call('eventGet', { ...options, params: { event_id: eventId } }),
    /** The project's latest signed checkpoint, or the one made at exactly `sequence`. */
    checkpoint: (sequence?: number, options?: ReadOptions) =>
      this.call('eventCheckpoint', { ...options, query: sequence === undefined ? {} : { sequence } }),
    /**
     * Follows the trail live (GET /v1/event/stream): every event after `after` (or, without it,
     * those recorded after the newest the feed shows when called), in sequence order, reconnecting
     * with Last-Event-ID whenever the stream drops or the network fails, until `signal` aborts.
     * Other failures (a refused key, an untrusted certificate) end it with their error.
     */
    follow: (options: FollowOptions = {}) => this.follow(options),
  };

  constructor(options: ClientOptions) {
    if (!options.fetch && ('ca' in options || 'rejectUnauthorized' in options)) {
      throw new TypeError('ca and rejectUnauthorized are options of the Node client (node.ts; the package\'s ./node)');
    }
    retriesOf(options.maxRetries);
    this.options = options;
    // The global fetch is called as a function of its own: a browser's refuses another `this`.
    this.fetch = options.fetch ?? ((url, init) => fetch(url, init));
  }

  /** Ends the requests and streams in flight; a closed client sends nothing more. */
  close(): void {
    this.closed.abort(new Error('The client was closed.'));
  }

  /**
   * One endpoint that answers an envelope, by its registry name; the typed methods above are this
   * with their types. The event stream is `events.follow`.
   */
  async call<N extends JsonEndpointName>(endpoint: N, call: Call = {}): Promise<EndpointResponse<N>> {
    const route = ROUTES[endpoint];
    const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => segment(name, call.params?.[name]));
    const url = new URL(path, this.options.baseUrl);
    for (const [name, value] of Object.entries(call.query ?? {})) if (value !== undefined) url.searchParams.set(name, String(value));
    return await this.send(route.method, url, call) as EndpointResponse<N>;
  }

  private async *follow(options: FollowOptions): AsyncGenerator<Event> {
    const following = linked(options.signal ? [options.signal, this.closed.signal] : [this.closed.signal]);
    try {
      yield* this.followUntilAborted(options, following.controller.signal);
    } finally {
      following.release();
    }
  }

  private async *followUntilAborted(options: FollowOptions, signal: AbortSignal): AsyncGenerator<Event> {
    let after = options.after;
    const retryMs = Math.max(options.retryMs ?? DEFAULT_RETRY_MS, MIN_RETRY_MS);
    while (!signal.aborted) {
      let waitMs = retryMs;
      const waitOut = (err: unknown) => {
        if (signal.aborted) return undefined;
        if (!reconnectable(err)) throw err;
        waitMs = Math.max(retryMs, ((err as ApiError).retryAfterSeconds ?? 0) * 1000);
        return undefined;
      };
      // Without a position, the newest event now: a stream cut before its first event then resumes
      // from there instead of from whatever is newest when it reconnects.
      // Retried by this loop alone, as it retries the stream.
      after ??= await this.events.list({ maxRetries: 0 }).then((page) => Math.max(0, ...page.data.map((event) => event.sequence)), waitOut);
      const url = new URL(ROUTES.eventStream.path, this.options.baseUrl);
      for (const type of options.types ?? []) url.searchParams.append('type', type);
      if (options.actor) url.searchParams.set('actor', options.actor);
      const connection = linked([signal]);
      const stream = connection.controller;
      try {
        const res = after === undefined ? undefined : await this.openStream(url, after, stream).catch(waitOut);
        if (res) {
          // A connection gone silent (a peer vanished without a reset) is taken for dead.
          const idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
          let idle = setTimeout(() => stream.abort(), idleMs);
          const heard = () => {
            clearTimeout(idle);
            idle = setTimeout(() => stream.abort(), idleMs);
          };
          try {
            for await (const message of serverSentEvents(chunksOf(res.body, heard))) {
              if (message.id !== undefined) after = Number(message.id);
              if (message.data !== undefined) yield JSON.parse(message.data) as Event;
            }
          } catch {
            // Dropped: reconnect from the last id.
          } finally {
            clearTimeout(idle);
          }
        }
      } finally {
        stream.abort();
        connection.release();
      }
      if (signal.aborted) return;
      await pause(waitMs, signal);
    }
  }

  /** The event stream's answer once its headers came, or its failure; `stream` ends it. */
  private async openStream(url: URL, after: number, stream: AbortController): Promise<FetchResponse> {
    const headers = { authorization: `Bearer ${this.options.apiKey}`, accept: 'text/event-stream', 'last-event-id': String(after) };
    const timeoutMs = this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const timer = setTimeout(() => stream.abort(timedOut(`the event stream did not open within ${timeoutMs} ms`)), timeoutMs);
    try {
      const res = await this.fetch(url.href, { method: 'GET', headers, signal: stream.signal });
      if (res.status === 200) return res;
      throw failureOf(res, envelopeOf(res, await textOf(res)));
    } catch (err) {
      throw stream.signal.aborted ? stream.signal.reason : err;
    } finally {
      clearTimeout(timer);
    }
  }

  private async *iterate<T>(page: (paging: Required<Paging>) => Promise<Page<T>>, pageSize: number): AsyncGenerator<T> {
    for (let offset = 0; ; offset += pageSize) {
      const { data, total } = await page({ limit: pageSize, offset });
      yield* data;
      if (data.length < pageSize || offset + data.length >= total) return;
    }
  }

  /**
   * Sends a call until it is answered, or its retries are spent. Every attempt of a write carries
   * the same Idempotency-Key: the service makes the change once and replays its answer after that.
   */
  private async send(method: Method, url: URL, call: Call): Promise<unknown> {
    const write = method !== 'GET';
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.apiKey}`, accept: 'application/json' };
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    if (call.requestId) headers['x-request-id'] = call.requestId;
    if (write) headers['idempotency-key'] = idempotencyKeyOf(call.idempotencyKey);
    const body = call.body === undefined ? undefined : JSON.stringify(call.body);
    const maxRetries = retriesOf(call.maxRetries ?? this.options.maxRetries);
    for (let retry = 0; ; retry++) {
      try {
        return await this.attempt(method, url, headers, body);
      } catch (err) {
        const waitMs = retry < maxRetries && !this.closed.signal.aborted ? retryDelayMs(err, write, retry) : undefined;
        if (waitMs === undefined) throw err;
        await pause(waitMs, this.closed.signal);
        if (this.closed.signal.aborted) throw this.closed.signal.reason;
      }
    }
  }

  /** One attempt of a call: the answer's `response`, or its failure. */
  private async attempt(method: Method, url: URL, headers: Record<string, string>, body: string | undefined): Promise<unknown> {
    const timeoutMs = this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    // From the request's start to its answer's end, however slowly the answer trickles in.
    const { controller: deadline, release } = linked([this.closed.signal]);
    const timer = setTimeout(() => deadline.abort(timedOut(`${method} ${url.pathname}: no answer within ${timeoutMs} ms`)), timeoutMs);
    try {
      const res = await this.fetch(url.href, { method, headers, signal: deadline.signal, ...(body === undefined ? {} : { body }) });
      const envelope = envelopeOf(res, await textOf(res));
      if (res.status >= 200 && res.status < 300) return envelope.response;
      throw failureOf(res, envelope);
    } catch (err) {
      throw deadline.signal.aborted ? deadline.signal.reason : err;
    } finally {
      clearTimeout(timer);
      release();
    }
  }
}
