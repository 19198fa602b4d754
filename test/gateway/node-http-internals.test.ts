// What gateway/node-http-internals.ts relies on inside node:http still holds on this Node: each
// check fails naming the internal and the module, so that an upgrade that moves one says where.
// Plain servers and raw sockets, no service and no database.
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { test } from 'node:test';
import tls from 'node:tls';
import { readFileSync } from 'node:fs';
import {
  handshakeTimeoutOf, onParserReady, outputTaken, resetConnection, responseStarted, setServerOptions, SharedBody, takeParserInput, withHandshakeTimeout, writeSharedBody,
  type ParserInput,
} from '../../gateway/node-http-internals.ts';
import { selfSigned } from '../../gateway/tls.ts';
import { sleep, waitFor } from '../support/wait.ts';

const moved = (what: string) => `node:http internals moved: ${what}; see gateway/node-http-internals.ts`;

/** Listens on a free loopback port for the test's length. */
async function listening(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

async function closed(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

interface Exchange {
  text: string;
  /** Milliseconds from connecting until the server closed the connection. */
  closedAfterMs: number;
}

/** Writes raw bytes, reads all the server sends until it closes the connection (or `timeoutMs` passes). */
function exchange(port: number, request: string, secure = false, timeoutMs = 5000): Promise<Exchange> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket: net.Socket = secure
      ? tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => socket.write(request))
      : net.connect(port, '127.0.0.1', () => socket.write(request));
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text: Buffer.concat(chunks).toString('latin1'), closedAfterMs: Date.now() - started });
    });
  });
}

const body = (text: string) => text.slice(text.indexOf('\r\n\r\n') + 4);

for (const secure of [false, true]) {
  test(`${secure ? 'https' : 'http'}: a connection's bytes reach its parser only as fed, and a request is emitted within the feed that completes it`, async () => {
    const server = secure ? https.createServer(await selfSigned()) : http.createServer();
    const urls: string[] = [];
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      urls.push(req.url!);
      res.end();
    });
    let parserListeners = -1;
    let input: ParserInput | undefined;
    const read: Buffer[] = [];
    onParserReady(server, (socket) => {
      parserListeners = socket.listenerCount('data');
      input = takeParserInput(socket, (chunk) => read.push(chunk), () => {});
    });
    const parse = (slice: Buffer) => input!.parse(slice);
    try {
      const port = await listening(server);
      const [a, b, c] = ['/a', '/b', '/c'].map((url) => `GET ${url} HTTP/1.1\r\nHost: x\r\n${url === '/c' ? 'Connection: close\r\n' : ''}\r\n`);
      const bytes = a! + b! + c!;
      const answered = exchange(port, bytes, secure);
      const event = secure ? 'secureConnection' : 'connection';
      await waitFor(() => moved('the bytes of a socket with a \'data\' listener besides its parser\'s no longer come to that listener (takeParserInput)'),
        async () => (Buffer.concat(read).length === bytes.length || undefined));
      assert.ok(parserListeners > 0, moved(`a socket had no 'data' listener of its parser's when '${event}' came (onParserReady, takeParserInput)`));
      assert.deepEqual(urls, [], moved('the parser read a socket\'s bytes that were not fed to it (takeParserInput)'));
      parse(Buffer.from(a!));
      assert.deepEqual(urls, ['/a'], moved('the parser\'s \'data\' listener no longer emits the request a feed completes before it returns (takeParserInput)'));
      parse(Buffer.from(b!.slice(0, 10)));
      assert.deepEqual(urls, ['/a'], 'half a request is no request');
      parse(Buffer.from(b!.slice(10) + c!));
      assert.deepEqual(urls, ['/a', '/b', '/c'], moved('the parser\'s \'data\' listener no longer parses a slice after an earlier one (takeParserInput)'));
      const { text } = await answered;
      assert.equal(text.match(/^HTTP\/1\.1 200 /gm)?.length, 3, text);
    } finally {
      await closed(server);
    }
  });
}

