// Answers their clients leave unread (gateway/unread-output.ts): on bare servers, a client that
// takes nothing of its answer for the bound is cut with a reset, one that reads slowly is not; past
// the memory bound the stalled connection holding most goes first and a reading client loses
// nothing; a response with a stall rule of its own is left to it. Then the service, as configured.
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import tls from 'node:tls';
import { onParserReady } from '../../gateway/node-http-internals.ts';
import { selfSigned } from '../../gateway/tls.ts';
import { boundUnreadOutput, keepsOwnStallRule, type UnreadOutputOptions } from '../../gateway/unread-output.ts';
import type { Logger } from '../../lib/log.ts';
import { TestService } from '../support/service.ts';
import { sleep, waitFor } from '../support/wait.ts';

/** Megabytes, far more than loopback's kernel buffers take for a client that has paused. */
const MB = 1024 * 1024;
const quiet = { warn() {}, info() {} } as unknown as Logger;

interface Bare {
  server: http.Server;
  port: number;
  /** Server sides of the connections, in the order they came. */
  accepted: net.Socket[];
  close(): Promise<void>;
}

/** A server answering `GET /<megabytes>` with that many megabytes in one write (`?own`: marked as keeping its own stall rule). */
async function bare(secure: boolean, options: UnreadOutputOptions, log: Logger = quiet): Promise<Bare> {
  const server = secure ? https.createServer(await selfSigned()) : http.createServer();
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = new URL(req.url!, 'http://x');
    const body = Buffer.alloc(Number(url.pathname.slice(1)) * MB, 'x');
    res.writeHead(200, { 'Content-Length': body.length });
    res.end(body);
    if (url.searchParams.has('own')) keepsOwnStallRule(res);
  });
  const accepted: net.Socket[] = [];
  onParserReady(server, (socket) => accepted.push(socket));
  boundUnreadOutput([server], options, log);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server, port: (server.address() as net.AddressInfo).port, accepted,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

interface Client {
  socket: net.Socket;
  read: number;
  error?: string;
  closed: boolean;
}

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;

/** A client sending `request`; it reads nothing until drained, or reads at about `bytesPerSecond`. */
function ask(secure: boolean, port: number, request: string, bytesPerSecond = 0): Client {
  const socket: net.Socket = secure
    ? tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => socket.write(request))
    : net.connect(port, '127.0.0.1', () => socket.write(request));
  const client: Client = { socket, read: 0, closed: false };
  socket.on('error', (err: Error & { code?: string }) => { client.error ??= err.code; });
  socket.on('close', () => { client.closed = true; });
  socket.pause();
  if (bytesPerSecond > 0) {
    socket.on('data', (chunk: Buffer) => {
      client.read += chunk.length;
      socket.pause();
      setTimeout(() => socket.resume(), 1000 * chunk.length / bytesPerSecond);
    });
    socket.resume();
  }
  return client;
}

/** Reads what is left of a client's connection until it closes; resolves with its error code, if any. */
async function drain(client: Client, timeoutMs = 10_000): Promise<string | undefined> {
  client.socket.removeAllListeners('data');
  client.socket.on('data', (chunk: Buffer) => { client.read += chunk.length; });
  client.socket.resume();
  await waitFor(() => `the connection closed (${client.read} bytes read)`, async () => (client.closed || undefined), timeoutMs, 10);
  return client.error;
}

for (const secure of [false, true]) {
  describe(`${secure ? 'https' : 'http'}: the time bound`, () => {
    const TIMEOUT_MS = 1000;
    let b: Bare;
    before(async () => {
      b = await bare(secure, { timeoutMs: TIMEOUT_MS, maxBytes: 1024 * MB });
    });
    after(() => b.close());

    test('an answer its client takes nothing of is cut, with a reset, after the bound', async () => {
      const started = Date.now();
      const taken = b.accepted.length;
      const client = ask(secure, b.port, get('/24'));
      const socket = await waitFor(() => 'the connection taken', async () => b.accepted[taken]);
      await sleep(TIMEOUT_MS / 2);
      assert.ok(!socket.destroyed, 'not before the bound');
      await waitFor(() => 'the connection cut', async () => (socket.destroyed || undefined), 4 * TIMEOUT_MS, 20);
      const ms = Date.now() - started;
      assert.ok(ms >= TIMEOUT_MS && ms < TIMEOUT_MS + 1500, `cut after ${ms} ms`);
      assert.equal(await drain(client), 'ECONNRESET', 'a reset: what the kernel held for it is dropped');
      assert.ok(client.read < 24 * MB);
    });

    test('a client reading slowly, its answer taking several bounds to go out, is never cut', async () => {
      // The server sees the kernel take a reader's answer in windows of ~1.8 MB on loopback: at
      // 2 MB/s only every ~0.7 s, and a hold of this process (client and server both) of 0.3 s
      // under a loaded machine's other work cut it. At 8 MB/s, every ~0.2 s.
      const client = ask(secure, b.port, get('/32'), 8 * MB);
      await waitFor(() => `the whole answer read (${client.read} bytes)`, async () => (client.read > 32 * MB || undefined), 20_000, 50);
      assert.equal(client.closed, false);
      client.socket.destroy();
    });

    test('a response keeping a stall rule of its own is left to it', async () => {
      const taken = b.accepted.length;
      const client = ask(secure, b.port, get('/24?own'));
      const socket = await waitFor(() => 'the connection taken', async () => b.accepted[taken]);
      await sleep(3 * TIMEOUT_MS);
      assert.ok(!socket.destroyed, 'still open');
      client.socket.destroy();
    });
  });
}

