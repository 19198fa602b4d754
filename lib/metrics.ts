// Prometheus metrics (prom-client): a registry per serving part, web or worker, with the process's
// defaults, and its own plain-HTTP listener answering GET /metrics, off the public listeners
// (METRICS_PORT, WORKER_METRICS_PORT). What each part counts: gateway/metrics.ts, workers/metrics.ts.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { listenFailure } from './ports.ts';
import { errorFields, type Logger } from './log.ts';

/** Every metric of the service's own is named so; the process defaults keep their standard names. */
export const PREFIX = 'pms_';

export function newRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

export interface MetricsListener {
  port: number;
  stop(): Promise<void>;
}

/** A scraper that sends nothing for this long is cut off. */
const HEADERS_TIMEOUT_MS = 5000;
/** Scrapers are a few Prometheus servers, not the public. */
const MAX_CONNECTIONS = 16;

/** GET /metrics on `host`:`port` (0: any free port); a port that cannot be bound stops the start, naming `variable`. */
export function serveMetrics(registry: Registry, host: string, port: number, variable: string, log: Logger): Promise<MetricsListener> {
  // restify patches Node's ServerResponse for every server of the process: its writeHead returns nothing.
  const answer = (res: ServerResponse, status: number, headers: Record<string, string | number>, body?: string) => {
    res.writeHead(status, headers);
    res.end(body);
  };
  const server: Server = createServer((req, res) => {
    const path = req.url?.split('?')[0];
    if (path !== '/metrics') return answer(res, 404, { 'Content-Type': 'text/plain' }, 'Not found: GET /metrics.\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') return answer(res, 405, { Allow: 'GET, HEAD' });
    registry.metrics().then((text) => {
      answer(res, 200, { 'Content-Type': registry.contentType, 'Content-Length': Buffer.byteLength(text) }, req.method === 'HEAD' ? undefined : text);
    }, (err: unknown) => {
      log.error({ err: errorFields(err) }, 'metrics could not be collected');
      answer(res, 500, {});
    });
  });
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = HEADERS_TIMEOUT_MS;
  server.maxConnections = MAX_CONNECTIONS;
  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(listenFailure(err, host, port, variable)));
    server.listen(port, host, () => {
      server.removeAllListeners('error');
      server.on('error', (err) => log.error({ err: errorFields(err) }, 'metrics listener failed'));
      const bound = (server.address() as AddressInfo).port;
      log.info({ metrics: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`, variable }, 'metrics listening');
      resolve({
        port: bound,
        stop: () => new Promise<void>((done) => {
          server.close(() => done());
          server.closeAllConnections();
        }),
      });
    });
  });
}
