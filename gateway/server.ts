// The web process: the HTTPS gateway (its checks in a fixed order), the plain-HTTP redirect
// listener, and the worker pool the gateway hands requests to.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Server as TlsServer } from 'node:tls';
import restify from 'restify';
import { errors } from '../domain/errors.ts';
import { sealingKeyOf } from '../domain/sealing.ts';
import type { Config } from '../lib/config.ts';
import { watchDatabase } from '../lib/database-watch.ts';
import { openLanedDatabase } from '../lib/lanes.ts';
import type { Logger } from '../lib/log.ts';
import { authenticate } from './authenticate.ts';
import { bodyLimit, continueAtBodyLimit } from './body-limit.ts';
import { answerClientErrors, refuseUnusableRequests } from './client-errors.ts';
import { boundConnections } from './connection-bounds.ts';
import { createWorkerPool, serveEndpoint } from './dispatch.ts';
import { EventStreams } from './event-streams.ts';
import { admitHandshakes } from './handshake-admission.ts';
import { KnownKeys } from './known-keys.ts';
import { allEndpoints } from './endpoints/registry.ts';
import { health } from './health.ts';
import { serveOpenApi } from './openapi-route.ts';
import { AUDIT_KEYS_PATH, serveAuditKeys } from './audit-keys-route.ts';
import { acceptedMethods } from './method.ts';
import { setServerOptions } from './node-http-internals.ts';
import { requestPacer } from './pipelining.ts';
import { GatewayMetrics } from './metrics.ts';
import { listenFailure } from '../lib/ports.ts';
import { limitRequests, RequestLimits } from './request-limits.ts';
import { takeTurns } from './turns.ts';
import { WebProcesses } from './web-processes.ts';
import { redirectAll, redirectForwardedHttp } from './redirect.ts';
import { requestId } from './request-id.ts';
import { createRequestLog, type RequestLog } from './request-log.ts';
import { hardenedHeaders, setHardenedHeaders } from './response-headers.ts';
import { requireScope } from './scope.ts';
import { loadCertificate, TLS_CIPHERS } from './tls.ts';
import { createRefusals } from './refusals.ts';
import { inSequence } from './steps.ts';
import { boundUnreadOutput } from './unread-output.ts';
import type { GatewayRequest, Handler } from './types.ts';

export interface Gateway {
  httpsPort: number;
  httpPort: number;
  /** The metrics listener's, when METRICS_PORT is set. */
  metricsPort: number | undefined;
  stop(): Promise<void>;
}

/** Bounds how long a graceful close waits for requests already accepted. */
const CLOSE_GRACE_MS = 8000;
const IDLE_SWEEP_MS = 100;
const MAX_PATH_PARAM_CHARS = 16_384;
/** How often Node checks head and body timeouts; its default lets a timeout fire far too late. */
const TIMEOUT_CHECK_INTERVAL_MS = 1000;
const STANDARD_HTTPS_PORT = 443;

/** The listeners' shared settings: timeouts (a slow head or body gets 408) and request pacing. */
function prepareListener(server: restify.Server, config: Config, https: boolean, paceRequests: (server: Server) => void): void {
  const http = server.server;
  http.headersTimeout = config.headersTimeoutMs;
  http.requestTimeout = config.requestTimeoutMs;
  setServerOptions(http, { connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_INTERVAL_MS, config.headersTimeoutMs) });
  answerClientErrors(http, hardenedHeaders(https));
  continueAtBodyLimit(http);
  refuseUnusableRequests(http, hardenedHeaders(https));
  paceRequests(http);
}

/** OpenAPI's `/v1/key/{key_id}` as restify routes it: `/v1/key/:key_id`. */
function routerPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

function listen(server: restify.Server, port: number, host: string, variable: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const failed = (err: Error) => reject(listenFailure(err, host, port, variable));
    server.server.once('error', failed);
    server.listen(port, host, () => {
      server.server.removeListener('error', failed);
      resolve((server.server.address() as AddressInfo).port);
    });
  });
}

