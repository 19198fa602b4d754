// Every use the gateway makes of node:http beyond its documented API, each with why no public way
// holds. test/gateway/node-http-internals.test.ts fails, naming this module, on a Node upgrade that
// moves any of it.
import type { Server, ServerOptions, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex, Writable } from 'node:stream';
import tls from 'node:tls';

/** A connection's HTTP parser as the pacer feeds it. */
export interface ParserInput {
  /** Hands bytes to the parser; a request it completes is emitted before it returns. */
  parse(slice: Buffer): void;
  /**
   * Whether Node holds the parser paused: a request came while the connection's answers filled its
   * outgoing buffer. Node asserts that nothing is parsed until it lets go (an uncaught
   * ERR_INTERNAL_ASSERTION), and it lets go once that buffer has drained.
   */
  readonly held: boolean;
}

type PausedSocket = Socket & { _paused?: boolean };

/**
 * Calls `listener` with each connection the server takes, once Node has given it its parser: Node
 * listens from the server's constructor on, for TLS on 'secureConnection', so it runs first.
 */
export function onParserReady(server: Server, listener: (socket: Socket) => void): void {
  server.on(server instanceof tls.Server ? 'secureConnection' : 'connection', listener);
}

/**
 * Takes a connection's bytes from its parser: they go to `onData`, and the input returned gives the
 * parser what it is to parse. Node parses all it reads at once (pausing the socket or a smaller
 * highWaterMark bounds only the next read), so only its own 'data' listener, fed slices, bounds
 * what is parsed. Another 'data' listener makes Node read the socket in JS, not inside C++.
 * `onRelease` is called when Node lets go of a held parser: it resumes the socket then.
 */
export function takeParserInput(socket: Socket, onData: (chunk: Buffer) => void, onRelease: () => void): ParserInput {
  const parser = socket.listeners('data') as ((chunk: Buffer) => void)[];
  socket.removeAllListeners('data');
  socket.on('data', onData);
  const paused = socket as PausedSocket;
  socket.on('resume', () => {
    if (paused._paused !== true) onRelease();
  });
  return {
    parse(slice) {
      for (const listener of parser) listener.call(socket, slice);
    },
    get held() {
      return paused._paused === true;
    },
  };
}

type StreamHandle = { bytesWritten?: unknown; writeQueueSize?: unknown };

/**
 * Bytes of a connection's output the kernel has taken: what its TCP handle was given, less what
 * libuv still queues (for TLS, the handle beneath the TLS socket). The public counters move only
 * when a whole write completes, and TLS hands a large answer to libuv in one write, so a client
 * taking it slowly would look as if it took nothing. The public count when no handle tells.
 */
export function outputTaken(socket: Socket): number {
  const tcp = ((socket as Socket & { _parent?: Socket })._parent ?? socket) as Socket & { _handle?: StreamHandle | null };
  const handle = tcp._handle;
  if (typeof handle?.bytesWritten === 'number' && typeof handle.writeQueueSize === 'number') {
    return handle.bytesWritten - handle.writeQueueSize;
  }
  return socket.bytesWritten - socket.writableLength;
}

let stackless = false;

/**
 * Node makes an error for each request and write a closed connection aborts, and formats its stack
 * at once (streams' destroy reads err.stack), in the close callbacks that end this turn of the
 * event loop. A connection cut on purpose has nothing to record, and under a flood of cuts that
 * formatting was most of their cost: stacks are off until the next turn's timers.
 */
function stacklessUntilNextTurn(): void {
  if (stackless) return;
  stackless = true;
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  setTimeout(() => {
    Error.stackTraceLimit = limit;
    stackless = false;
  }, 0);
}

/**
 * Closes a connection with a reset, dropping what the kernel still holds for it: a plain close
 * leaves its unsent output queued there (FIN-WAIT-1) while the peer's window stays shut. A TLS
 * socket is reset through the TCP socket beneath it (resetAndDestroy takes only a TCP handle).
 * restify records each abort of the requests of `responses` (those still unanswered) with an error
 * and its stack, about 1 ms each: a connection cut on purpose has nothing to record, and a flood's
 * would hold the event loop, so their 'aborted' listeners go first.
 */
