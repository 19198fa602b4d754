// New TLS connections start their handshakes while the event loop has room. A flood of new
// connections otherwise runs its key exchanges and first answers back to back, and every other
// client's answers queue behind them. The TCP connection is taken at once (the connection bounds
// see it); its handshake waits in its address's line, the lines served in turn, so one address's
// flood does not hold up another's first connection. A busy process still starts `burst`
// handshakes at once, then one every `floorGapMs`: it goes on taking new clients. A connection
// keeps its handshake deadline from its accept, waiting included.
import type { Socket } from 'node:net';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import type { Server } from 'node:tls';
import { handshakeTimeoutOf, withHandshakeTimeout } from './node-http-internals.ts';

export interface HandshakeAdmissionOptions {
  /** The event loop's utilization (0-1) over its last few milliseconds, past which handshakes wait. */
  busy: number;
  /** Handshakes a busy process still starts at once; one more each `floorGapMs`, up to this many. */
  burst: number;
  /** While busy and past the burst, the least gap between two handshakes started. */
  floorGapMs: number;
}

/** The window the utilization is measured over: a few turns, so one long turn does not decide. */
const WINDOW_MS = 20;
/** Handshakes started in one turn: their key exchanges come in the next, and answers go between. */
const PER_TURN = 4;

const ignore = () => {};

interface Waiting {
  socket: Socket;
  acceptedMs: number;
}

export interface HandshakeAdmission {
  /** Connections waiting for their handshake to begin. */
  waiting(): number;
}

export function admitHandshakes(server: Server, options: HandshakeAdmissionOptions): HandshakeAdmission {
  // TLS's own listener, the only one while the server is new: it starts the handshake.
  const startTls = server.listeners('connection') as Array<(socket: Socket) => void>;
  server.removeAllListeners('connection');
  const timeoutMs = handshakeTimeoutOf(server);
  const lines = new Map<string, Waiting[]>();
  let waiting = 0;
  let mark: EventLoopUtilization = performance.eventLoopUtilization();
  let lastWindow = 0;
  let tokens = options.burst;
  let refilledMs = performance.now();
  let timer: NodeJS.Timeout | undefined;

  // The windows roll on a timer of their own: measured only when asked, one would span whatever
  // quiet or busy spell came before the ask.
  const sampler = setInterval(() => {
    lastWindow = performance.eventLoopUtilization(mark).utilization;
    mark = performance.eventLoopUtilization();
  }, WINDOW_MS).unref();
  server.once('close', () => clearInterval(sampler));

  /** The utilization over the last whole window, or this one once it has some length. */
  function isBusy(): boolean {
    const elu = performance.eventLoopUtilization(mark);
    return (elu.idle + elu.active >= WINDOW_MS / 4 ? Math.max(lastWindow, elu.utilization) : lastWindow) > options.busy;
  }

  /** Whether a handshake may start now: freely while the loop has room, else for a token. */
  function mayStart(now: number): boolean {
    if (!isBusy()) return true;
    tokens = Math.min(options.burst, tokens + (now - refilledMs) / options.floorGapMs);
    refilledMs = now;
    if (tokens < 1) return false;
    tokens--;
    return true;
  }

  /** Begins the handshake with what is left of its deadline (admit() has closed those past it). */
  function start(socket: Socket, acceptedMs: number, now: number): void {
    withHandshakeTimeout(server, timeoutMs - (now - acceptedMs), () => {
      for (const listener of startTls) listener.call(server, socket);
    });
  }

  /** A connection closed while it waited leaves its line (an address has at most its bound there). */
  function forget(address: string, entry: Waiting): void {
    const line = lines.get(address);
    const at = line?.indexOf(entry) ?? -1;
    if (at < 0) return;
    line!.splice(at, 1);
    waiting--;
    if (line!.length === 0) lines.delete(address);
  }

  /** The next address's oldest waiting connection, that address then to the back of the lines. */
  function next(): Waiting | undefined {
    for (const [address, line] of lines) {
      lines.delete(address);
      const first = line.shift()!;
      waiting--;
      if (line.length > 0) lines.set(address, line);
      first.socket.removeListener('error', ignore);
      if (!first.socket.destroyed) return first;
    }
    return undefined;
  }

  function admit(): void {
    timer = undefined;
    // Stopping: connections still waiting never began; they are closed with the listener.
    if (!server.listening) {
      for (const line of lines.values()) for (const { socket } of line) socket.destroy();
      lines.clear();
      waiting = 0;
      return;
    }
    const now = performance.now();
    // Those past their deadline go now, not when their turn comes; the rest have time left.
    for (const [address, line] of lines) {
      while (line.length > 0 && now - line[0]!.acceptedMs >= timeoutMs) {
        line.shift()!.socket.destroy();
        waiting--;
      }
      if (line.length === 0) lines.delete(address);
    }
    for (let started = 0; started < PER_TURN && waiting > 0 && mayStart(now);) {
      const first = next();
      if (first) {
        start(first.socket, first.acceptedMs, now);
        started++;
      }
    }
    // A timer, not setImmediate: a loop that never blocks in its poll would read as busy.
    if (waiting > 0) timer = setTimeout(admit, isBusy() ? Math.min(WINDOW_MS / 4, options.floorGapMs) : 0);
  }

  server.on('connection', (socket: Socket) => {
    if (socket.destroyed) return;
    const now = performance.now();
    if (waiting === 0 && mayStart(now)) {
      start(socket, now, now);
      return;
    }
    const address = socket.remoteAddress ?? '';
    const entry: Waiting = { socket, acceptedMs: now };
    const line = lines.get(address);
    if (line) line.push(entry);
    else lines.set(address, [entry]);
    waiting++;
    // Read from its accept on: a reset while it waits is an 'error' no one else listens for yet.
    socket.on('error', ignore);
    socket.once('close', () => forget(address, entry));
    timer ??= setTimeout(admit, 0);
  });
  return { waiting: () => waiting };
}
