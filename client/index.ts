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
import type { EndpointName, EndpointResponse } from '../workers/endpoints/registry.ts';

export type { EndpointName, EndpointResponse };
// The domain builds these objects with one view each, whose optional members depend on the
// endpoint; each endpoint's own answer always carries the ones below.
type Always<T, K extends keyof T> = T & Required<Pick<T, K>>;
export type ApiKey = Omit<EndpointResponse<'keyGet'>, 'key'>;
export type ApiKeyWithSecret = Always<EndpointResponse<'keyCreate'>, 'key'>;
export type App = Always<EndpointResponse<'appGet'>, 'logo' | 'data' | 'instruction' | 'runs' | 'tokens'>;
export type AppListEntry = Always<EndpointResponse<'appList'>['data'][number], 'runs' | 'tokens'>;
export type AppCreated = EndpointResponse<'appCreate'>;
export type AppSummary = EndpointResponse<'appUpdate'>;
export type Event = EndpointResponse<'eventGet'>;
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
  appCreate: { method: 'POST', path: '/v1/app/create' },
  appList: { method: 'GET', path: '/v1/app/list' },
  appGet: { method: 'GET', path: '/v1/app/detail/{app_id}' },
  appUpdate: { method: 'PATCH', path: '/v1/app/detail/{app_id}' },
  appDelete: { method: 'DELETE', path: '/v1/app/detail/{app_id}' },
  eventList: { method: 'GET', path: '/v1/event' },
  eventStream: { method: 'GET', path: '/v1/event/stream' },
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

  constructor(fields: { code: number | string; title: string; message: string; status: number; requestId?: string; retryAfterSeconds?: number }) {
    super(fields.message);
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
  /** Milliseconds before a request is given up (default 30,000). */
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
  /** Milliseconds to wait before reconnecting a dropped stream (default 1,000). */
  retryMs?: number;
}
export interface Paging { limit?: number; offset?: number }

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_RETRY_MS = 1000;

/** The messages of a text/event-stream body (the WHATWG rules this service's streams use). */
async function* serverSentEvents(body: AsyncIterable<Buffer | string>): AsyncGenerator<{ id?: string; event?: string; data?: string }> {
  let buffered = '';
  let message: { id?: string; event?: string; data?: string } = {};
  for await (const chunk of body) {
    buffered += chunk.toString();
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
const PAGE_SIZE = 100;

export class Client {
  private readonly options: ClientOptions;
  private readonly agent: https.Agent;

  readonly keys = {
    list: (paging: Paging = {}) => this.call('keyList', { query: { ...paging } }),
    iterate: (pageSize = PAGE_SIZE) => this.iterate<ApiKey>((paging) => this.keys.list(paging), pageSize),
    current: () => this.call('keyCurrent'),
    get: (keyId: string) => this.call('keyGet', { params: { key_id: keyId } }),
    create: (key: NewKey) => this.call('keyCreate', { body: key }) as Promise<ApiKeyWithSecret>,
    revoke: (keyId: string) => this.call('keyRevoke', { params: { key_id: keyId } }),
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
    list: () => this.call('eventList'),
    get: (eventId: string) => this.call('eventGet', { params: { event_id: eventId } }),
    /**
     * Follows the trail live (GET /v1/event/stream): every event after `after` (or, without it,
     * those recorded from now on), in sequence order, reconnecting with Last-Event-ID whenever the
     * stream drops, until `signal` aborts. Failures before a stream starts throw ApiError.
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

  /** One endpoint, by its registry name; the typed methods above are this with their types. */
  async call<N extends EndpointName>(endpoint: N, call: Call = {}): Promise<EndpointResponse<N>> {
    const route = ROUTES[endpoint];
    const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(call.params?.[name] ?? ''));
    const url = new URL(path, this.options.baseUrl);
    for (const [name, value] of Object.entries(call.query ?? {})) if (value !== undefined) url.searchParams.set(name, String(value));
    return await this.send(route.method, url, call) as EndpointResponse<N>;
  }

  private async *follow(options: FollowOptions): AsyncGenerator<Event> {
    let after = options.after;
    const retryMs = options.retryMs ?? DEFAULT_RETRY_MS;
    while (!options.signal?.aborted) {
      const url = new URL(ROUTES.eventStream.path, this.options.baseUrl);
      for (const type of options.types ?? []) url.searchParams.append('type', type);
      if (options.actor) url.searchParams.set('actor', options.actor);
      const res = await this.openStream(url, after, options.signal).catch((err: unknown) => {
        if (err instanceof ApiError && err.status !== 503) throw err;
        return undefined;
      });
      if (res) {
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
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }

  private openStream(url: URL, after: number | undefined, signal: AbortSignal | undefined): Promise<IncomingMessage> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.apiKey}`, accept: 'text/event-stream' };
    if (after !== undefined) headers['last-event-id'] = String(after);
    return new Promise((resolve, reject) => {
      const req = https.request(url, { method: 'GET', headers, agent: this.agent, ...(signal ? { signal } : {}) }, (res) => {
        if (res.statusCode === 200) return resolve(res);
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          try {
            const envelope = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            reject(new ApiError({ code: envelope.code, title: envelope.title, message: String(envelope.response), status: res.statusCode ?? 0, requestId: res.headers['x-request-id'] as string | undefined }));
          } catch (err) {
            reject(err);
          }
        });
      });
      req.on('error', reject);
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
    return new Promise((resolve, reject) => {
      const req = https.request(url, { method, headers, agent: this.agent, timeout: this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const requestId = res.headers['x-request-id'] as string | undefined;
          let envelope: { code: number | string; title: string; response: unknown };
          try {
            envelope = JSON.parse(text);
          } catch {
            return reject(new ApiError({ code: res.statusCode ?? 0, title: res.statusMessage ?? '', message: `Not a JSON answer: ${text.slice(0, 200)}`, status: res.statusCode ?? 0, requestId }));
          }
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) return resolve(envelope.response);
          const retryAfter = Number(res.headers['retry-after']);
          reject(new ApiError({
            code: envelope.code, title: envelope.title, message: String(envelope.response), status, requestId,
            ...(Number.isFinite(retryAfter) ? { retryAfterSeconds: retryAfter } : {}),
          }));
        });
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${url.pathname}: no answer within ${this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  }
}