test('past the memory bound the stalled connection holding most is cut first; a client that reads loses nothing', async () => {
  // Less and the reader's, but not most's, fit within the bound beside each other.
  const b = await bare(true, { timeoutMs: 60_000, maxBytes: 70 * MB });
  try {
    const most = ask(true, b.port, get('/48'));
    await waitFor(() => 'the first connection', async () => b.accepted[0]);
    const less = ask(true, b.port, get('/12'));
    await waitFor(() => 'the second connection', async () => b.accepted[1]);
    const reader = ask(true, b.port, get('/32'), 8 * MB);
    await waitFor(() => 'the connection holding most cut', async () => (b.accepted[0]!.destroyed || undefined), 5000, 20);
    await sleep(1000);
    assert.equal(b.accepted[1]!.destroyed, false, 'the next one is not cut once the rest are within the bound');
    await waitFor(() => `the reader's whole answer (${reader.read} bytes)`, async () => (reader.read > 32 * MB || undefined), 20_000, 50);
    assert.equal(reader.closed, false);
    assert.equal(await drain(most), 'ECONNRESET');
    less.socket.destroy();
    reader.socket.destroy();
  } finally {
    await b.close();
  }
});

describe('the service: UNREAD_OUTPUT_TIMEOUT_MS', () => {
  const TIMEOUT_MS = 1000;
  let service: TestService;
  before(async () => {
    service = await TestService.start({ jobWorkers: false, env: { UNREAD_OUTPUT_TIMEOUT_MS: String(TIMEOUT_MS) } });
  });
  after(() => service.stop());

  test('GET /openapi.json pipelined 24 times and never read: the connection is reset after the bound; the process serves on', async () => {
    const client = ask(true, Number(new URL(service.baseUrl).port), get('/openapi.json').repeat(24));
    await sleep(TIMEOUT_MS + 1500);
    const { length } = (await service.request('GET', '/openapi.json')).text;
    assert.equal(await drain(client), 'ECONNRESET');
    assert.ok(client.read < 24 * length, `read ${client.read} of ${24 * length} bytes`);
    assert.equal((await service.request('GET', '/healthz')).status, 200);
  });
});

test('2 s after a cut the heap is collected, once for the cuts meanwhile, if the process has grown by the bound since the last', async () => {
  const collected: Array<{ cut: number; rssMb: number; freedMb: number; ms: number }> = [];
  const log = {
    warn() {},
    info(fields: { cut: number; rssMb: number; freedMb: number; ms: number }, message: string) {
      if (message === 'heap collected after connections were cut') collected.push(fields);
    },
  } as unknown as Logger;
  const cut = async (b: Bare, count: number) => {
    const taken = b.accepted.length;
    const clients = Array.from({ length: count }, () => ask(false, b.port, get('/24')));
    await waitFor(() => `${count} cut`, async () => (b.accepted.length === taken + count && b.accepted.slice(taken).every((s) => s.destroyed)) || undefined, 10_000, 20);
    for (const client of clients) client.socket.destroy();
  };
  // Grown by less than the bound since the last collection: none.
  const small = await bare(false, { timeoutMs: 300, maxBytes: 1024 * MB, collectAfterGrowthBytes: 1024 * MB }, log);
  try {
    await cut(small, 2);
    await sleep(2500);
    assert.equal(collected.length, 0, 'not without growth');
  } finally {
    await small.close();
  }
  const b = await bare(false, { timeoutMs: 300, maxBytes: 1024 * MB, collectAfterGrowthBytes: 16 * MB }, log);
  // The process grows by 64 MB since the server began (its RSS then is the last collection's).
  const ballast = Buffer.alloc(64 * MB, 1);
  try {
    await cut(b, 1);
    const cutAt = Date.now();
    await cut(b, 1);
    await waitFor(() => 'the collection', async () => collected[0], 5000, 20);
    const ms = Date.now() - cutAt;
    assert.ok(ms >= 1500 && ms < 3500, `collected ${ms} ms after the first cut`);
    await sleep(2500);
    assert.equal(collected.length, 1, 'once');
    assert.equal(collected[0]!.cut, 2, 'a cut meanwhile joins the collection');
    assert.ok(collected[0]!.rssMb > 0 && collected[0]!.ms >= 0);
  } finally {
    ballast.fill(0);
    await b.close();
  }
});
