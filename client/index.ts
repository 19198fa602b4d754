// A typed client of the API, for Node 24 and nothing else at run time. Its results are typed by
// the endpoint registry (a type-only import: nothing of the service is loaded), and ROUTES names
// every endpoint of the registry, so an endpoint added there without a route here fails the
// type check. Failures throw ApiError with the envelope's code, title and message and the
// request id; lists page with limit/offset as async iterators.
//
//   const client = new Client({ baseUrl: 'https://127.0.0.1:8443', apiKey, ca: readFileSync('.data/tls/cert.pem') });
//   const key = await client.keys.create({ name: 'ci', scope: ['key:read'] });
//   for await (const app of client.apps.iterate()) console.log(app.name);
import type { IncomingMessage } from 'node:http';
import https from 'node:https';
import type { EndpointName, EndpointResponse, JsonEndpointName } from '../gateway/endpoints/registry.ts';

export type { EndpointName, EndpointResponse, JsonEndpointName };
// The domain builds these objects with one view each, whose optional members depend on the
// endpoint; each endpoint's own answer always carries the ones below.
type Always<T, K extends keyof T> = T & Required<Pick<T, K>>;
/** Launches by the owning project and by others: both always counted. */
interface Runs { runs: { private: number; public: number } }
export type ApiKey = Omit<EndpointResponse<'keyGet'>, 'key'>;
export type ApiKeyWithSecret = Always<EndpointResponse<'keyCreate'>, 'key'>;
export type App = Omit<Always<EndpointResponse<'appGet'>, 'logo' | 'data' | 'instruction' | 'tokens'>, 'runs'> & Runs;
export type AppListEntry = Omit<Always<EndpointResponse<'appList'>['data'][number], 'tokens'>, 'runs'> & Runs;
export type AppCreated = EndpointResponse<'appCreate'>;
export type AppSummary = EndpointResponse<'appUpdate'>;
/** Every event the API answers carries its hash (events of before the chain were given theirs at release). */
export type Event = Omit<EndpointResponse<'eventGet'>, 'hash'> & { hash: string };
export type Deleted = EndpointResponse<'keyRevoke'>;
export interface Page<T> { object: 'list'; data: T[]; total: number }

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** Every endpoint's method and path (`{name}` filled from the call's parameters). */
export const ROUTES: Readonly<Record<EndpointName, { method: Method; path: string }>> = {
  keyList: { method: 'GET', path: '/v1/key' },
  keyCurrent: { method: 'GET', path: '/v1/key/current' },
  keyGet: { method: 'GET', path: '/v1/key/{key_id}' },
  keyCreate: { method: 'POST', path: '/v1/key' },
  keyRevoke: { method: 'DELETE', path: '/v1/key/{key_id}' },
  keyRoll: { method: 'POST', path: '/v1/key/{key_id}/roll' },
  appCreate: { method: 'POST', path: '/v1/app/create' },
  appList: { method: 'GET', path: '/v1/app/list' },
  appGet: { method: 'GET', path: '/v1/app/detail/{app_id}' },
  appUpdate: { method: 'PATCH', path: '/v1/app/detail/{app_id}' },
  appDelete: { method: 'DELETE', path: '/v1/app/detail/{app_id}' },
  eventList: { method: 'GET', path: '/v1/event' },
  eventStream: { method: 'GET', path: '/v1/event/stream' },
  eventCheckpoint: { method: 'GET', path: '/v1/event/checkpoint' },
  eventGet: { method: 'GET', path: '/v1/event/{event_id}' },
};

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

  constructor(fields: { code: number | string; title: string; message: string; status: number; requestId?: string; retryAfterSeconds?: number; cause?: unknown }) {
    super(fields.message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.code = fields.code;
    this.title = fields.title;
    this.status = fields.status;
    this.requestId = fields.requestId;
    this.retryAfterSeconds = fields.retryAfterSeconds;
  }
}

