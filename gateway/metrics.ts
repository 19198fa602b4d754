// The web process's metrics: each request by its route's template, its method and its status; the
// error answers by a fixed reason; the pool thread's queue, the gateway's database queue and the
// open event streams, read when scraped. No label carries what a client chose: a path no route
// matched is `unmatched`, a method outside a fixed few `other`.
import type { Server } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type restify from 'restify';
import { ApiError, errors, isDatabaseUnavailable } from '../domain/errors.ts';
import { KeyRefusal } from '../domain/key-check.ts';
import type { Config } from '../lib/config.ts';
import type { LanedDatabase } from '../lib/lanes.ts';
import type { Logger } from '../lib/log.ts';
import { newRegistry, PREFIX, serveMetrics, type MetricsListener } from '../lib/metrics.ts';
import type { WorkerPool } from './dispatch.ts';
import type { EventStreams } from './event-streams.ts';
import type { GatewayRequest } from './types.ts';

const UNMATCHED = 'unmatched';
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** From a key's refusal floor (5 ms) to the request timeout. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** An error answer's reason by its status: one word of a fixed set, whatever the error says. */
const REASONS: Readonly<Record<number, string>> = {
  400: 'bad_request', 401: 'no_key', 402: 'plan_limit', 403: 'forbidden', 404: 'not_found',
  405: 'method_not_allowed', 408: 'request_timeout', 409: 'conflict', 413: 'body_too_large', 422: 'unprocessable',
  429: 'too_many_refusals', 431: 'headers_too_large', 500: 'internal_error', 501: 'not_implemented', 503: 'unavailable',
  505: 'version_not_supported',
};
/** A key past its own request limit: its 429 is not the address's guessing budget. */
const KEY_RATE_LIMITED = 'key_rate_limited';
const KEY_RATE_LIMITED_MESSAGE = errors.keyRateLimited(1).message;

const REFUSAL_REASONS = new Set([...Object.values(REASONS), 'key_expired', 'key_refused', KEY_RATE_LIMITED, 'unknown_path', 'other']);

function refusalReason(err: unknown): string {
  if (err instanceof KeyRefusal) return err.status === 401 ? 'key_expired' : 'key_refused';
  if (err instanceof ApiError) {
    if (err.codeAsText && err.status === 404) return 'unknown_path';
    if (err.status === 429 && err.message === KEY_RATE_LIMITED_MESSAGE) return KEY_RATE_LIMITED;
    return REASONS[err.status] ?? 'other';
  }
  return isDatabaseUnavailable(err) ? 'unavailable' : 'internal_error';
}

/** What Node answers outside a request (client-errors.ts), by its error's code, as it is answered. */
function socketRefusalReason(err: Error & { code?: string }): string | undefined {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'request_timeout';
  if (err.code === 'HPE_HEADER_OVERFLOW') return 'headers_too_large';
  if (err.code === 'HPE_INVALID_VERSION' || err.code === 'HPE_PAUSED_H2_UPGRADE') return 'version_not_supported';
  return err.code?.startsWith('HPE_') ? 'bad_request' : undefined;
}

interface RouteSeries {
  label: string;
  /** By method: the duration's series and the count's by status. */
  methods: Map<string, { duration: Histogram.Internal<string>; statuses: Map<number, Counter.Internal> }>;
}

export interface GatewayParts {
  server: restify.Server;
  /** Every listener of the process, for what Node answers before a request exists. */
  listeners: Server[];
  pool: WorkerPool;
  db: LanedDatabase;
  streams: EventStreams;
}

export class GatewayMetrics {
  readonly registry: Registry = newRegistry();
  private readonly requests: Counter<'route' | 'method' | 'status'>;
  private readonly duration: Histogram<'route' | 'method'>;
  private readonly refusals: Counter<'reason'>;
  private readonly reasons = new WeakMap<GatewayRequest, string>();
  private readonly byReason = new Map<string, Counter.Internal>();
  /** By the router's route object, which the registry's endpoints made: the set is fixed. */
  private readonly routes = new WeakMap<object, RouteSeries>();
  private readonly unmatched: RouteSeries = { label: UNMATCHED, methods: new Map() };
  private router: restify.Server['router'] | undefined;

