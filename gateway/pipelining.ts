// Backpressure for pipelined requests. Node parses every request a connection sends and hands
// each to the application at once, however many earlier answers the client has not read: one
// read of 64 kB can hold two thousand small requests, all parsed, all in memory. Here a
// connection's bytes reach Node's parser in small slices, and no further slice is fed while the
// connection has `maxUnanswered` requests unanswered (an answer counts once it has been handed to
// the kernel, so a client that does not read its answers stops being read itself). What one slice
// holds beyond that waits its turn; a client that somehow gets far beyond it is cut off.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import tls from 'node:tls';

type Listener = (req: IncomingMessage, res: ServerResponse) => void;
type DataListener = (chunk: Buffer) => void;

/** The most one slice can hold is 512 / 27 (the shortest request line and Host) = 18 requests. */
const SLICE_BYTES = 512;
/** Requests parsed past the bound that may wait before the connection is cut off. */
const WAITING_FACTOR = 4;

interface Pace {
  unanswered: number;
  waiting: Array<[IncomingMessage, ServerResponse]>;
  /** Bytes read but not yet given to the parser. */
  unfed: Buffer[];
  feed: DataListener[];
}

export function paceRequests(server: Server, maxUnanswered: number): void {
  const listeners = server.listeners('request') as Listener[];
  server.removeAllListeners('request');
  const paces = new WeakMap<Socket, Pace>();

  const serve = (req: IncomingMessage, res: ServerResponse) => {
    for (const listener of listeners) listener.call(server, req, res);
  };
  const full = (pace: Pace) => pace.unanswered + pace.waiting.length >= maxUnanswered;

  /** Gives the parser slice after slice while the connection has room; keeps the rest. */
  function feed(socket: Socket, pace: Pace): void {
    while (pace.unfed.length > 0 && !full(pace) && !socket.destroyed) {
      const chunk = pace.unfed[0]!;
      const slice = chunk.subarray(0, SLICE_BYTES);
      if (slice.length === chunk.length) pace.unfed.shift();
      else pace.unfed[0] = chunk.subarray(SLICE_BYTES);
      for (const listener of pace.feed) listener.call(socket, slice);
    }
    if (pace.unfed.length > 0 || full(pace)) socket.pause();
    else socket.resume();
  }

  // After Node's own connection listener, which gave the socket its parser and 'data' listener.
  server.on(server instanceof tls.Server ? 'secureConnection' : 'connection', (socket: Socket) => {
    const pace: Pace = { unanswered: 0, waiting: [], unfed: [], feed: socket.listeners('data') as DataListener[] };
    paces.set(socket, pace);
    socket.removeAllListeners('data');
    // A 'data' listener of our own makes Node read the socket through JS instead of handing it to
    // the parser inside C++, so every chunk passes here first.
    socket.on('data', (chunk: Buffer) => {
      pace.unfed.push(chunk);
      feed(socket, pace);
    });
  });

  function start(socket: Socket, pace: Pace, req: IncomingMessage, res: ServerResponse): void {
    let answered = false;
    const onAnswered = () => {
      if (answered) return;
      answered = true;
      pace.unanswered--;
      const next = pace.waiting.shift();
      if (next) return start(socket, pace, ...next);
      feed(socket, pace);
    };
    pace.unanswered++;
    res.once('finish', onAnswered);
    res.once('close', onAnswered);
    serve(req, res);
  }

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    const pace = paces.get(socket);
    if (socket.destroyed || !pace) return;
    if (pace.unanswered < maxUnanswered) {
      start(socket, pace, req, res);
    } else if (pace.waiting.length < maxUnanswered * WAITING_FACTOR) {
      pace.waiting.push([req, res]);
    } else {
      pace.waiting.length = 0;
      pace.unfed.length = 0;
      socket.destroy();
    }
  });
}