export interface ClientOptions {
  /** The HTTPS origin, e.g. https://127.0.0.1:8443. */
  baseUrl: string;
  /** The key secret, sk-project-…. */
  apiKey: string;
  /** PEM of a certificate to trust, e.g. the self-signed .data/tls/cert.pem of `npm start`. */
  ca?: string | Buffer;
  /** false accepts any certificate (a test server); prefer `ca`. */
  rejectUnauthorized?: boolean;
  /** Milliseconds before a request (or a stream's opening) is given up, from its start (default 30,000). */
  timeoutMs?: number;
}

interface Call {
  params?: Record<string, string>;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  requestId?: string;
}

export interface NewKey { name: string; scope?: string[] | null; expires_at?: number | null }
export interface NewApp {
  name: string;
  description: string;
  category?: string;
  data: Array<{ type: string; name: string; placeholder?: string; required?: boolean }>;
  instruction: Array<{ type: string; instruction: string }>;
  status?: 'draft' | 'activated';
  type?: 'private' | 'public';
}
export interface AppEdit { name?: string; description?: string; type?: 'private' | 'public' }
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
export interface Paging { limit?: number; offset?: number }

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_RETRY_MS = 1000;
const MIN_RETRY_MS = 100;
const DEFAULT_IDLE_MS = 45_000;

/** The messages of a text/event-stream body (the WHATWG rules this service's streams use). */
async function* serverSentEvents(body: AsyncIterable<Buffer>): AsyncGenerator<{ id?: string; event?: string; data?: string }> {
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

/** An answer that is not this API's envelope (a proxy's page, a truncated body): its status, and its first 200 characters as the message. */
export class NotAnApiAnswer extends ApiError {}

/**
 * A path parameter as one segment. `.`, `..` and nothing would name another path (`GET /v1/key/.`
 * is the list), and no encoding keeps them (URLs resolve `%2E` segments too): refused here.
 */
function segment(name: string, value: string | undefined): string {
  if (value === undefined || value === '' || value === '.' || value === '..') throw new RangeError(`${name} must be an identifier, not ${JSON.stringify(value)}`);
  return encodeURIComponent(value);
}

/**
 * The envelope of an answer, or an ApiError saying the answer was none (not JSON, or JSON that is
 * not an object with a `code` and a `title`): a proxy's page, a truncated body.
 */
function envelopeOf(res: IncomingMessage, body: Buffer): { code: number | string; title: string; response: unknown } {
  const status = res.statusCode ?? 0;
  const text = body.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const envelope = parsed as { code?: unknown; title?: unknown; response?: unknown } | null | undefined;
  if (typeof envelope !== 'object' || envelope === null || (typeof envelope.code !== 'number' && typeof envelope.code !== 'string') || typeof envelope.title !== 'string') {
    throw new NotAnApiAnswer({ code: status, title: res.statusMessage ?? '', message: `Not an answer of this API: ${text.slice(0, 200)}`, status, requestId: requestIdOf(res) });
  }
  return envelope as { code: number | string; title: string; response: unknown };
}

const requestIdOf = (res: IncomingMessage) => res.headers['x-request-id'] as string | undefined;

/** A failure answered in the envelope, as an ApiError. */
function failureOf(res: IncomingMessage, envelope: { code: number | string; title: string; response: unknown }): ApiError {
  const retryAfter = Number(res.headers['retry-after']);
  return new ApiError({
    code: envelope.code, title: envelope.title, message: String(envelope.response), status: res.statusCode ?? 0, requestId: requestIdOf(res),
    ...(Number.isFinite(retryAfter) && res.headers['retry-after'] !== undefined ? { retryAfterSeconds: retryAfter } : {}),
  });
}

/** Reads a whole answer; settles once, also when a step throws. */
function readAnswer(res: IncomingMessage, done: (body: Buffer) => void, fail: (err: unknown) => void): void {
  const chunks: Buffer[] = [];
  res.on('data', (chunk: Buffer) => chunks.push(chunk));
  // A body cut off (the connection reset or closed mid-answer) is no answer of this API either;
  // what cut it stays its cause, by which a follower knows to reconnect.
  res.on('error', (err: Error) => {
    const status = res.statusCode ?? 0;
    fail(new NotAnApiAnswer({
      code: status, title: res.statusMessage ?? '', status, requestId: requestIdOf(res), cause: err,
      message: `Not an answer of this API: the answer was cut off (${(err as NodeJS.ErrnoException).code ?? err.message})`,
    }));
  });
  res.on('end', () => {
    try {
      done(Buffer.concat(chunks));
    } catch (err) {
      fail(err);
    }
  });
}

/**
 * What a follower waits out and reconnects after: the network failing (the service restarting,
 * a connection cut) and the service, or a proxy in front of it, saying to wait (429, 502-504).
 * Anything else, an untrusted certificate, a refused key, a bad filter, ends the follow.
 */
const RECONNECTABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);
function reconnectable(err: unknown): boolean {
  if (err instanceof NotAnApiAnswer && err.cause !== undefined) return reconnectable(err.cause);
  if (err instanceof ApiError) return [429, 502, 503, 504].includes(err.status);
  return RECONNECTABLE_CODES.has((err as NodeJS.ErrnoException | null)?.code ?? '');
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done);
  });
}