  constructor() {
    const registers = [this.registry];
    this.requests = new Counter({
      name: `${PREFIX}http_requests_total`, help: 'Requests answered, by route template, method and status.',
      labelNames: ['route', 'method', 'status'], registers,
    });
    this.duration = new Histogram({
      name: `${PREFIX}http_request_duration_seconds`, help: 'From a request\'s arrival to its answer, by route template and method.',
      labelNames: ['route', 'method'], buckets: DURATION_BUCKETS, registers,
    });
    this.refusals = new Counter({
      name: `${PREFIX}http_refusals_total`, help: 'Answers of 4xx and 5xx by reason, those Node gives before a request exists (400, 408, CONNECT) too.',
      labelNames: ['reason'], registers,
    });
    for (const reason of REFUSAL_REASONS) this.refusal(reason).inc(0);
  }

  /** Hooks onto the gateway's parts and serves GET /metrics on METRICS_PORT. */
  serve(config: Config, log: Logger, { server, listeners, pool, db, streams }: GatewayParts): Promise<MetricsListener> {
    const registers = [this.registry];
    this.router = server.router;
    const gauge = (name: string, help: string, read: () => number) => new Gauge({
      name: `${PREFIX}${name}`, help, registers, collect() { this.set(read()); },
    });
    gauge('pool_queued_tasks', 'Changes waiting for a pool thread.', () => pool.queueSize);
    gauge('pool_threads', 'Pool threads running.', () => pool.threads.length);
    gauge('pool_utilization_ratio', 'Piscina\'s utilization: task run time over threads times uptime, since start.', () => pool.utilization);
    gauge('db_waiting_queries', 'Queries of the gateway\'s thread waiting for a database connection.', () => db.waitingCount);
    gauge('event_streams_open', 'Event streams open.', () => streams.openCount);
    let completed = 0;
    new Counter({
      name: `${PREFIX}pool_tasks_completed_total`, help: 'Changes the pool threads have run.', registers,
      collect() {
        this.inc(pool.completed - completed);
        completed = pool.completed;
      },
    });
    server.on('after', (req: GatewayRequest, res: restify.Response, route: object | null) => this.answered(req, res, route));
    // Node may report one refused head twice (what arrives after it parses again): one answer, one count.
    const counted = new WeakSet<object>();
    for (const listener of listeners) {
      listener.on('clientError', (err: Error & { code?: string }, socket: object) => {
        const reason = socketRefusalReason(err);
        if (!reason || counted.has(socket)) return;
        counted.add(socket);
        this.refusal(reason).inc();
      });
      listener.on('connect', () => this.refusal('method_not_allowed').inc());
    }
    return serveMetrics(this.registry, config.host, config.metricsPort ?? 0, 'METRICS_PORT', log);
  }

  /** The one error path (refusals.ts) tells why it answers, finer than the status says. */
  refused(req: GatewayRequest, err: unknown): void {
    this.reasons.set(req, refusalReason(err));
  }

  private answered(req: GatewayRequest, res: restify.Response, route: object | null): void {
    const series = this.seriesOf(route ?? this.lookup(req));
    const method = req.method !== undefined && METHODS.has(req.method) ? req.method : 'other';
    let byMethod = series.methods.get(method);
    if (!byMethod) {
      byMethod = { duration: this.duration.labels(series.label, method), statuses: new Map() };
      series.methods.set(method, byMethod);
    }
    let count = byMethod.statuses.get(res.statusCode);
    if (!count) byMethod.statuses.set(res.statusCode, count = this.requests.labels(series.label, method, String(res.statusCode)));
    count.inc();
    if (req.arrivedMs !== undefined) byMethod.duration.observe((performance.now() - req.arrivedMs) / 1000);
    if (res.statusCode >= 400) this.refusal(this.reasons.get(req) ?? REASONS[res.statusCode] ?? 'other').inc();
  }

  private refusal(reason: string): Counter.Internal {
    let child = this.byReason.get(reason);
    if (!child) this.byReason.set(reason, child = this.refusals.labels(reason));
    return child;
  }

  /** A request refused before routing (its key, its method, its size): the route it would have taken. */
  private lookup(req: GatewayRequest): object | undefined {
    try {
      return this.router?.lookup(req, undefined as never) ? (req.getRoute() as object) : undefined;
    } catch {
      return undefined;
    }
  }

  private seriesOf(route: object | undefined): RouteSeries {
    if (!route) return this.unmatched;
    let series = this.routes.get(route);
    if (!series) {
      const path = (route as { path?: unknown }).path;
      // restify's `/v1/key/:key_id` is the registry's `/v1/key/{key_id}`.
      series = { label: typeof path === 'string' ? path.replace(/:(\w+)/g, '{$1}') : UNMATCHED, methods: new Map() };
      this.routes.set(route, series);
    }
    return series;
  }
}