for (const secure of [false, true]) {
  test(`${secure ? 'https' : 'http'}: Node holds the parser while a connection's answers fill its buffer, and lets go (resuming the socket) once they drain`, async () => {
    const body = Buffer.alloc(200_000, 'x');
    const server = secure ? https.createServer(await selfSigned()) : http.createServer();
    server.on('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
      res.writeHead(200, { 'Content-Length': body.length });
      res.end(body);
    });
    let input: ParserInput | undefined;
    let released = 0;
    const read: Buffer[] = [];
    onParserReady(server, (socket) => {
      input = takeParserInput(socket, (chunk) => read.push(chunk), () => released++);
    });
    const client: net.Socket[] = [];
    try {
      const port = await listening(server);
      // /b's answer queues behind /a's, which fills the socket's buffer: /c is parsed with both waiting.
      const requests = ['/a', '/b', '/c'].map((url) => `GET ${url} HTTP/1.1\r\nHost: x\r\n\r\n`).join('');
      const socket: net.Socket = secure
        ? tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => socket.write(requests))
        : net.connect(port, '127.0.0.1', () => socket.write(requests));
      client.push(socket);
      socket.on('error', () => {});
      socket.pause();
      await waitFor(() => 'the requests read', async () => (Buffer.concat(read).length === requests.length || undefined));
      assert.equal(input!.held, false, 'a parser nothing has been fed is not held');
      released = 0;
      input!.parse(Buffer.concat(read));
      assert.equal(input!.held, true,
        moved('socket._paused is not set by a request parsed while the answer before it fills the outgoing buffer (takeParserInput: held)'));
      let received = 0;
      socket.on('data', (chunk: Buffer) => { received += chunk.length; });
      socket.resume();
      await waitFor(() => moved(`Node did not let go of the held parser with a 'resume' of the socket once the answers drained (takeParserInput: onRelease); read ${received} bytes`),
        async () => (released > 0 && !input!.held) || undefined);
    } finally {
      for (const socket of client) socket.destroy();
      await closed(server);
    }
  });
}

/** An answer larger than loopback's kernel buffers take, to a client that has paused: most of it stays in the process. */
const LARGE = Buffer.alloc(24 * 1024 * 1024, 'x');

/** A server that answers LARGE in one write, the server side of its one connection, and that client, paused. */
async function largeAnswer(secure: boolean): Promise<{ server: http.Server; socket: net.Socket; client: net.Socket }> {
  const server = secure ? https.createServer(await selfSigned()) : http.createServer();
  server.on('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
    res.writeHead(200, { 'Content-Length': LARGE.length });
    res.end(LARGE);
  });
  const accepted = new Promise<net.Socket>((resolve) => onParserReady(server, resolve));
  const port = await listening(server);
  const request = 'GET / HTTP/1.1\r\nHost: x\r\n\r\n';
  const client: net.Socket = secure
    ? tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => client.write(request))
    : net.connect(port, '127.0.0.1', () => client.write(request));
  client.on('error', () => {});
  client.pause();
  const socket = await accepted;
  await waitFor(() => 'the answer written', async () => (socket.writableLength > 0 || undefined));
  await sleep(100);
  return { server, socket, client };
}

/**
 * The TCP states of the server side of one connection (/proc/net/tcp: 01 ESTABLISHED, 04 FIN-WAIT-1,
 * 06 TIME-WAIT), matched on both ports: a listener on port 0 may get a port an unrelated, closed
 * client connection still holds in TIME-WAIT.
 */
function serverStates(port: number, clientPort: number): string[] {
  const hex = (n: number) => `:${n.toString(16).toUpperCase().padStart(4, '0')}`;
  return readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1).map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields.length > 3 && fields[1]!.endsWith(hex(port)) && fields[2]!.endsWith(hex(clientPort)))
    .map((fields) => fields[3]!);
}