const PAGE_SIZE = 100;

export class Client {
  private readonly options: ClientOptions;
  private readonly agent: https.Agent;

  readonly keys = {
    list: (paging: Paging = {}) => this.call('keyList', { query: { ...paging } }) as Promise<Page<ApiKey>>,
    iterate: (pageSize = PAGE_SIZE) => this.iterate<ApiKey>((paging) => this.keys.list(paging), pageSize),
    current: () => this.call('keyCurrent') as Promise<ApiKey>,
    get: (keyId: string) => this.call('keyGet', { params: { key_id: keyId } }) as Promise<ApiKey>,
    create: (key: NewKey) => this.call('keyCreate', { body: key }) as Promise<ApiKeyWithSecret>,
    revoke: (keyId: string) => this.call('keyRevoke', { params: { key_id: keyId } }),
    roll: (keyId: string, options: { grace_s?: number | null } = {}) =>
      this.call('keyRoll', { params: { key_id: keyId }, body: options }) as Promise<ApiKeyWithSecret>,
  };

  readonly apps = {
    create: (app: NewApp) => this.call('appCreate', { body: app }),
    list: (paging: Paging = {}) => this.call('appList', { query: { ...paging } }) as Promise<Page<AppListEntry>>,
    iterate: (pageSize = PAGE_SIZE) => this.iterate<AppListEntry>((paging) => this.apps.list(paging), pageSize),
    get: (appId: string) => this.call('appGet', { params: { app_id: appId } }) as Promise<App>,
    update: (appId: string, edit: AppEdit) => this.call('appUpdate', { params: { app_id: appId }, body: edit }),
    delete: (appId: string) => this.call('appDelete', { params: { app_id: appId } }),
  };

  readonly events = {
    /** The newest 100 events and the total (the contract gives this list no paging). */
    list: () => this.call('eventList') as Promise<Page<Event>>,
    get: (eventId: string) => this.call('eventGet', { params: { event_id: eventId } }) as Promise<Event>,
    /**
     * Follows the trail live (GET /v1/event/stream): every event after `after` (or, without it,
     * those recorded after the newest the feed shows when called), in sequence order, reconnecting
     * with Last-Event-ID whenever the stream drops or the network fails, until `signal` aborts.
     * Other failures (a refused key, an untrusted certificate) end it with their error.
     */
    follow: (options: FollowOptions = {}) => this.follow(options),
  };

