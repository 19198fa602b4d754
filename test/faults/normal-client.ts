// The fault suite's honest client (not a fault file itself): keep-alive GET requests one at a time
// in a worker thread, so the load generator's event loop does not skew its timings; its latency
// quantiles when stopped. Also a TLS connection from a chosen loopback address, as attackers open.
import assert from 'node:assert/strict';
import net from 'node:net';
import tls from 'node:tls';
import { Worker } from 'node:worker_threads';

const NORMAL_CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
const https = require('node:https');
const { performance } = require('node:perf_hooks');
const { port, ca, key, timeoutMs, path, pauseMs } = workerData;
const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca });
let running = true;
parentPort.on('message', (message) => { if (message === 'stop') running = false; });
function once() {
  return new Promise((resolve) => {
    const started = performance.now();
    const done = (status) => resolve({ ms: performance.now() - started, status });
    const req = https.request({ host: '127.0.0.1', port, path, method: 'GET', agent,
      headers: { authorization: 'Bearer ' + key } }, (res) => {
      res.on('data', () => {});
      res.on('end', () => done(res.statusCode));
      res.on('error', (err) => done(err.code || 'EBODY'));
    });
    req.setTimeout(timeoutMs, () => req.destroy(Object.assign(new Error('no answer'), { code: 'ETESTTIMEOUT' })));
    req.on('error', (err) => done(err.code || 'EUNKNOWN'));
    req.end();
  });
}
(async () => {
  const ms = [];
  const failures = [];
  let first = true;
  const started = performance.now();
  while (running) {
    const answer = await once();
    if (pauseMs) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    ms.push(answer.ms);
    if (answer.status !== 200) failures.push(answer.status);
    if (first) { first = false; parentPort.postMessage({ ready: answer.status }); }
  }
  agent.destroy();
  parentPort.postMessage({ ms, failures, seconds: (performance.now() - started) / 1000 });
})();
`;

export interface NormalStats {
  requests: number;
  ok: number;
  /** The statuses or error codes of the requests not answered 200. */
  failures: Array<number | string>;
  p50: number;
  p99: number;
  /** Requests answered per second. */
  perSecond: number;
}

export interface NormalClient {
  stop(): Promise<NormalStats>;
}

export interface NormalOptions {
  port: number;
  ca: Buffer;
  key: string;
  timeoutMs: number;
  /** What it asks for (default GET /v1/key/current). */
  path?: string;
  /** A pause after each answer: a reader taking its time. */
  pauseMs?: number;
  /** For the failure message. */
  name: string;
}

export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export const round1 = (n: number) => Math.round(n * 10) / 10;

const running = new Set<Worker>();

/** Ends every normal client still running (a test that threw left it). */
export async function stopNormalClients(): Promise<void> {
  for (const worker of running) await worker.terminate();
  running.clear();
}

/** Starts the normal client; resolves once its first request is answered (its connection is open). */
export async function startNormalClient(options: NormalOptions): Promise<NormalClient> {
  const { port, ca, key, timeoutMs, path = '/v1/key/current', pauseMs = 0, name } = options;
  const worker = new Worker(NORMAL_CLIENT, { eval: true, workerData: { port, ca: ca.toString(), key, timeoutMs, path, pauseMs } });
  running.add(worker);
  const finished = new Promise<{ ms: number[]; failures: Array<number | string>; seconds: number }>((resolve, reject) => {
    worker.on('message', (message) => { if (message.ms) resolve(message); });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the normal client exited (${code}) before reporting`)));
  });
  // Awaited by stop(); a worker ended otherwise (by `after`) must not be an unhandled rejection.
  finished.catch(() => {});
  const ready = await new Promise<number | string>((resolve, reject) => {
    worker.on('message', (message) => { if (message.ready !== undefined) resolve(message.ready); });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the normal client exited (${code}) before its first answer`)));
  });
  assert.equal(ready, 200, `the normal client's first request on ${name}`);
  return {
    async stop() {
      worker.postMessage('stop');
      const { ms, failures, seconds } = await finished;
      await worker.terminate();
      running.delete(worker);
      return {
        requests: ms.length, ok: ms.length - failures.length, failures, p50: quantile(ms, 0.5), p99: quantile(ms, 0.99),
        perSecond: ms.length / seconds,
      };
    },
  };
}

/** A TLS connection that does not check the certificate (an attacker has no reason to), from `localAddress` if given. */
export function connectTls(port: number, localAddress: string | undefined, track: <T extends net.Socket>(socket: T) => T): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const tcp = localAddress ? track(net.connect({ port, host: '127.0.0.1', localAddress })) : undefined;
    tcp?.on('error', () => {});
    const socket = track(tls.connect({ port, host: '127.0.0.1', socket: tcp, servername: 'localhost', rejectUnauthorized: false }));
    // A reset the server sends (a bound, a deadline) is what the test watches for, never an uncaught error.
    socket.on('error', () => {});
    socket.once('secureConnect', () => { socket.removeListener('error', reject); resolve(socket); });
    socket.once('error', reject);
  });
}