for (const secure of [false, true]) {
  test(`${secure ? 'https' : 'http'}: outputTaken moves as the kernel takes a large write bit by bit, before the write completes`, async () => {
    const { server, socket, client } = await largeAnswer(secure);
    try {
      const pending = socket.writableLength;
      const before = outputTaken(socket);
      const publicCount = socket.bytesWritten - socket.writableLength;
      // A slow reader: the write stays pending for seconds while the kernel takes it bit by bit.
      let read = 0;
      client.on('data', (chunk: Buffer) => {
        read += chunk.length;
        client.pause();
        setTimeout(() => client.resume(), 10);
      });
      client.resume();
      await waitFor(() => moved(`outputTaken did not move while the client read ${read} bytes of a write still pending (outputTaken: _parent, _handle.bytesWritten, _handle.writeQueueSize)`),
        async () => (outputTaken(socket) > before && socket.writableLength === pending) || undefined, 5000, 5);
      assert.equal(socket.bytesWritten - socket.writableLength, publicCount, 'the public counters move only when the write completes');
    } finally {
      client.destroy();
      await closed(server);
    }
  });

  test(`${secure ? 'https' : 'http'}: resetConnection drops what the kernel holds for the connection, and its client sees a reset`, async () => {
    const { server, socket, client } = await largeAnswer(secure);
    const port = (server.address() as net.AddressInfo).port;
    const clientPort = client.localPort!;
    try {
      const error = new Promise<string | undefined>((resolve) => {
        client.once('error', (err: Error & { code?: string }) => resolve(err.code));
        client.once('close', () => resolve(undefined));
      });
      resetConnection(socket);
      await waitFor(() => 'the server socket closed', async () => (socket.destroyed || undefined));
      await sleep(50);
      assert.deepEqual(serverStates(port, clientPort), [],
        moved('a reset connection left a server-side socket behind, its output queued in the kernel (resetConnection: _parent, resetAndDestroy)'));
      client.resume();
      assert.equal(await error, 'ECONNRESET', moved('the client of a reset connection saw no reset (resetConnection)'));
    } finally {
      client.destroy();
      await closed(server);
    }
  });
}

test('responseStarted tells a clientError whether the socket\'s response has sent its head', async () => {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.write('started');
  });
  const seen: boolean[] = [];
  server.on('clientError', (_err, socket) => {
    seen.push(responseStarted(socket));
    socket.destroy();
  });
  try {
    const port = await listening(server);
    await exchange(port, 'NOT HTTP\r\n\r\n');
    assert.deepEqual(seen, [false], moved('socket._httpMessage names a response on a socket that has had none (responseStarted)'));
    await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\n\r\nNOT HTTP\r\n\r\n');
    assert.deepEqual(seen, [false, true], moved('socket._httpMessage no longer names the response that has the socket, or its headersSent (responseStarted)'));
  } finally {
    await closed(server);
  }
});

test('setServerOptions: requireHostHeader set on a server already made', async () => {
  const server = http.createServer((_req, res) => res.end('served'));
  setServerOptions(server, { requireHostHeader: false });
  try {
    const { text } = await exchange(await listening(server), 'GET / HTTP/1.1\r\nConnection: close\r\n\r\n');
    assert.match(text, /^HTTP\/1\.1 200 /, moved(`Server.requireHostHeader set after the server is made no longer takes effect (setServerOptions); answered: ${text}`));
  } finally {
    await closed(server);
  }
});

test('setServerOptions: connectionsCheckingInterval set on a server already made, before it listens', async () => {
  const server = http.createServer((_req, res) => res.end());
  server.headersTimeout = 100;
  setServerOptions(server, { connectionsCheckingInterval: 50 });
  try {
    // Node's own default looks once every 30 s.
    const { text, closedAfterMs } = await exchange(await listening(server), 'GET / HTTP/1.1\r\n', false, 5000);
    assert.ok(closedAfterMs < 2000 && /^HTTP\/1\.1 408 /.test(text),
      moved(`Server.connectionsCheckingInterval set after the server is made no longer takes effect when it listens (setServerOptions); a head past its 100 ms timeout was closed after ${closedAfterMs} ms`));
  } finally {
    await closed(server);
  }
});