  constructor(options: ClientOptions) {
    this.options = options;
    this.agent = new https.Agent({
      keepAlive: true,
      ...(options.ca ? { ca: options.ca } : {}),
      ...(options.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
    });
  }

  /** Closes the kept-alive connections. */
  close(): void {
    this.agent.destroy();
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
    let after = options.after;
    const retryMs = Math.max(options.retryMs ?? DEFAULT_RETRY_MS, MIN_RETRY_MS);
    while (!options.signal?.aborted) {
      let waitMs = retryMs;
      const waitOut = (err: unknown) => {
        if (options.signal?.aborted) return undefined;
        if (!reconnectable(err)) throw err;
        waitMs = Math.max(retryMs, ((err as ApiError).retryAfterSeconds ?? 0) * 1000);
        return undefined;
      };
      // Without a position, the newest event now: a stream cut before its first event then resumes
      // from there instead of from whatever is newest when it reconnects.
      after ??= await this.events.list().then((page) => Math.max(0, ...page.data.map((event) => event.sequence)), waitOut);
      const url = new URL(ROUTES.eventStream.path, this.options.baseUrl);
      for (const type of options.types ?? []) url.searchParams.append('type', type);
      if (options.actor) url.searchParams.set('actor', options.actor);
      const res = after === undefined ? undefined : await this.openStream(url, after, options.signal).catch(waitOut);
      if (res) {
        // A connection gone silent (a peer vanished without a reset) is taken for dead.
        res.setTimeout(options.idleMs ?? DEFAULT_IDLE_MS, () => res.destroy());
        try {
          for await (const message of serverSentEvents(res)) {
            if (message.id !== undefined) after = Number(message.id);
            if (message.data !== undefined) yield JSON.parse(message.data) as Event;
          }
        } catch {
          // Dropped: reconnect from the last id.
        }
      }
      if (options.signal?.aborted) return;
      await pause(waitMs, options.signal);
    }
  }

  private openStream(url: URL, after: number, signal: AbortSignal | undefined): Promise<IncomingMessage> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.apiKey}`, accept: 'text/event-stream', 'last-event-id': String(after) };
    const timeoutMs = this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    return new Promise((resolve, reject) => {
      const req = https.request(url, { method: 'GET', headers, agent: this.agent, ...(signal ? { signal } : {}) }, (res) => {
        clearTimeout(opening);
        if (res.statusCode === 200) return resolve(res);
        readAnswer(res, (body) => reject(failureOf(res, envelopeOf(res, body))), reject);
      });
      const opening = setTimeout(() => req.destroy(Object.assign(new Error(`the event stream did not open within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })), timeoutMs);
      req.on('error', (err) => {
        clearTimeout(opening);
        reject(err);
      });
      req.end();
    });
  }

  private async *iterate<T>(page: (paging: Required<Paging>) => Promise<Page<T>>, pageSize: number): AsyncGenerator<T> {
    for (let offset = 0; ; offset += pageSize) {
      const { data, total } = await page({ limit: pageSize, offset });
      yield* data;
      if (data.length < pageSize || offset + data.length >= total) return;
    }
  }

  private send(method: Method, url: URL, call: Call): Promise<unknown> {
    const payload = call.body === undefined ? undefined : Buffer.from(JSON.stringify(call.body));
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.apiKey}`, accept: 'application/json' };
    if (payload) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(payload.length);
    }
    if (call.requestId) headers['x-request-id'] = call.requestId;
    const timeoutMs = this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    return new Promise((resolve, reject) => {
      const req = https.request(url, { method, headers, agent: this.agent }, (res) => {
        readAnswer(res, (body) => {
          clearTimeout(deadline);
          const envelope = envelopeOf(res, body);
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve(envelope.response);
          else reject(failureOf(res, envelope));
        }, (err) => {
          clearTimeout(deadline);
          reject(err);
        });
      });
      // From the request's start to its answer's end, however slowly the answer trickles in.
      const deadline = setTimeout(() => req.destroy(new Error(`${method} ${url.pathname}: no answer within ${timeoutMs} ms`)), timeoutMs);
      req.on('error', (err) => {
        clearTimeout(deadline);
        reject(err);
      });
      req.end(payload);
    });
  }
}
