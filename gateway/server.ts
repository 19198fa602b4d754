// The web process: the HTTPS gateway (checks in the order decisions.md gives), the plain-HTTP
// redirect listener, and the worker pool the gateway hands each request to.
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import restify from 'restify';
import { ApiError, errors } from '../domain/errors.ts';
import type { Config } from '../lib/config.ts';
import { createPool } from '../lib/db.ts';
import { errorFields, type Logger } from '../lib/log.ts';
import { authenticate } from './authenticate.ts';
import { bodyLimit } from './body-limit.ts';
import { createWorkerPool, dispatch } from './dispatch.ts';
import { sendEnvelopeOnSocket, sendError, sendGatewayNotFound } from './envelope.ts';
import { health } from './health.ts';
import { acceptedMethods } from './method.ts';
import { redirectAll, redirectForwardedHttp } from './redirect.ts';
import { requestId } from './request-id.ts';
import { ROUTES } from './routes.ts';
import { notImplemented, requireScope } from './scope.ts';
import { loadCertificate } from './tls.ts';
import type { GatewayRequest, Handler } from './types.ts';

export interface Gateway {
  httpsPort: number;
  httpPort: number;
  stop(): Promise<void>;
}

/** Bounds how long a graceful close waits for requests already accepted. */
const CLOSE_GRACE_MS = 8000;
const IDLE_SWEEP_MS = 100;
/** A client that trickles its headers or body is cut off rather than holding a socket for minutes. */
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 30_000;
const MAX_PATH_PARAM_CHARS = 16_384;

function listen(server: restify.Server, port: number, host: string): Promise<number> {
  server.server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.server.requestTimeout = REQUEST_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(port, host, () => {
      server.server.removeListener('error', reject);
      resolve((server.server.address() as AddressInfo).port);
    });
  });
}

/**
 * What Node hands to events other than 'request' still gets the envelope: malformed HTTP (400),
 * CONNECT (405, a method the gateway never accepts). restify claims 'upgrade' for itself and then
 * leaves the socket unanswered; without a listener Node serves an Upgrade request as a plain one.
 */
function answerOutsideRestify(server: restify.Server): void {
  server.server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
    if (err.code === 'ECONNRESET') return socket.destroy();
    sendEnvelopeOnSocket(socket, errors.malformedHttp(), 'Bad Request');
  });
  server.server.on('connect', (_req: unknown, socket: Duplex) => {
    sendEnvelopeOnSocket(socket, errors.methodNotAllowed(), 'Method Not Allowed');
  });
  server.server.removeAllListeners('upgrade');
}

function logRequests(server: restify.Server, log: Logger): void {
  server.on('after', (req: GatewayRequest, res: restify.Response) => {
    log.info({
      requestId: req.requestId,
      method: req.method,
      path: req.getPath(),
      status: res.statusCode,
      ms: Math.round(Date.now() - req.time()),
      keyId: req.caller?.id,
    }, 'request');
  });
}

export async function startGateway(config: Config, log: Logger, databaseUrl: string): Promise<Gateway> {
  const tls = await loadCertificate(config);
  const pool = createPool(config, log, databaseUrl);
  const workers = createWorkerPool(config, databaseUrl);
  let httpsPort = config.httpsPort;

  const server = restify.createServer({
    name: '',
    log: log as never,
    httpsServerOptions: { cert: tls.cert, key: tls.key },
    handleUncaughtExceptions: false,
    // find-my-way stops matching a parameter past 100 characters by default, which would turn an
    // over-long id on a known path into the unknown-path 404; Node's header limit bounds it anyway.
    maxParamLength: MAX_PATH_PARAM_CHARS,
  } as restify.ServerOptions);
  answerOutsideRestify(server);
  logRequests(server, log);

  let stopping = false;
  // While stopping, each answer closes its connection, so no keep-alive client holds the exit.
  const closeWhenStopping: Handler = function closeWhenStopping(_req, res, next) {
    if (stopping) res.setHeader('Connection', 'close');
    next();
  };
  const pre: Handler[] = [closeWhenStopping, requestId(config.trustProxy)];
  if (config.trustProxy) pre.push(redirectForwardedHttp(config.host));
  pre.push(acceptedMethods(), bodyLimit(), authenticate(pool, log));
  for (const handler of pre) server.pre(handler as never);

  for (const route of ROUTES) {
    const chain: Handler[] = [requireScope(route.scope), route.op ? dispatch(workers, route, log) : notImplemented()];
    const register = { GET: server.get, POST: server.post, PATCH: server.patch, DELETE: server.del }[route.method];
    register.call(server, route.path, ...(chain as never[]));
  }
  for (const [path, handler] of Object.entries(health(pool))) server.get(path, handler as never);

  // Step 5 and 6: the router's own refusals, in the contract's words.
  server.on('NotFound', (_req: GatewayRequest, res: restify.Response, _err: Error, done: () => void) => {
    sendGatewayNotFound(res);
    done();
  });
  server.on('MethodNotAllowed', (_req: GatewayRequest, res: restify.Response, _err: Error, done: () => void) => {
    res.removeHeader('Allow');
    sendError(res, errors.unprocessable());
    done();
  });
  server.on('restifyError', (req: GatewayRequest, res: restify.Response, err: Error, done: () => void) => {
    if (!res.headersSent) {
      if (!(err instanceof ApiError)) log.error({ requestId: req.requestId, err: errorFields(err) }, 'unexpected gateway error');
      sendError(res, err instanceof ApiError ? err : errors.internal());
    }
    done();
  });

  const redirect = restify.createServer({ name: '', log: log as never, handleUncaughtExceptions: false });
  redirect.pre(requestId(config.trustProxy) as never, redirectAll(config.host, () => httpsPort) as never);
  answerOutsideRestify(redirect);

  httpsPort = await listen(server, config.httpsPort, config.host);
  const httpPort = await listen(redirect, config.httpPort, config.host);
  log.info({ https: `https://${config.host}:${httpsPort}`, http: `http://${config.host}:${httpPort}`, threads: config.workerThreads }, 'gateway listening');

  return {
    httpsPort,
    httpPort,
    async stop() {
      stopping = true;
      const closed = Promise.all([
        new Promise<void>((resolve) => server.close(() => resolve())),
        new Promise<void>((resolve) => redirect.close(() => resolve())),
      ]);
      // Keep-alive connections with nothing in flight would hold close() open; a connection
      // whose request is in flight becomes idle once answered, so this repeats until closed.
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
      await pool.end();
    },
  };
}

