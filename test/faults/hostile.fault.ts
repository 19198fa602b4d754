// Hostile clients against real Procfile `web` processes: silent or half-handshaken sockets, too many
// connections, unread pipelined floods, a key guesser, slow heads and bodies. Each attack must cost
// the process a bounded amount and end on its own while an honest client (a worker thread, so the
// attackers' event loop does not skew it) keeps being served. Speed and memory targets are recorded
// as `met`/`MISSED`, not asserted; every honest request must still be answered 200.
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import tls from 'node:tls';
import { after, afterEach, before, test, type TestContext } from 'node:test';
import { queryText } from '../../lib/sql-files.ts';
import { envelope, MESSAGES } from '../support/assertions.ts';
import { recordFigure } from '../support/figures.ts';
import { ProcessGroup, tail, type ServiceProcess } from '../support/processes.ts';
import { createTestDatabase, type TestProject } from '../support/service.ts';
import { sleep, waitFor } from '../support/wait.ts';
import { openDb } from './helpers.ts';
import { connectTls as connectSharedTls, quantile, round1, startNormalClient, stopNormalClients, type NormalClient, type NormalStats } from './normal-client.ts';
import type pg from 'pg';

const SUITE = 'hostile';

// The normal client.
const QUIET_MS = 2000;
/** Requests of a freshly started process (JIT, the pool thread, database connections) are not measured. */
const WARM_UP_MS = 1000;
/** USER_HZ: the unit of utime and stime in /proc/<pid>/stat. */
const CLOCK_TICKS_PER_S = 100;
// Under attack the honest p99 is held to 2x its quiet p99 plus 20 ms: the service, its database and
// this load generator share the cores, so some CPU goes to the attack whatever the service does.
const P99_FACTOR = 2;
const P99_SLACK_MS = 20;
const NORMAL_REQUEST_TIMEOUT_MS = 10_000;

// Descriptors.
const FD_TOLERANCE = 10;
const SHORT_HANDSHAKE_TIMEOUT_MS = 2500;
const FD_TEST_PER_ADDRESS = 5000;
const IDLE_CONNECTIONS = 2000;
const HALF_HANDSHAKES = 500;
const CLIENT_CLOSED_CONNECTIONS = 100;
/** Connections opened at once (the listen backlog is 511). */
const CONNECT_BATCH = 200;
/** How long the client-closed connections stay open before the client closes them. */
const CLIENT_CLOSE_AFTER_MS = 300;
/** After the client's close, the server must have closed its side within this long (well before the handshake timeout). */
const CLIENT_CLOSE_BOUND_MS = 1000;
/** A deadline the service enforces (handshake, head, body) fires within its setting plus this. */
const TIMEOUT_MARGIN_MS = 2000;

// Connection bounds.
const BOUND_ATTEMPTS = 300;
const DEFAULT_PER_ADDRESS = 256;
const CAPPED_MAX_CONNECTIONS = 50;
const REFUSAL_BOUND_MS = 1000;
/** How long the held connections are watched after the last connect. */
const BOUND_OBSERVE_MS = 1500;

// Pipelining.
const PIPELINING_CONNECTIONS = 200;
const PIPELINED_PER_CONNECTION = 5000;
const PIPELINE_WRITES = 5;
const PIPELINING_ATTACK_MS = 10_000;
const RSS_SAMPLE_MS = 200;
const RSS_BEFORE_MS = 1000;
const RSS_AFTER_MS = 2000;
const RSS_BOUND_MB = 400;
const MAX_PIPELINED_REQUESTS = 8;
/**
 * The pipelining attackers' own address: an attacker is not the honest client, and comes from
 * another address (all of 127.0.0.0/8 is loopback on Linux, so this machine can bind it).
 */
const ATTACKER_ADDRESS = '127.0.0.2';
/** The process may still be working through what it read when the attackers leave: its descriptors get this long. */
const PIPELINING_FDS_BACK_MS = 10_000;

// Guessing.
const GUESSES = 20_000;
/**
 * The guesser stops at GUESSES or after this long: each 429 is held a second before it is answered
 * (AUTH_REFUSAL_DELAY_MS), so a guesser waiting for its answers gets about one guess a second
 * per connection past the budget, and the 20,000 would take minutes.
 */
const GUESS_FLOOD_MS = 12_000;
const GUESS_CONNECTIONS = 32;
const REFUSALS_PER_MINUTE = 60;
/** The production default of AUTH_REFUSAL_DELAY_MS, which this file does not change. */
const REFUSAL_DELAY_MS = 1000;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// Slow heads and bodies.
const SLOW_HEADS = 200;
const SLOW_BODIES = 50;
const SLOW_HEADERS_TIMEOUT_MS = 2000;
const SLOW_REQUEST_TIMEOUT_MS = 4000;
const SLOW_BODY_BYTES = 1000;
const TRICKLE_INTERVAL_MS = 1000;

// Unread answers.
const UNREAD_ADDRESSES = 128;
const UNREAD_PER_ADDRESS = 16;
const UNREAD_PIPELINED = 8;
/** 127.0.0.10 and on: the unread attackers' own addresses, none of them another test's. */
const FIRST_UNREAD_HOST = 10;
/** The production defaults of UNREAD_OUTPUT_TIMEOUT_MS and UNREAD_OUTPUT_MAX_BYTES, which this file does not change. */
const UNREAD_TIMEOUT_MS = 10_000;
const UNREAD_MAX_MB = 64;
/**
 * What docs/deploy.md sets on web hosts (net.ipv4.tcp_notsent_lowat): without it the kernel takes
 * megabytes of each unread connection's answers, and the host's TCP memory, not the process, is
 * what the attack fills. Set for this test where the run may (as root), put back after it.
 */
const NOTSENT_LOWAT = 131072;
const NOTSENT_LOWAT_FILE = '/proc/sys/net/ipv4/tcp_notsent_lowat';
/** After the attack, the RSS must be back within this much of its start after UNREAD_SETTLE_MS. */
const UNREAD_RSS_BACK_MB = 100;
const UNREAD_SETTLE_MS = 30_000;
/** The honest reader of the 217 kB document asks again after this pause. */
const READER_PAUSE_MS = 200;

let group: ProcessGroup;
let db: pg.Pool;
let project: TestProject;
/** Every socket a test opened, destroyed after it whatever happened. */
const sockets = new Set<net.Socket>();
/** Every sampler and trickle timer, cleared after each test. */
const timers = new Set<NodeJS.Timeout>();

before(async () => {
  const url = await createTestDatabase();
  group = new ProcessGroup(url, 'hostile');
  db = openDb(url, 2);
  await group.release();
  project = await group.createProject('Hostile');
});

/** What a test started ends with it, whether it passed or threw: nothing of it may weigh on the next. */
async function cleanUp(): Promise<void> {
  for (const timer of timers) clearInterval(timer);
  timers.clear();
  for (const socket of sockets) socket.destroy();
  await stopNormalClients();
  for (const proc of group?.processes ?? []) await proc.kill9();
}

afterEach(cleanUp);

after(async () => {
  await cleanUp();
  await group?.stopAll();
  await db?.end();
});

function every(intervalMs: number, fn: () => void): NodeJS.Timeout {
  const timer = setInterval(fn, intervalMs);
  timers.add(timer);
  return timer;
}