export function resetConnection(socket: Socket, responses: Iterable<ServerResponse> = []): void {
  for (const res of responses) res.req?.removeAllListeners('aborted');
  stacklessUntilNextTurn();
  const tcp = (socket as Socket & { _parent?: Socket })._parent ?? socket;
  socket.on('error', () => {});
  try {
    tcp.resetAndDestroy();
  } catch {
    // Not over TCP: a plain close is all there is.
  }
  socket.destroy();
}

/**
 * Whether the response that has the socket has sent its head, so no other answer fits there.
 * 'clientError' gives only the socket, and following every response to know it would cost each
 * request for a rare error.
 */
export function responseStarted(socket: Duplex): boolean {
  return (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
}

/**
 * Constructor options set on a server already made, as the properties Node reads them from (each
 * request's Host check, the timeout checks' start when listening): restify makes its plain-HTTP
 * server with no options.
 */
export function setServerOptions(server: Server, options: Pick<ServerOptions, 'requireHostHeader' | 'connectionsCheckingInterval'>): void {
  Object.assign(server, options);
}

const CRLF = Buffer.from('\r\n', 'latin1');

/** Bytes for many responses' bodies, framed as one HTTP/1.1 chunk once however many they go to. */
export class SharedBody {
  readonly bytes: Buffer;
  private framed: Buffer | undefined;

  constructor(text: string) {
    this.bytes = Buffer.from(text, 'utf8');
  }

  get chunk(): Buffer {
    return this.framed ??= Buffer.concat([Buffer.from(`${this.bytes.length.toString(16)}\r\n`, 'latin1'), this.bytes, CRLF]);
  }
}

/**
 * Writes a shared body to the response's socket itself once the response has it (all it wrote is
 * queued there then), framed as its head said: a chunk, or as it is for a body the connection's end
 * delimits. res.write would frame it anew for each response, in four writes; a response queued
 * behind another on its connection takes that way.
 */
export function writeSharedBody(res: ServerResponse, body: SharedBody): void {
  const { socket } = res;
  if (!socket) res.write(body.bytes);
  else socket.write(res.chunkedEncoding ? body.chunk : body.bytes);
}

/** What writeSharedBody writes to, whose 'drain' tells that a body has gone out. */
export function sharedBodyWriter(res: ServerResponse): Writable {
  return res.socket ?? res;
}

/** Node's private field for a TLS server's handshake timeout: one symbol for every server, found once. */
let handshakeTimeoutField: symbol | undefined;

/** The server's handshake timeout, as a field its TLS sockets read when they are made. */
function handshakeTimeout(server: tls.Server): { get: () => number; set: (ms: number) => void } {
  handshakeTimeoutField ??= Object.getOwnPropertySymbols(server).find((s) => s.description === 'handshake-timeout');
  if (handshakeTimeoutField === undefined) throw new Error('node:tls has no handshake-timeout field: see gateway/node-http-internals.ts');
  const field = handshakeTimeoutField;
  const own = server as unknown as Record<symbol, number>;
  return { get: () => own[field]!, set: (ms) => { own[field] = ms; } };
}

/**
 * Runs `start` (TLS's own connection listener) with the server's handshake timeout set to `ms` for
 * the TLS socket it makes: a connection that waited for its handshake to begin keeps its deadline
 * from its accept. Node reads the timeout, a private field, as it makes each TLS socket.
 */
export function withHandshakeTimeout(server: tls.Server, ms: number, start: () => void): void {
  const timeout = handshakeTimeout(server);
  const full = timeout.get();
  timeout.set(Math.max(1, Math.min(full, ms)));
  try {
    start();
  } finally {
    timeout.set(full);
  }
}

/** The server's own handshake timeout (TLS_HANDSHAKE_TIMEOUT_MS). */
export function handshakeTimeoutOf(server: tls.Server): number {
  return handshakeTimeout(server).get();
}
