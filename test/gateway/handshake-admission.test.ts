// New TLS connections admitted while the event loop has room (gateway/handshake-admission.ts):
// at once on an idle loop; on a busy one, one per floor gap, the addresses' lines in turn; the
// waiting ones closed with the server.
import assert from 'node:assert/strict';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { test, type TestContext } from 'node:test';
import tls from 'node:tls';
import { admitHandshakes } from '../../gateway/handshake-admission.ts';
import { selfSigned } from '../../gateway/tls.ts';
import { sleep, waitFor } from '../support/wait.ts';

const FLOOR_GAP_MS = 40;

interface Started {
  address: string;
  atMs: number;
}

/** A TLS server with admission, listening; `started` records each handshake begun, in order. */
async function admittingServer(t: TestContext, options: { burst?: number; floorGapMs?: number; handshakeTimeout?: number } = {}) {
  const server = tls.createServer({ ...await selfSigned(), ...(options.handshakeTimeout ? { handshakeTimeout: options.handshakeTimeout } : {}) });
  // Listening before admission is set, as TLS's own listener is: called when a handshake starts.
  const started: Started[] = [];
  server.on('connection', (socket: net.Socket) => started.push({ address: socket.remoteAddress!, atMs: performance.now() }));
  const admission = admitHandshakes(server, { busy: 0.5, burst: options.burst ?? 1, floorGapMs: options.floorGapMs ?? FLOOR_GAP_MS });
  const arrived: Array<Started & { startedAtOnce?: boolean }> = [];
  server.prependListener('connection', (socket: net.Socket) => {
    const arrival: Started & { startedAtOnce?: boolean } = { address: socket.remoteAddress!, atMs: performance.now() };
    arrived.push(arrival);
    // Once the accept's listeners have run: was its handshake begun by them, or left waiting?
    const before = started.length;
    queueMicrotask(() => { arrival.startedAtOnce = started.length > before; });
  });
  const secured: tls.TLSSocket[] = [];
  server.on('secureConnection', (socket) => secured.push(socket));
  // As the gateway's client errors do (gateway/client-errors.ts): a handshake that times out is closed.
  server.on('tlsClientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const clients: tls.TLSSocket[] = [];
  const connect = (localAddress: string) => {
    const tcp = net.connect({ port, host: '127.0.0.1', localAddress });
    tcp.on('error', () => {});
    const client = tls.connect({ socket: tcp, rejectUnauthorized: false });
    client.on('error', () => {});
    clients.push(client);
    return client;
  };
  t.after(() => {
    for (const socket of [...clients, ...secured]) socket.destroy();
    server.close();
  });
  return { server, port, admission, started, arrived, secured, connect };
}

/** Keeps the event loop about 90% busy, as a flood's work does, until stopped. */
function busyLoop(): () => void {
  const timer = setInterval(() => {
    const end = performance.now() + 18;
    while (performance.now() < end) { /* busy */ }
  }, 20);
  return () => clearInterval(timer);
}

test('on an idle event loop a new connection starts its handshake at once', async (t) => {
  const { arrived, secured, connect } = await admittingServer(t);
  await sleep(50);
  connect('127.0.0.2');
  await waitFor('the handshake', async () => (secured.length === 1 || undefined));
  assert.equal(arrived.length, 1);
  assert.equal(arrived[0]!.startedAtOnce, true);
});

test('on a busy event loop handshakes start one per floor gap, the addresses in turn, and every one completes', async (t) => {
  const { started, arrived, secured, connect } = await admittingServer(t);
  const stop = busyLoop();
  t.after(stop);
  await sleep(100);
  // Accepted in the order asked: six from one address, then one from another.
  for (let i = 0; i < 6; i++) connect('127.0.0.2');
  connect('127.0.0.3');
  await waitFor(() => `seven handshakes (${secured.length})`, async () => (secured.length === 7 || undefined), 10_000);
  stop();
  assert.equal(started.length, 7);
  // The second address's one connection waits for one start of the line ahead of it at most, not
  // for that whole line.
  const arrivedAt = arrived.find((s) => s.address === '127.0.0.3')!.atMs;
  const startsBefore = started.findIndex((s) => s.address === '127.0.0.3') - started.filter((s) => s.atMs < arrivedAt).length;
  assert.ok(startsBefore <= 1, `${startsBefore} handshakes started between its arrival and its own: ` +
    `${started.map((s) => `${s.address} ${(s.atMs - arrivedAt).toFixed(0)}`).join(', ')}`);
  for (let i = 1; i < started.length; i++) {
    const gap = started[i]!.atMs - started[i - 1]!.atMs;
    assert.ok(gap >= FLOOR_GAP_MS - 1, `handshake ${i + 1} started ${gap.toFixed(1)} ms after the one before`);
  }
});

test('connections still waiting for their handshake are closed with the server', async (t) => {
  const { server, started, connect } = await admittingServer(t);
  const stop = busyLoop();
  t.after(stop);
  await sleep(100);
  const clients = Array.from({ length: 4 }, () => connect('127.0.0.4'));
  const closed = clients.map((client) => new Promise<void>((resolve) => client.once('close', () => resolve())));
  await waitFor('the first handshake started', async () => (started.length >= 1 || undefined));
  server.close();
  await waitFor('a waiting connection closed', async () => (clients.some((c) => c.destroyed) || undefined), 5000);
  stop();
  for (const client of clients) if (!client.destroyed) client.destroy();
  await Promise.all(closed);
  assert.ok(started.length < 4, `${started.length} of 4 started before the server closed`);
});

test('a busy process starts its burst of handshakes at once, then waits for the floor gap', async (t) => {
  const { started, arrived, secured, connect } = await admittingServer(t, { burst: 3, floorGapMs: 1000 });
  const stop = busyLoop();
  t.after(stop);
  await sleep(100);
  for (let i = 0; i < 5; i++) connect(`127.0.0.${10 + i}`);
  await waitFor(() => `three handshakes (${secured.length})`, async () => (secured.length >= 3 || undefined), 5000);
  const firstArrival = Math.min(...arrived.map((a) => a.atMs));
  assert.ok(started[2]!.atMs - firstArrival < 300, `the burst started at once: ${started.map((s) => (s.atMs - firstArrival).toFixed(0)).join(', ')} ms`);
  await sleep(300);
  assert.equal(started.length, 3, 'the burst, and no more until the floor gap has passed');
  await waitFor(() => `five handshakes (${secured.length})`, async () => (secured.length === 5 || undefined), 10_000);
});

test('a connection waiting for its handshake keeps its deadline from its accept, waiting included', async (t) => {
  const HANDSHAKE_TIMEOUT_MS = 1000;
  // Started one every 500 ms, a waited connection must get only what is left of its 1,000 ms.
  const { port } = await admittingServer(t, { burst: 1, floorGapMs: 500, handshakeTimeout: HANDSHAKE_TIMEOUT_MS });
  const stop = busyLoop();
  t.after(stop);
  await sleep(100);
  // Silent TCP connections: no handshake ever comes, so each is closed at its deadline.
  const closedAfter = await Promise.all(Array.from({ length: 4 }, () => new Promise<number>((resolve) => {
    const began = performance.now();
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.20' });
    socket.on('error', () => {});
    socket.on('close', () => resolve(performance.now() - began));
    t.after(() => socket.destroy());
  })));
  // With a whole timeout from its start, the second would close at about 1,500 ms.
  for (const ms of closedAfter) assert.ok(ms < HANDSHAKE_TIMEOUT_MS + 250, `closed ${ms.toFixed(0)} ms after it connected: ${closedAfter.map((c) => c.toFixed(0)).join(', ')}`);
});

test('a connection reset while it waits neither stops the server nor keeps a place in the lines', async (t) => {
  const { admission, arrived, started, secured, connect, port } = await admittingServer(t, { burst: 1, floorGapMs: 60_000 });
  const stop = busyLoop();
  t.after(stop);
  await sleep(100);
  const raw = Array.from({ length: 3 }, () => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.30' });
    socket.on('error', () => {});
    t.after(() => socket.destroy());
    return socket;
  });
  await waitFor(() => `three accepted (${arrived.length})`, async () => (arrived.length === 3 || undefined));
  assert.equal(started.length, 1, 'one started for the burst, two waiting');
  // A reset: the waiting sockets' reads fail with ECONNRESET.
  assert.equal(admission.waiting(), 2);
  for (const socket of raw.slice(1)) socket.resetAndDestroy();
  // Still busy, so no turn of theirs has come: they leave their line as they close.
  await waitFor(() => `none waiting (${admission.waiting()})`, async () => (admission.waiting() === 0 || undefined), 2000);
  stop();
  await sleep(50);
  // Nothing left waiting: a new connection on the idle loop begins at once.
  connect('127.0.0.31');
  await waitFor('its handshake', async () => (secured.length === 1 || undefined));
  assert.equal(arrived[3]!.startedAtOnce, true);
});