function logRequests(server: restify.Server, requests: RequestLog): void {
  server.on('after', (req: GatewayRequest, res: restify.Response) => {
    requests.record({
      requestId: req.requestId,
      method: req.method ?? '',
      path: req.getPath(),
      status: res.statusCode,
      ms: Math.round(performance.now() - req.arrivedMs),
      keyId: req.caller?.id,
      clientIp: req.clientIp,
    });
  });
}

export async function startGateway(config: Config, log: Logger, databaseUrl: string): Promise<Gateway> {
  // Read (or made) before the threads start: a bad SEALING_KEY stops the start, not a request.
  sealingKeyOf(config);
  const tls = await loadCertificate(config);
  const db = openLanedDatabase(config, log, databaseUrl);
  const watch = watchDatabase(databaseUrl, config.dbSilenceMs, log);
  const known = new KnownKeys(db, config.keyMemorySize);
  const metrics = config.metricsPort === undefined ? undefined : new GatewayMetrics();
  const refusals = createRefusals(log, known, config.keyRefusalFloorMs, metrics);
  const processes = new WebProcesses(db.pool, log);
  await processes.start();
  const limits = new RequestLimits(db.pool, () => processes.count);
  const workers = createWorkerPool(config, databaseUrl);
  let httpsPort = config.httpsPort;

  const server = restify.createServer({
    name: '',
    log: log as never,
    httpsServerOptions: {
      cert: tls.cert, key: tls.key, handshakeTimeout: config.tlsHandshakeTimeoutMs,
      minVersion: 'TLSv1.2', ciphers: TLS_CIPHERS, honorCipherOrder: true,
      // Node offers only http/1.1; an http/1.0 client would be refused in the handshake.
      ALPNProtocols: ['http/1.1', 'http/1.0'],
    },
    handleUncaughtExceptions: false,
    // find-my-way's default (100 chars) would turn an over-long id into the unknown-path 404.
    maxParamLength: MAX_PATH_PARAM_CHARS,
  } as restify.ServerOptions);
  admitHandshakes(server.server as unknown as TlsServer, {
    busy: config.handshakeBusy, burst: config.handshakeBurst, floorGapMs: config.handshakeFloorGapMs,
  });
  const requests = createRequestLog(log);
  logRequests(server, requests);
  const publicOrigin = () => config.publicUrl
    ?? `https://${urlHost(config.host)}${httpsPort === STANDARD_HTTPS_PORT ? '' : `:${httpsPort}`}`;

  let stopping = false;
  // While stopping, each answer closes its connection, so no keep-alive client holds the exit.
  const closeWhenStopping: Handler = function closeWhenStopping(_req, res, next) {
    if (stopping) res.setHeader('Connection', 'close');
    next();
  };
  // Arrival on the monotonic clock: the refusal floor and the logged duration count from it.
  const markArrival: Handler = function markArrival(req, _res, next) {
    req.arrivedMs = performance.now();
    next();
  };
  const pre: Handler[] = [markArrival, closeWhenStopping, requestId(config.trustProxy), setHardenedHeaders(true)];
  if (config.trustProxy) pre.push(redirectForwardedHttp(publicOrigin));
  pre.push(acceptedMethods(), bodyLimit(), authenticate(db, known, log, config.authRefusalsPerMinute, config.authRefusalDelayMs));
  pre.push(takeTurns({
    maxPerKey: config.maxRequestsPerKey, maxPerProject: config.maxRequestsPerProject,
    maxInProgress: config.maxRequestsInProgress, maxPerProjectShared: config.maxRequestsPerProjectShared,
  }));
  pre.push(limitRequests(limits));
  server.pre(inSequence(pre, refusals) as never);

  const streams = new EventStreams(db, databaseUrl, config, log);
  const runners = { pool: workers, db, known, maxQueued: config.maxQueuedTasks, streams, refusals, log };
  // The router, derived from the endpoint registry: each endpoint's scope check, then its handler.
  for (const [name, endpoint] of allEndpoints()) {
    const register = { GET: server.get, POST: server.post, PATCH: server.patch, DELETE: server.del }[endpoint.method];
    register.call(server, routerPath(endpoint.path), inSequence([requireScope(endpoint.scope), serveEndpoint(runners, name, endpoint)], refusals) as never);
  }
  for (const [path, handler] of Object.entries(health(db))) server.get(path, handler as never);
  server.get('/openapi.json', serveOpenApi() as never);
  server.get(AUDIT_KEYS_PATH, serveAuditKeys(db, log) as never);

  // Step 5 and 6: the router's own refusals, in the contract's words.
  server.on('NotFound', (req: GatewayRequest, res: restify.Response, _err: Error, done: () => void) => {
    refusals.refuse(req, res, errors.gatewayNotFound(), done);
  });
  server.on('MethodNotAllowed', (req: GatewayRequest, res: restify.Response, _err: Error, done: () => void) => {
    res.removeHeader('Allow');
    refusals.refuse(req, res, errors.unprocessable(), done);
  });
  server.on('restifyError', (req: GatewayRequest, res: restify.Response, err: Error, done: () => void) => {
    if (!res.headersSent) refusals.fail(req, res, err);
    done();
  });

  const redirect = restify.createServer({ name: '', log: log as never, handleUncaughtExceptions: false });
  redirect.pre(inSequence([requestId(config.trustProxy), setHardenedHeaders(false), redirectAll(publicOrigin)], createRefusals(log)) as never);

  const paceRequests = requestPacer({
    maxUnanswered: config.maxPipelinedRequests,
    maxPerAddress: config.maxRequestsPerAddress,
    trustProxy: config.trustProxy,
  });
  prepareListener(server, config, true, paceRequests);
  prepareListener(redirect, config, false, paceRequests);
  boundConnections([server.server, redirect.server], {
    maxConnections: config.maxConnections,
    maxConnectionsPerAddress: config.trustProxy ? 0 : config.maxConnectionsPerAddress,
  }, log);
  boundUnreadOutput([server.server, redirect.server], { timeoutMs: config.unreadOutputTimeoutMs, maxBytes: config.unreadOutputMaxBytes }, log);

  const metricsListener = await metrics?.serve(config, log, { server, listeners: [server.server, redirect.server], pool: workers, db, streams });
  httpsPort = await listen(server, config.httpsPort, config.host, 'PORT');
  const httpPort = await listen(redirect, config.httpPort, config.host, 'HTTP_PORT');
  log.info({ https: `https://${config.host}:${httpsPort}`, http: `http://${config.host}:${httpPort}`, threads: config.workerThreads }, 'gateway listening');

  return {
    httpsPort,
    httpPort,
    metricsPort: metricsListener?.port,
    async stop() {
      stopping = true;
      await metricsListener?.stop();
      await streams.stop();
      requests.stop();
      const closed = Promise.all([
        new Promise<void>((resolve) => server.close(() => resolve())),
        new Promise<void>((resolve) => redirect.close(() => resolve())),
      ]);
      // Idle keep-alive connections hold close() open; busy ones become idle, so this repeats.
      const closeIdle = () => {
        server.server.closeIdleConnections();
        redirect.server.closeIdleConnections();
      };
      closeIdle();
      const sweeper = setInterval(closeIdle, IDLE_SWEEP_MS);
      const timer = setTimeout(() => {
        server.server.closeAllConnections();
        redirect.server.closeAllConnections();
      }, CLOSE_GRACE_MS);
      await closed;
      clearInterval(sweeper);
      clearTimeout(timer);
      await workers.destroy();
      await processes.stop();
      await watch.stop();
      await db.end();
    },
  };
}