/** Answers `a`, then `bc` and `d` as shared bodies, the last once the response has its socket. */
function sharedBodyServer(): { server: http.Server; queued: boolean[] } {
  const queued: boolean[] = [];
  const server = http.createServer((req, res) => {
    if (req.url === '/first') return void setTimeout(() => res.end('first'), 100);
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.write('a');
    queued.push(!res.socket);
    writeSharedBody(res, new SharedBody('bc'));
    const last = () => {
      writeSharedBody(res, new SharedBody('d'));
      res.end();
    };
    if (res.socket) last();
    else res.once('socket', () => setImmediate(last));
  });
  return { server, queued };
}

test('writeSharedBody frames as the head announced: chunks for HTTP/1.1, the bytes as they are for HTTP/1.0', async () => {
  const { server } = sharedBodyServer();
  try {
    const port = await listening(server);
    const { text } = await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.match(text, /\r\nTransfer-Encoding: chunked\r\n/i, text);
    assert.equal(body(text), '1\r\na\r\n2\r\nbc\r\n1\r\nd\r\n0\r\n\r\n',
      moved('ServerResponse.chunkedEncoding no longer tells that the head announced chunks (writeSharedBody)'));
    const old = await exchange(port, 'GET / HTTP/1.0\r\n\r\n');
    assert.equal(body(old.text), 'abcd', moved('ServerResponse.chunkedEncoding tells chunks for a body the connection\'s end delimits (writeSharedBody)'));
  } finally {
    await closed(server);
  }
});

test('writeSharedBody behind another response on the connection: what the response wrote while queued goes first', async () => {
  const { server, queued } = sharedBodyServer();
  try {
    const { text } = await exchange(await listening(server),
      'GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.deepEqual(queued, [true], 'the second response waited for the socket');
    const second = text.slice(text.indexOf('HTTP/1.1', 1));
    assert.equal(body(second), '1\r\na\r\n2\r\nbc\r\n1\r\nd\r\n0\r\n\r\n',
      moved('a response given its socket no longer has all it wrote while queued written there first (writeSharedBody)'));
  } finally {
    await closed(server);
  }
});

test('resetConnection: the errors Node makes for the requests it aborts carry no stack, and stacks are back by the next turn', async () => {
  const aborted: Error[] = [];
  const server = http.createServer((req) => {
    // Never answered: the reset aborts it.
    req.on('error', (err) => aborted.push(err));
  });
  const port = await listening(server);
  try {
    const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
    const client = net.connect(port, '127.0.0.1', () => client.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    client.on('error', () => {});
    const socket = await accepted;
    await waitFor(() => 'the request under way', async () => (server.listenerCount('request') > 0 && socket.bytesRead > 0) || undefined);
    await sleep(50);
    resetConnection(socket);
    await waitFor(() => 'the request aborted', async () => aborted[0]);
    assert.equal(aborted[0]!.message, 'aborted');
    assert.doesNotMatch(aborted[0]!.stack ?? '', /\n\s+at /, 'no frames');
    await sleep(5);
    assert.match(new Error('later').stack ?? '', /\n\s+at /, 'frames again');
    client.destroy();
  } finally {
    await closed(server);
  }
});

test('handshakeTimeoutOf reads the server\'s handshake timeout; withHandshakeTimeout gives one connection a shorter one', async (t) => {
  const server = tls.createServer({ ...await selfSigned(), handshakeTimeout: 5000 });
  server.on('tlsClientError', (_err, socket) => socket.destroy());
  assert.equal(handshakeTimeoutOf(server), 5000);
  const startTls = server.listeners('connection') as Array<(socket: net.Socket) => void>;
  server.removeAllListeners('connection');
  server.on('connection', (socket: net.Socket) => withHandshakeTimeout(server, 200, () => startTls[0]!.call(server, socket)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const began = Date.now();
  const silent = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  silent.on('error', () => {});
  await new Promise((resolve) => silent.once('close', resolve));
  assert.ok(Date.now() - began < 2000, `closed after ${Date.now() - began} ms`);
  assert.equal(handshakeTimeoutOf(server), 5000, 'the server\'s own timeout is put back');
});
