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
  admitHandshakes(server, { busy: 0.5, burst: options.burst ?? 1, floorGapMs: options.floorGapMs ?? FLOOR_GAP_MS });
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
  return { server, port, started, arrived, secured, connect };
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
  const { started, secured, connect } = await admittingServer(t, { burst: 3, floorGapMs: 1000 });
  const stop = busyLoop();
  t.after(stop);
  await sleep(100);
  for (let i = 0; i < 5; i++) connect(`127.0.0.${10 + i}`);
  await waitFor(() => `three handshakes (${secured.length})`, async () => (secured.length >= 3 || undefined), 5000);
  await sleep(300);
  assert.equal(started.length, 3, 'the burst, and no more until the floor gap has passed');
  await waitFor(() => `five handshakes (${secured.length})`, async () => (secured.length === 5 || undefined), 10_000);
});

test('a connection waiting for its handshake keeps its deadline from its accept, waiting included', async (t) => {
  const HANDSHAKE_TIMEOUT_MS = 400;
  const { port } = await admittingServer(t, { burst: 1, floorGapMs: 1000, handshakeTimeout: HANDSHAKE_TIMEOUT_MS });
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
  // Started one a second, the last would wait three seconds for a deadline of its own beginning then.
  for (const ms of closedAfter) assert.ok(ms < HANDSHAKE_TIMEOUT_MS + 250, `closed ${ms.toFixed(0)} ms after it connected: ${closedAfter.map((c) => c.toFixed(0)).join(', ')}`);
});