// ---------------------------------------------------------------------------------------------
// What the process holds.

function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

function rssMb(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(match, `VmRSS of ${pid}`);
  return Math.round(Number(match[1]) / 1024);
}

/** Server-side sockets of a listening port by TCP state (/proc/net/tcp: 01 ESTABLISHED, 08 CLOSE_WAIT). */
function serverSockets(port: number): { established: number; closeWait: number } {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  let established = 0;
  let closeWait = 0;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try { text = readFileSync(file, 'utf8'); } catch { continue; }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 4 || !fields[1]!.endsWith(`:${hexPort}`)) continue;
      if (fields[3] === '01') established++;
      if (fields[3] === '08') closeWait++;
    }
  }
  return { established, closeWait };
}

/** CPU time used by the web process and by this test process (the load generator and the normal client). */
function cpuMeter(pid: number): { stop(): string } {
  const webTicks = () => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return Number(fields[11]) + Number(fields[12]);
  };
  const started = performance.now();
  const web = webTicks();
  const own = process.cpuUsage();
  return {
    stop() {
      const wallS = (performance.now() - started) / 1000;
      const webS = (webTicks() - web) / CLOCK_TICKS_PER_S;
      const ownUsage = process.cpuUsage(own);
      const ownS = (ownUsage.user + ownUsage.system) / 1e6;
      return `${Math.round(100 * webS / wallS)} / ${Math.round(100 * ownS / wallS)}`;
    },
  };
}

const CPU_FIGURE = 'CPU % of one core while attacked (2 cores): web process / this test';

/** Samples a number every `intervalMs` until stopped; the peak and every sample. */
function sampler(read: () => number, intervalMs: number): { stop(): { peak: number; samples: number[] } } {
  const samples = [read()];
  const timer = every(intervalMs, () => { try { samples.push(read()); } catch { /* the process is gone */ } });
  return {
    stop() {
      clearInterval(timer);
      try { samples.push(read()); } catch { /* the process is gone */ }
      return { peak: Math.max(...samples), samples };
    },
  };
}

/** Waits until the process's descriptors are back within the tolerance of `baseline`. */
async function fdsBack(pid: number, baseline: number, timeoutMs: number): Promise<{ back: boolean; fds: number; ms: number }> {
  const started = Date.now();
  for (;;) {
    const fds = fdCount(pid);
    if (fds <= baseline + FD_TOLERANCE) return { back: true, fds, ms: Date.now() - started };
    if (Date.now() - started > timeoutMs) return { back: false, fds, ms: Date.now() - started };
    await sleep(50);
  }
}

// ---------------------------------------------------------------------------------------------
// The normal client (normal-client.ts).

function startNormal(web: ServiceProcess, options: { path?: string; pauseMs?: number } = {}): Promise<NormalClient> {
  return startNormalClient({ port: web.port, ca: group.ca, key: project.key, timeoutMs: NORMAL_REQUEST_TIMEOUT_MS, name: web.name, ...options });
}

async function measureQuiet(web: ServiceProcess): Promise<NormalStats> {
  const warmUp = await startNormal(web);
  await sleep(WARM_UP_MS);
  await warmUp.stop();
  const normal = await startNormal(web);
  await sleep(QUIET_MS);
  return normal.stop();
}

/** Records the normal client's figures side by side, then checks the targets in a subtest of their own. */
async function checkNormal(t: TestContext, label: string, quiet: NormalStats, during: NormalStats): Promise<void> {
  const ratio = during.p99 / quiet.p99;
  recordFigure(SUITE, `${label}: normal client quiet p50 / p99 ms`, `${round1(quiet.p50)} / ${round1(quiet.p99)} (${quiet.requests} requests)`);
  recordFigure(SUITE, `${label}: normal client under attack p50 / p99 ms`, `${round1(during.p50)} / ${round1(during.p99)} (${during.requests} requests)`);
  recordFigure(SUITE, `${label}: normal client p99 ratio (attack / quiet)`, round1(ratio));
  recordFigure(SUITE, `${label}: normal client answered 200`, `${during.ok}/${during.requests}`);
  const bound = P99_FACTOR * quiet.p99 + P99_SLACK_MS;
  recordFigure(SUITE, `${label}: normal client p99 target (${P99_FACTOR}x quiet + ${P99_SLACK_MS} ms = ${round1(bound)} ms)`,
    during.p99 <= bound ? 'met' : `MISSED (${round1(during.p99)} ms)`);
  await t.test('the normal client: every request answered 200', () => assertNormal(label, quiet, during));
}

function assertNormal(label: string, quiet: NormalStats, during: NormalStats): void {
  const shown = [...new Set(during.failures)].slice(0, 10).join(', ');
  assert.equal(quiet.ok, quiet.requests, `${label}: quiet, every normal request answered 200 (not: ${[...new Set(quiet.failures)].join(', ')})`);
  assert.equal(during.ok, during.requests, `${label}: under attack, every normal request answered 200: ${during.failures.length} of ${during.requests} were not (${shown})`);
}

// ---------------------------------------------------------------------------------------------
// Raw attackers.

interface RawSocket {
  socket: net.Socket;
  connectedAt: number;
  closedAt?: number;
  /** A connect error, or an error the open socket saw. */
  error?: string;
  received: Buffer[];
}

function tracked<T extends net.Socket>(socket: T): T {
  sockets.add(socket);
  socket.once('close', () => sockets.delete(socket));
  return socket;
}

/** One raw TCP connection; `onConnect` may write to it. Records when it closed and what it received. */
function openRaw(port: number, onConnect?: (socket: net.Socket) => void): Promise<RawSocket> {
  return new Promise((resolve) => {
    const socket = tracked(net.connect({ port, host: '127.0.0.1' }));
    const raw: RawSocket = { socket, connectedAt: 0, received: [] };
    socket.on('data', (chunk: Buffer) => raw.received.push(chunk));
    socket.on('error', (err: Error & { code?: string }) => { raw.error ??= err.code ?? err.message; });
    socket.once('close', () => {
      raw.closedAt = performance.now();
      resolve(raw);
    });
    socket.once('connect', () => {
      raw.connectedAt = performance.now();
      onConnect?.(socket);
      resolve(raw);
    });
  });
}

/** `count` raw connections, opened `CONNECT_BATCH` at a time. */
async function openMany(port: number, count: number, onConnect?: (socket: net.Socket) => void): Promise<RawSocket[]> {
  const all: RawSocket[] = [];
  for (let i = 0; i < count; i += CONNECT_BATCH) {
    all.push(...await Promise.all(Array.from({ length: Math.min(CONNECT_BATCH, count - i) }, () => openRaw(port, onConnect))));
  }
  return all;
}

/** Resolves when every socket has closed (true), or after `timeoutMs` (false). */
async function allClosed(raws: RawSocket[], timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (raws.some((r) => r.closedAt === undefined)) {
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

/** Milliseconds from connect to close of each closed socket. */
const lifetimes = (raws: RawSocket[]) => raws.filter((r) => r.closedAt !== undefined && r.connectedAt > 0).map((r) => r.closedAt! - r.connectedAt);

/** The first half of a real TLS ClientHello: what a client sends before it stalls mid-handshake. */
async function partialClientHello(): Promise<Buffer> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const hello = new Promise<Buffer>((resolve) => server.once('connection', (s) => s.once('data', (d: Buffer) => { resolve(d); s.destroy(); })));
  const client = tls.connect({ port, host: '127.0.0.1', servername: 'localhost', rejectUnauthorized: false });
  client.on('error', () => {});
  const bytes = await hello;
  client.destroy();
  await new Promise((resolve) => server.close(resolve));
  assert.equal(bytes[0], 0x16, 'a TLS handshake record');
  return bytes.subarray(0, Math.floor(bytes.length / 2));
}

function connectTls(port: number, localAddress?: string): Promise<tls.TLSSocket> {
  return connectSharedTls(port, localAddress, tracked);
}

interface RawResponse {
  status: number;
  statusLine: string;
  headers: Record<string, string>;
  body: string;
  length: number;
}

/** The first complete HTTP/1.1 response in `buffer` (its body by Content-Length), if there is one. */
function parseResponse(buffer: Buffer): RawResponse | undefined {
  const end = buffer.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = buffer.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = end + 4 + Number(headers['content-length'] ?? 0);
  if (buffer.length < length) return undefined;
  return { status: Number(statusLine!.split(' ')[1]), statusLine: statusLine!, headers, body: buffer.subarray(end + 4, length).toString('utf8'), length };
}

/** Keep-alive HTTP/1.1 over one TLS socket, one request at a time. */
class RawConnection {
  readonly socket: tls.TLSSocket;
  private buffer: Buffer = Buffer.alloc(0);
  private pending: { resolve: (r: RawResponse) => void; reject: (e: Error) => void } | undefined;
  closed = false;

  constructor(socket: tls.TLSSocket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
      const response = parseResponse(this.buffer);
      if (!response || !this.pending) return;
      this.buffer = this.buffer.subarray(response.length);
      const { resolve } = this.pending;
      this.pending = undefined;
      resolve(response);
    });
    socket.on('error', () => {});
    socket.once('close', () => {
      this.closed = true;
      this.pending?.reject(new Error('connection closed before the answer'));
      this.pending = undefined;
    });
  }

  /** Rejects when the connection closes first, or no answer comes within `timeoutMs` (the connection is then destroyed). */
  request(text: string, timeoutMs: number): Promise<RawResponse> {
    if (this.closed) return Promise.reject(new Error('connection closed'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending = undefined;
        this.socket.destroy();
        reject(new Error(`no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending = {
        resolve: (r) => { clearTimeout(timer); resolve(r); },
        reject: (e) => { clearTimeout(timer); reject(e); },
      };
      this.socket.write(text);
    });
  }
}

function guessToken(): string {
  let out = 'sk-project-';
  for (let i = 0; i < 43; i++) out += BASE62[randomInt(62)];
  return out;
}

// ---------------------------------------------------------------------------------------------

test(`descriptors: ${IDLE_CONNECTIONS} silent connections, ${HALF_HANDSHAKES} half-handshakes and ${CLIENT_CLOSED_CONNECTIONS} client-closed connections leave none behind ` +
  `(TLS_HANDSHAKE_TIMEOUT_MS=${SHORT_HANDSHAKE_TIMEOUT_MS}, MAX_CONNECTIONS_PER_ADDRESS=${FD_TEST_PER_ADDRESS})`, async (t) => {
  const label = '1 descriptors';
  const web = await group.startWeb('web-descriptors', {
    TLS_HANDSHAKE_TIMEOUT_MS: String(SHORT_HANDSHAKE_TIMEOUT_MS),
    MAX_CONNECTIONS_PER_ADDRESS: String(FD_TEST_PER_ADDRESS),
  });
  const pid = web.pid!;
  const quiet = await measureQuiet(web);
  const normal = await startNormal(web);
  const baseline = fdCount(pid);
  recordFigure(SUITE, `${label}: fds before`, baseline);
  const problems: string[] = [];
  const cpu = cpuMeter(pid);

  /** Opens the sockets, watches the process's descriptors until they are all closed, records and checks. */
  const phase = async (name: string, count: number, onConnect?: (socket: net.Socket) => void) => {
    const fds = sampler(() => fdCount(pid), 100);
    const started = performance.now();
    const raws = await openMany(web.port, count, onConnect);
    const connectMs = performance.now() - started;
    const closedAll = await allClosed(raws, SHORT_HANDSHAKE_TIMEOUT_MS + TIMEOUT_MARGIN_MS);
    const { peak } = fds.stop();
    const back = await fdsBack(pid, baseline, 2000);
    const lives = lifetimes(raws);
    const refused = lives.filter((ms) => ms < SHORT_HANDSHAKE_TIMEOUT_MS / 2).length;
    const timedOut = lives.filter((ms) => ms >= SHORT_HANDSHAKE_TIMEOUT_MS / 2).length;
    const failed = raws.filter((r) => r.connectedAt === 0).length;
    recordFigure(SUITE, `${label}: ${name}: connected in ms`, Math.round(connectMs));
    recordFigure(SUITE, `${label}: ${name}: accepted (held until the handshake timeout) / refused at once / connect failed`, `${timedOut} / ${refused} / ${failed}`);
    recordFigure(SUITE, `${label}: ${name}: closed by the server after ms (min / median / max)`,
      lives.length ? `${Math.round(Math.min(...lives))} / ${Math.round(quantile(lives, 0.5))} / ${Math.round(Math.max(...lives))}` : 'none');
    recordFigure(SUITE, `${label}: ${name}: fds before / peak / after`, `${baseline} / ${peak} / ${back.fds}`);
    if (!closedAll) problems.push(`${name}: ${raws.filter((r) => r.closedAt === undefined).length} of ${count} sockets still open ${SHORT_HANDSHAKE_TIMEOUT_MS + TIMEOUT_MARGIN_MS} ms after the last connect`);
    if (failed) problems.push(`${name}: ${failed} connects failed (${[...new Set(raws.map((r) => r.error).filter(Boolean))].join(', ')})`);
    if (refused) problems.push(`${name}: ${refused} connections refused although the per-address bound is ${FD_TEST_PER_ADDRESS}`);
    const late = lives.filter((ms) => ms > SHORT_HANDSHAKE_TIMEOUT_MS + TIMEOUT_MARGIN_MS).length;
    if (late) problems.push(`${name}: ${late} connections closed later than the handshake timeout + ${TIMEOUT_MARGIN_MS} ms`);
    if (!back.back) problems.push(`${name}: fds ${back.fds} not back to ${baseline} + ${FD_TOLERANCE}`);
    for (const r of raws) r.socket.destroy();
  };

  // (a) Raw TCP connections that never send a byte.
  await phase('silent connections', IDLE_CONNECTIONS);
  // (b) Half a ClientHello, then nothing.
  const hello = await partialClientHello();
  recordFigure(SUITE, `${label}: half-handshake bytes sent`, hello.length);
  await phase('half-handshakes', HALF_HANDSHAKES, (socket) => socket.write(hello));

  // (c) Idle connections the client closes (FIN) itself, before the handshake timeout.
  const raws = await openMany(web.port, CLIENT_CLOSED_CONNECTIONS);
  await sleep(CLIENT_CLOSE_AFTER_MS);
  const holding = fdCount(pid);
  const closing = performance.now();
  for (const r of raws) r.socket.end();
  const closedAll = await allClosed(raws, CLIENT_CLOSE_BOUND_MS);
  const back = await fdsBack(pid, baseline, Math.max(0, CLIENT_CLOSE_BOUND_MS - (performance.now() - closing)));
  const closeMs = Math.round(performance.now() - closing);
  const closeWait = serverSockets(web.port).closeWait;
  recordFigure(SUITE, `${label}: client-closed: fds before / open / after the client's close`, `${baseline} / ${holding} / ${back.fds}`);
  recordFigure(SUITE, `${label}: client-closed: closed by the server (of ${CLIENT_CLOSED_CONNECTIONS}) within ms`, `${raws.filter((r) => r.closedAt !== undefined).length} within ${closeMs}`);
  recordFigure(SUITE, `${label}: client-closed: server sockets in CLOSE-WAIT after`, closeWait);
  if (holding < baseline + CLIENT_CLOSED_CONNECTIONS / 2) problems.push(`client-closed: fds ${holding} while open: the connections were not held (baseline ${baseline})`);
  if (!closedAll) problems.push(`client-closed: ${raws.filter((r) => r.closedAt === undefined).length} sockets not closed by the server within ${CLIENT_CLOSE_BOUND_MS} ms of the client's FIN (half-closed: CLOSE-WAIT on the server)`);
  if (!back.back) problems.push(`client-closed: fds ${back.fds} not back to ${baseline} + ${FD_TOLERANCE} within ${CLIENT_CLOSE_BOUND_MS} ms of the client's close`);
  if (closeWait) problems.push(`client-closed: ${closeWait} server sockets in CLOSE-WAIT`);
  for (const r of raws) r.socket.destroy();

  const during = await normal.stop();
  recordFigure(SUITE, `${label}: ${CPU_FIGURE}`, cpu.stop());
  recordFigure(SUITE, `${label}: fds at the end`, fdCount(pid));
  await t.test('every socket closed by the server in time, none refused, descriptors back to their count', () => {
    assert.deepEqual(problems, [], `descriptors:\n  ${problems.join('\n  ')}\n${tail(web.logFile, 1500)}`);
  });
  await checkNormal(t, label, quiet, during);
});

/** Opens BOUND_ATTEMPTS raw connections to a process and checks that exactly `limit` are held. */
async function connectionBound(web: ServiceProcess, label: string, limit: number): Promise<string[]> {
  const problems: string[] = [];
  // The normal client holds one; no other connection is open or closing (CLOSE-WAIT is still counted).
  const settled = await waitFor(() => `no server socket of ${web.name} closing`, async () => {
    const now = serverSockets(web.port);
    return now.closeWait === 0 ? now : undefined;
  }, 5000);
  await sleep(200);
  const heldBefore = serverSockets(web.port).established;
  const raws = await openMany(web.port, BOUND_ATTEMPTS, (socket) => socket.resume());
  await sleep(BOUND_OBSERVE_MS);
  const open = raws.filter((r) => r.closedAt === undefined);
  const closed = raws.filter((r) => r.closedAt !== undefined && r.connectedAt > 0);
  const refusedMs = lifetimes(closed);
  const failed = raws.filter((r) => r.connectedAt === 0).length;
  const expected = limit - heldBefore;
  recordFigure(SUITE, `${label}: connections held before (the normal client's)`, `${heldBefore} (${settled.established} settled)`);
  recordFigure(SUITE, `${label}: of ${BOUND_ATTEMPTS} new connections held / closed at once / connect failed`, `${open.length} / ${closed.length} / ${failed}`);
  recordFigure(SUITE, `${label}: refused connections closed after ms (median / max)`,
    refusedMs.length ? `${round1(quantile(refusedMs, 0.5))} / ${round1(Math.max(...refusedMs))}` : 'none');
  if (open.length !== expected) problems.push(`${open.length} connections held, expected ${limit} - ${heldBefore} = ${expected}`);
  if (closed.length + failed !== BOUND_ATTEMPTS - expected) problems.push(`${closed.length} closed and ${failed} failed, expected ${BOUND_ATTEMPTS - expected} refused`);
  const slow = refusedMs.filter((ms) => ms > REFUSAL_BOUND_MS).length;
  if (slow) problems.push(`${slow} refused connections closed later than ${REFUSAL_BOUND_MS} ms (max ${round1(Math.max(...refusedMs))} ms)`);

  // Once the holders leave, the bound counts down: a new connection is served again.
  for (const r of raws) r.socket.destroy();
  const fresh = group.client(web, { timeoutMs: 5000 });
  const reply = await waitFor(() => `a new connection to ${web.name} served after the holders left`, async () => {
    try {
      const answer = await fresh.request('GET', '/healthz');
      return answer.status === 200 ? answer : undefined;
    } catch {
      fresh.reset();
      return undefined;
    }
  }, 5000, 100);
  assert.equal(reply.status, 200);
  fresh.destroy();
  return problems;
}

test(`connection bounds: ${BOUND_ATTEMPTS} connections from one address hold ${DEFAULT_PER_ADDRESS} (default MAX_CONNECTIONS_PER_ADDRESS); ` +
  `with MAX_CONNECTIONS=${CAPPED_MAX_CONNECTIONS}, ${CAPPED_MAX_CONNECTIONS}; the rest are closed at once`, async (t) => {
  for (const [label, name, env, limit] of [
    ['2 per-address bound', 'web-bounds', {}, DEFAULT_PER_ADDRESS],
    ['2 process bound', 'web-capped', { MAX_CONNECTIONS: String(CAPPED_MAX_CONNECTIONS) }, CAPPED_MAX_CONNECTIONS],
  ] as const) {
    const web = await group.startWeb(name, env);
    const quiet = await measureQuiet(web);
    const normal = await startNormal(web);
    const baseline = fdCount(web.pid!);
    const cpu = cpuMeter(web.pid!);
    const problems = await connectionBound(web, label, limit);
    recordFigure(SUITE, `${label}: ${CPU_FIGURE}`, cpu.stop());
    const back = await fdsBack(web.pid!, baseline, 3000);
    recordFigure(SUITE, `${label}: fds before / after`, `${baseline} / ${back.fds}`);
    if (!back.back) problems.push(`fds ${back.fds} not back to ${baseline} + ${FD_TOLERANCE}`);
    const during = await normal.stop();
    await t.test(`${label}: exactly ${limit} connections held, the rest closed within ${REFUSAL_BOUND_MS} ms, descriptors back`, () => {
      assert.deepEqual(problems, [], `${label}:\n  ${problems.join('\n  ')}`);
    });
    await checkNormal(t, label, quiet, during);
    await web.kill9();
  }
});

test(`pipelining: ${PIPELINING_CONNECTIONS} connections each pipelining ${PIPELINED_PER_CONNECTION} requests and never reading keep memory bounded ` +
  `(default MAX_PIPELINED_REQUESTS=${MAX_PIPELINED_REQUESTS})`, async (t) => {
  const label = '3 pipelining';
  const web = await group.startWeb('web-pipelining');
  const pid = web.pid!;
  const quiet = await measureQuiet(web);
  const normal = await startNormal(web);
  const baseline = fdCount(pid);
  const heldByNormal = serverSockets(web.port).established;
  const rssBefore = sampler(() => rssMb(pid), RSS_SAMPLE_MS);
  await sleep(RSS_BEFORE_MS);
  const before = rssBefore.stop();
  const logOffset = web.logText().length;

  const batch = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(PIPELINED_PER_CONNECTION / PIPELINE_WRITES);
  const rss = sampler(() => rssMb(pid), RSS_SAMPLE_MS);
  const fds = sampler(() => fdCount(pid), RSS_SAMPLE_MS);
  // Attackers the server still holds (server-side ESTABLISHED sockets beside the normal client's):
  // a client that does not read cannot see its connection cut off, the server's side can.
  const cpu = cpuMeter(pid);
  const started = performance.now();
  let lastHeldAt = 0;
  const held = sampler(() => {
    const n = Math.max(0, serverSockets(web.port).established - heldByNormal);
    if (n > 0) lastHeldAt = performance.now() - started;
    return n;
  }, RSS_SAMPLE_MS);
  // An attacker whose handshake the server cuts off (its deadline passed while it was busy) is counted, not retried.
  const outcomes = await Promise.all(Array.from({ length: PIPELINING_CONNECTIONS }, async () => {
    let socket: tls.TLSSocket;
    try {
      socket = await connectTls(web.port, ATTACKER_ADDRESS);
    } catch (err) {
      return (err as Error & { code?: string }).code ?? (err as Error).message;
    }
    // Never read: what Node buffers for a paused stream fills, then the receive window closes.
    socket.pause();
    socket.on('error', () => {});
    for (let i = 0; i < PIPELINE_WRITES; i++) socket.write(batch);
    return socket;
  }));
  const connectedMs = performance.now() - started;
  const attackers = outcomes.filter((o): o is tls.TLSSocket => typeof o !== 'string');
  const handshakeFailures = outcomes.filter((o): o is string => typeof o === 'string');
  await sleep(Math.max(0, PIPELINING_ATTACK_MS - connectedMs));
  const during = rss.stop();
  const fdsDuring = fds.stop();
  const heldPeak = held.stop().peak;
  const stillHeld = Math.max(0, serverSockets(web.port).established - heldByNormal);
  const cpuFigure = cpu.stop();
  for (const socket of attackers) socket.destroy();
  const rssAfter = sampler(() => rssMb(pid), RSS_SAMPLE_MS);
  await sleep(RSS_AFTER_MS);
  const afterRss = rssAfter.stop();
  const back = await fdsBack(pid, baseline, PIPELINING_FDS_BACK_MS);
  const answered = (web.logText().slice(logOffset).match(/"path":"\/healthz"/g) ?? []).length;
  const normalStats = await normal.stop();

  recordFigure(SUITE, `${label}: RSS MB peak before / during / after`, `${before.peak} / ${during.peak} / ${afterRss.peak}`);
  recordFigure(SUITE, `${label}: attackers' TLS handshakes all settled after ms`, Math.round(connectedMs));
  recordFigure(SUITE, `${label}: attackers whose handshake failed (cut off by the server)`,
    `${handshakeFailures.length}/${PIPELINING_CONNECTIONS}${handshakeFailures.length ? ` (${[...new Set(handshakeFailures)].join(', ')})` : ''}`);
  recordFigure(SUITE, `${label}: ${CPU_FIGURE}`, cpuFigure);
  recordFigure(SUITE, `${label}: attackers held by the server: peak / at ${PIPELINING_ATTACK_MS / 1000} s (last seen held at ms)`,
    `${heldPeak} / ${stillHeld} (${Math.round(lastHeldAt)})`);
  recordFigure(SUITE, `${label}: pipelined requests answered (of ${PIPELINING_CONNECTIONS * PIPELINED_PER_CONNECTION} sent)`, answered);
  recordFigure(SUITE, `${label}: fds before / peak / after (back after ms)`, `${baseline} / ${fdsDuring.peak} / ${back.fds} (${back.back ? back.ms : 'not'})`);
  recordFigure(SUITE, `${label}: peak RSS target (${RSS_BOUND_MB} MB)`, during.peak < RSS_BOUND_MB ? 'met' : `MISSED (${during.peak} MB)`);
  await t.test('descriptors back to their count once the attackers leave', () => {
    assert.ok(back.back, `fds ${back.fds} not back to ${baseline} + ${FD_TOLERANCE} ${PIPELINING_FDS_BACK_MS} ms after the attackers closed (peak ${fdsDuring.peak})`);
  });
  await checkNormal(t, label, quiet, normalStats);
});

test(`guessing: ${GUESSES} random keys from one address are mostly refused with 429 without a database lookup, while a recognised key keeps working ` +
  `(default AUTH_REFUSALS_PER_MINUTE=${REFUSALS_PER_MINUTE})`, async (t) => {
  const label = '4 guessing';
  const web = await group.startWeb('web-guessing');
  // pg_stat_statements counts the service's key lookups (the query of sql/queries/key_authenticate.sql).
  let unavailable: string | undefined;
  try {
    await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await db.query('SELECT count(*) FROM pg_stat_statements');
  } catch (err) {
    unavailable = `pg_stat_statements unavailable (${(err as Error).message}; PostgreSQL: ${process.env.TEST_PG_KIND})`;
  }
  const lookupLine = queryText('key_authenticate').split('\n').find((line) => line.startsWith('WHERE'));
  assert.ok(lookupLine?.includes('secret_hash'), 'the key lookup query is found by its WHERE line');
  const lookups = async (): Promise<number> => {
    const { rows } = await db.query(
      `SELECT coalesce(sum(calls), 0)::int AS calls FROM pg_stat_statements
       WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND strpos(query, $1) > 0`, [lookupLine]);
    return rows[0].calls;
  };

  const quiet = await measureQuiet(web);
  // The normal client's key is recognised by now (the quiet run succeeded with it).
  const normal = await startNormal(web);
  if (!unavailable) await db.query('SELECT pg_stat_statements_reset()');

  const expected403 = JSON.stringify(envelope(403, MESSAGES.refused));
  const expected429 = JSON.stringify(envelope(429, MESSAGES.tooManyRefusals));
  const byStatus = new Map<number, number>();
  const problems: string[] = [];
  const retryAfter = new Map<string, number>();
  let sent = 0;
  const connections = await Promise.all(Array.from({ length: GUESS_CONNECTIONS }, async () => new RawConnection(await connectTls(web.port))));
  const cpu = cpuMeter(web.pid!);
  const started = performance.now();
  await Promise.all(connections.map(async (connection) => {
    while (sent < GUESSES && performance.now() - started < GUESS_FLOOD_MS) {
      sent++;
      let reply: RawResponse;
      try {
        reply = await connection.request(`GET /v1/key/current HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${guessToken()}\r\n\r\n`, NORMAL_REQUEST_TIMEOUT_MS);
      } catch (err) {
        problems.push(`a guess got no answer: ${(err as Error).message}`);
        return;
      }
      byStatus.set(reply.status, (byStatus.get(reply.status) ?? 0) + 1);
      if (reply.status === 429) {
        const after = reply.headers['retry-after'] ?? '(none)';
        retryAfter.set(after, (retryAfter.get(after) ?? 0) + 1);
        if (!/^[1-9][0-9]*$/.test(after)) problems.push(`429 with Retry-After ${after}`);
        if (reply.body !== expected429) problems.push(`429 body ${reply.body}`);
      } else if (reply.status === 403) {
        if (reply.body !== expected403) problems.push(`403 body ${reply.body}`);
      } else {
        problems.push(`${reply.statusLine}: ${reply.body}`);
      }
    }
  }));
  const floodS = (performance.now() - started) / 1000;
  const cpuFigure = cpu.stop();
  for (const connection of connections) connection.socket.destroy();
  const normalStats = await normal.stop();
  const counted = unavailable ? undefined : await lookups();

  const refused403 = byStatus.get(403) ?? 0;
  const limited429 = byStatus.get(429) ?? 0;
  const refill = Math.ceil(floodS * REFUSALS_PER_MINUTE / 60);
  const bound = REFUSALS_PER_MINUTE + refill + GUESS_CONNECTIONS;
  const answered = refused403 + limited429;
  recordFigure(SUITE, `${label}: guesses answered of ${GUESSES} in s (per s; each 429 held ${REFUSAL_DELAY_MS} ms)`,
    `${answered} in ${round1(floodS)} (${Math.round(answered / floodS)})`);
  recordFigure(SUITE, `${label}: ${CPU_FIGURE}`, cpuFigure);
  recordFigure(SUITE, `${label}: answers by status`, [...byStatus].sort(([a], [b]) => a - b).map(([s, n]) => `${s}: ${n}`).join(', '));
  recordFigure(SUITE, `${label}: 429 Retry-After values`, [...retryAfter].map(([v, n]) => `${v}: ${n}`).join(', ') || 'none');
  recordFigure(SUITE, `${label}: guesses looked up (403) / bound (${REFUSALS_PER_MINUTE} + ${refill} refilled + ${GUESS_CONNECTIONS} connections in flight)`, `${refused403} / ${bound}`);
  recordFigure(SUITE, `${label}: guesses looked up per second past the first ${REFUSALS_PER_MINUTE} (the refill is ${REFUSALS_PER_MINUTE / 60})`,
    round1(Math.max(0, refused403 - REFUSALS_PER_MINUTE) / floodS));
  recordFigure(SUITE, `${label}: key lookups counted (pg_stat_statements) / the normal client's requests meanwhile`,
    counted === undefined ? unavailable! : `${counted} / ${normalStats.requests}`);

  await t.test('every guess answered 403 or 429 with the exact envelope (429 with Retry-After), and 429s seen', () => {
    assert.deepEqual(problems.slice(0, 20), [], `${problems.length} wrong answers to guesses`);
    assert.equal(refused403 + limited429, sent, `every guess answered 403 or 429: ${JSON.stringify([...byStatus])}`);
    assert.ok(limited429 > 0, 'the guesser was throttled (429s seen)');
  });
  await t.test('the guesses looked up stay within the budget, its refill and one per connection', () => {
    assert.ok(refused403 <= bound, `${refused403} of ${answered} guesses were looked up (403) in ${round1(floodS)} s, more than ` +
      `${REFUSALS_PER_MINUTE} + ${refill} + ${GUESS_CONNECTIONS} = ${bound}`);
  });
  await t.test('the database saw one key lookup per 403 and per normal request, no more', { skip: unavailable ?? false }, () => {
    // Every 403 is a lookup; so is every normal request (a recognised key is still looked up).
    assert.ok(counted! >= refused403, `${counted} key lookups counted, fewer than the ${refused403} 403s`);
    assert.ok(counted! - refused403 <= normalStats.requests,
      `${counted} key lookups: ${refused403} for 403s leaves ${counted! - refused403}, more than the ${normalStats.requests} normal requests`);
  });
  await checkNormal(t, label, quiet, normalStats);
});

test(`slow clients: ${SLOW_HEADS} heads and ${SLOW_BODIES} bodies sent a byte a second each get the 408 envelope and are closed ` +
  `(HEADERS_TIMEOUT_MS=${SLOW_HEADERS_TIMEOUT_MS}, REQUEST_TIMEOUT_MS=${SLOW_REQUEST_TIMEOUT_MS})`, async (t) => {
  const label = '5 slow clients';
  const web = await group.startWeb('web-slow', {
    HEADERS_TIMEOUT_MS: String(SLOW_HEADERS_TIMEOUT_MS),
    REQUEST_TIMEOUT_MS: String(SLOW_REQUEST_TIMEOUT_MS),
  });
  const pid = web.pid!;
  const quiet = await measureQuiet(web);
  const normal = await startNormal(web);
  const baseline = fdCount(pid);

  interface Slow { kind: 'head' | 'body'; socket: tls.TLSSocket; text: string; sent: number; startedAt: number; closedAt?: number; received: Buffer[] }
  // A head that never ends (it would take minutes at a byte a second), and a body 1,000 bytes long.
  const head = `GET /v1/key/current HTTP/1.1\r\nHost: x\r\nUser-Agent: ${'slow'.repeat(50)}\r\nAuthorization: Bearer ${project.key}\r\n\r\n`;
  const bodyHead = `POST /v1/app/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${SLOW_BODY_BYTES}\r\n\r\n`;
  const fds = sampler(() => fdCount(pid), 200);
  const cpu = cpuMeter(pid);
  const open = async (kind: Slow['kind']): Promise<Slow> => {
    const socket = await connectTls(web.port);
    const slow: Slow = { kind, socket, text: kind === 'head' ? head : ' '.repeat(SLOW_BODY_BYTES), sent: 0, startedAt: performance.now(), received: [] };
    socket.on('data', (chunk: Buffer) => slow.received.push(chunk));
    socket.on('error', () => {});
    socket.once('close', () => { slow.closedAt = performance.now(); });
    if (kind === 'body') socket.write(bodyHead);
    return slow;
  };
  const slows = await Promise.all([
    ...Array.from({ length: SLOW_HEADS }, () => open('head')),
    ...Array.from({ length: SLOW_BODIES }, () => open('body')),
  ]);
  const trickle = () => {
    for (const slow of slows) {
      if (slow.closedAt !== undefined || slow.sent >= slow.text.length) continue;
      slow.socket.write(slow.text[slow.sent++]!);
    }
  };
  trickle();
  const timer = every(TRICKLE_INTERVAL_MS, trickle);
  const deadlineMs = SLOW_REQUEST_TIMEOUT_MS + TIMEOUT_MARGIN_MS;
  const end = Date.now() + deadlineMs;
  while (slows.some((s) => s.closedAt === undefined) && Date.now() < end) await sleep(50);
  clearInterval(timer);
  recordFigure(SUITE, `${label}: ${CPU_FIGURE}`, cpu.stop());
  const stillOpen = slows.filter((s) => s.closedAt === undefined).length;
  const { peak } = fds.stop();
  const back = await fdsBack(pid, baseline, 3000);
  const normalStats = await normal.stop();

  const expected = JSON.stringify(envelope(408, MESSAGES.requestTimeout));
  const problems: string[] = [];
  const answeredMs: Record<Slow['kind'], number[]> = { head: [], body: [] };
  for (const slow of slows) {
    const bytes = Buffer.concat(slow.received);
    const reply = parseResponse(bytes);
    if (!reply) {
      problems.push(`${slow.kind}: no complete response (${bytes.length} bytes, ${slow.closedAt === undefined ? 'still open' : 'closed'})`);
      continue;
    }
    if (reply.statusLine !== 'HTTP/1.1 408 Request Timeout' || reply.body !== expected) problems.push(`${slow.kind}: ${reply.statusLine} ${reply.body}`);
    else if (slow.closedAt !== undefined) answeredMs[slow.kind].push(slow.closedAt - slow.startedAt);
  }
  const timeoutOf = { head: SLOW_HEADERS_TIMEOUT_MS, body: SLOW_REQUEST_TIMEOUT_MS };
  for (const kind of ['head', 'body'] as const) {
    const ms = answeredMs[kind];
    const plural = kind === 'head' ? 'heads' : 'bodies';
    recordFigure(SUITE, `${label}: slow ${plural} answered 408 and closed`, `${ms.length}/${kind === 'head' ? SLOW_HEADS : SLOW_BODIES}`);
    recordFigure(SUITE, `${label}: slow ${plural} closed after ms (min / median / max)`,
      ms.length ? `${Math.round(Math.min(...ms))} / ${Math.round(quantile(ms, 0.5))} / ${Math.round(Math.max(...ms))}` : 'none');
    const late = ms.filter((x) => x > timeoutOf[kind] + TIMEOUT_MARGIN_MS).length;
    if (late) problems.push(`${late} slow ${plural} closed later than ${timeoutOf[kind]} + ${TIMEOUT_MARGIN_MS} ms`);
    // The deadline runs from the request's start: nothing may be cut off before it (a tick of slack).
    const early = ms.filter((x) => x < timeoutOf[kind] - 100).length;
    if (early) problems.push(`${early} slow ${plural} closed before their timeout of ${timeoutOf[kind]} ms`);
  }
  recordFigure(SUITE, `${label}: fds before / peak / after`, `${baseline} / ${peak} / ${back.fds}`);
  if (stillOpen) problems.push(`${stillOpen} slow connections still open ${deadlineMs} ms after they started`);
  for (const slow of slows) slow.socket.destroy();
  await t.test(`each gets the 408 envelope and is closed within its timeout + ${TIMEOUT_MARGIN_MS} ms`, () => {
    assert.deepEqual(problems.slice(0, 20), [], `${problems.length} problems with slow clients`);
  });
  await t.test('descriptors back to their count', () => {
    assert.ok(back.back, `fds ${back.fds} not back to ${baseline} + ${FD_TOLERANCE} (peak ${peak})`);
  });
  await checkNormal(t, label, quiet, normalStats);
});

/** Server-side connections of a listening port still ESTABLISHED, by the peer's `address:port` as /proc/net/tcp writes it. */
function establishedPeers(port: number): Set<string> {
  const hexPort = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const peers = new Set<string>();
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length > 3 && fields[1]!.endsWith(hexPort) && fields[3] === '01') peers.add(fields[2]!);
  }
  return peers;
}

/** An IPv4 loopback address and port as /proc/net/tcp writes them (the address's bytes reversed). */
function procTcpPeer(address: string, port: number): string {
  const hex = address.split('.').reverse().map((byte) => Number(byte).toString(16).toUpperCase().padStart(2, '0')).join('');
  return `${hex}:${port.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** What the kernel's TCP sockets hold, machine-wide (/proc/net/sockstat): MB, and sockets closed but not yet let go (orphans). */
function tcpKernel(): { mb: number; orphans: number } {
  const match = /^TCP:.* orphan (\d+) .* mem (\d+)/m.exec(readFileSync('/proc/net/sockstat', 'utf8'));
  return { mb: match ? Math.round(Number(match[2]) * 4096 / 1024 / 1024) : 0, orphans: match ? Number(match[1]) : 0 };
}

test(`unread answers: ${UNREAD_ADDRESSES * UNREAD_PER_ADDRESS} connections from ${UNREAD_ADDRESSES} addresses, each pipelining ${UNREAD_PIPELINED} ` +
  `GET /openapi.json and reading nothing, are cut within UNREAD_OUTPUT_TIMEOUT_MS; memory stays bounded and comes back ` +
  `(defaults: UNREAD_OUTPUT_TIMEOUT_MS=${UNREAD_TIMEOUT_MS}, UNREAD_OUTPUT_MAX_BYTES=${UNREAD_MAX_MB} MiB)`, async (t) => {
  const label = '6 unread answers';
  let lowat: string;
  try {
    const hosts = readFileSync(NOTSENT_LOWAT_FILE, 'utf8').trim();
    writeFileSync(NOTSENT_LOWAT_FILE, String(NOTSENT_LOWAT));
    t.after(() => writeFileSync(NOTSENT_LOWAT_FILE, hosts));
    lowat = `${NOTSENT_LOWAT}, as deploy.md sets it (the host's: ${hosts})`;
  } catch (err) {
    lowat = `the host's, not set here (${(err as { code?: string }).code ?? (err as Error).message})`;
  }
  recordFigure(SUITE, `${label}: net.ipv4.tcp_notsent_lowat`, lowat);
  const web = await group.startWeb('web-unread');
  const pid = web.pid!;
  const quiet = await measureQuiet(web);
  const rssBefore = sampler(() => rssMb(pid), RSS_SAMPLE_MS);
  await sleep(RSS_BEFORE_MS);
  const before = rssBefore.stop();
  const startRss = before.samples[before.samples.length - 1]!;
  const logOffset = web.logText().length;

  const normal = await startNormal(web);
  // A client that reads the same document the attackers leave unread: none of its answers may be cut.
  const reader = await startNormal(web, { path: '/openapi.json', pauseMs: READER_PAUSE_MS });
  const rss = sampler(() => rssMb(pid), RSS_SAMPLE_MS);
  const kernel = sampler(() => tcpKernel().mb, RSS_SAMPLE_MS);
  const orphans = sampler(() => tcpKernel().orphans, RSS_SAMPLE_MS);
  const cpu = cpuMeter(pid);
  const started = performance.now();

  interface Attacker { socket?: tls.TLSSocket; peer?: string; sentAt?: number; cutAt?: number; failure?: string }
  const attackers: Attacker[] = [];
  const requests = 'GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(UNREAD_PIPELINED);
  // Which attackers the server still holds, looked at as often as the RSS.
  const watch = every(RSS_SAMPLE_MS, () => {
    const held = establishedPeers(web.port);
    const now = performance.now();
    for (const attacker of attackers) {
      if (attacker.peer && attacker.cutAt === undefined && !held.has(attacker.peer)) attacker.cutAt = now;
    }
  });
  const open = async (address: string): Promise<Attacker> => {
    const attacker: Attacker = {};
    attackers.push(attacker);
    try {
      const socket = await connectTls(web.port, address);
      // Never read: Node's buffer for the paused socket fills, then the kernel's, then the window closes.
      socket.pause();
      attacker.socket = socket;
      attacker.peer = procTcpPeer(address, socket.localPort!);
      socket.write(requests);
      attacker.sentAt = performance.now();
    } catch (err) {
      attacker.failure = (err as Error & { code?: string }).code ?? (err as Error).message;
    }
    return attacker;
  };
  // One address's connections at a time: what is measured is answers left unread, not a burst of
  // handshakes.
  for (let i = 0; i < UNREAD_ADDRESSES; i++) {
    await Promise.all(Array.from({ length: UNREAD_PER_ADDRESS }, () => open(`127.0.0.${FIRST_UNREAD_HOST + i}`)));
  }
  const connectedMs = performance.now() - started;
  const lastSentAt = Math.max(...attackers.map((a) => a.sentAt ?? 0));
  const deadline = lastSentAt + UNREAD_TIMEOUT_MS + TIMEOUT_MARGIN_MS;
  while (attackers.some((a) => a.peer && a.cutAt === undefined) && performance.now() < deadline) await sleep(RSS_SAMPLE_MS);
  clearInterval(watch);
  const attackMs = performance.now() - started;
  const cpuFigure = cpu.stop();
  const normalStats = await normal.stop();
  const readerStats = await reader.stop();
  const during = rss.stop();
  const kernelDuring = kernel.stop();
  const orphansDuring = orphans.stop();

  // The attackers leave; the process has UNREAD_SETTLE_MS to give their memory back.
  for (const attacker of attackers) attacker.socket?.destroy();
  await sleep(UNREAD_SETTLE_MS);
  const settledRss = rssMb(pid);
  const logLines = web.logText().slice(logOffset).split('\n');
  const log = logLines.filter((line) => line.includes('left their answers unread'))
    .map((line) => JSON.parse(line) as { stalled: number; overBound: number; peakUnreadBytes: number });
  const collections = logLines.filter((line) => line.includes('heap collected after connections were cut'))
    .map((line) => JSON.parse(line) as { freedMb: number; ms: number });

  const held = attackers.filter((a) => a.peer);
  const cutAfter = held.filter((a) => a.cutAt !== undefined).map((a) => a.cutAt! - a.sentAt!);
  const stillHeld = held.filter((a) => a.cutAt === undefined).length;
  // Counted from its requests sent: a connection the server reached late (handshakes of the others
  // ahead of it) began to wait late.
  const late = cutAfter.filter((ms) => ms > UNREAD_TIMEOUT_MS + TIMEOUT_MARGIN_MS).length;
  const failures = attackers.filter((a) => a.failure).map((a) => a.failure!);
  recordFigure(SUITE, `${label}: attackers connected and sent (of ${UNREAD_ADDRESSES * UNREAD_PER_ADDRESS}) / handshakes failed`,
    `${held.length} / ${failures.length}${failures.length ? ` (${[...new Set(failures)].join(', ')})` : ''}`);
  recordFigure(SUITE, `${label}: all connected after ms`, Math.round(connectedMs));
  recordFigure(SUITE, `${label}: attackers cut by the server / still held at ${Math.round(attackMs)} ms`, `${cutAfter.length} / ${stillHeld}`);
  recordFigure(SUITE, `${label}: cut after ms from their requests (min / median / max)`,
    cutAfter.length ? `${Math.round(Math.min(...cutAfter))} / ${Math.round(quantile(cutAfter, 0.5))} / ${Math.round(Math.max(...cutAfter))}` : 'none');
  recordFigure(SUITE, `${label}: each cut within ${UNREAD_TIMEOUT_MS} + ${TIMEOUT_MARGIN_MS} ms of its own requests`,
    late === 0 ? 'met' : `MISSED (${late} later)`);
  recordFigure(SUITE, `${label}: cut by the service's log: untaken ${UNREAD_TIMEOUT_MS} ms / over the memory bound (peak unread MB)`,
    `${log.reduce((n, l) => n + l.stalled, 0)} / ${log.reduce((n, l) => n + l.overBound, 0)} ` +
    `(${Math.round(Math.max(0, ...log.map((l) => l.peakUnreadBytes)) / 1024 / 1024)})`);
  recordFigure(SUITE, `${label}: RSS MB start / peak / ${UNREAD_SETTLE_MS / 1000} s after`, `${startRss} / ${during.peak} / ${settledRss}`);
  recordFigure(SUITE, `${label}: heap collections after cuts / MB freed / longest ms`,
    `${collections.length} / ${collections.reduce((n, c) => n + c.freedMb, 0)} / ${Math.max(0, ...collections.map((c) => c.ms))}`);
  // Connections the server closed idle (Node's keep-alive timeout) after the kernel took all their
  // answers: their answers stay queued there while the peer's window stays shut.
  recordFigure(SUITE, `${label}: kernel TCP memory MB / orphaned sockets (machine-wide), peak`, `${kernelDuring.peak} / ${orphansDuring.peak}`);
  recordFigure(SUITE, `${label}: ${CPU_FIGURE}`, cpuFigure);
  recordFigure(SUITE, `${label}: peak RSS target (${RSS_BOUND_MB} MB)`, during.peak <= RSS_BOUND_MB ? 'met' : `MISSED (${during.peak} MB)`);
  recordFigure(SUITE, `${label}: RSS back target (start + ${UNREAD_RSS_BACK_MB} MB)`,
    settledRss <= startRss + UNREAD_RSS_BACK_MB ? 'met' : `MISSED (${settledRss} MB)`);
  recordFigure(SUITE, `${label}: reader of /openapi.json answered whole / asked`, `${readerStats.ok}/${readerStats.requests}`);

  await t.test(`every attacker cut within UNREAD_OUTPUT_TIMEOUT_MS + ${TIMEOUT_MARGIN_MS} ms of its own requests`, () => {
    assert.equal(stillHeld, 0, `${stillHeld} of ${held.length} attackers still held ${Math.round(attackMs)} ms into the attack`);
    assert.equal(late, 0, `${late} of ${held.length} attackers cut later, the latest ${Math.round(Math.max(...cutAfter))} ms after its requests`);
  });
  await t.test(`the web process's RSS at most ${RSS_BOUND_MB} MB at its peak, and within ${UNREAD_RSS_BACK_MB} MB of its start ${UNREAD_SETTLE_MS / 1000} s after`, () => {
    assert.ok(during.peak <= RSS_BOUND_MB, `peak ${during.peak} MB`);
    assert.ok(settledRss <= startRss + UNREAD_RSS_BACK_MB, `${settledRss} MB ${UNREAD_SETTLE_MS / 1000} s after, from ${startRss} MB`);
  });
  await t.test('every answer to the client that reads the document came whole', () => {
    assert.equal(readerStats.ok, readerStats.requests, `${readerStats.requests - readerStats.ok} not: ${[...new Set(readerStats.failures)].join(', ')}`);
  });
  await checkNormal(t, label, quiet, normalStats);
  // This case's own target, with no slack: new connections wait for their handshakes while the
  // process is busy (gateway/handshake-admission.ts), so the flood slows, not the clients it has.
  recordFigure(SUITE, `${label}: normal client p99 within ${P99_FACTOR}x quiet`, normalStats.p99 <= P99_FACTOR * quiet.p99 ? 'met' : 'MISSED');
  await t.test(`the normal client's p99 within ${P99_FACTOR}x its quiet p99 throughout`, () => {
    assert.ok(normalStats.p99 <= P99_FACTOR * quiet.p99, `${round1(normalStats.p99)} ms under attack, ${round1(quiet.p99)} ms quiet`);
  });
});
