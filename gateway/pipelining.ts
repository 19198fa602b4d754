// Backpressure for pipelined requests. Node parses every request a connection sends and hands
// each to the application at once, however many earlier answers the client has not read: one
// connection could queue thousands. Here a connection serves at most `maxUnanswered` requests
// at a time; while it has that many, it is not read further. A request counts as answered when
// its response has been handed to the kernel, so a client that does not read its answers stops
// being read itself. What Node had already parsed from the last chunk waits its turn, up to as
// many again; a client that pipelines beyond that without reading is cut off.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

interface Pace {
  unanswered: number;
  waiting: Array<[IncomingMessage, ServerResponse]>;
  paused: boolean;
}

export function paceRequests(server: Server, maxUnanswered: number): void {
  const listeners = server.listeners('request') as Listener[];
  server.removeAllListeners('request');
  const paces = new WeakMap<Socket, Pace>();

  const serve = (req: IncomingMessage, res: ServerResponse) => {
    for (const listener of listeners) listener.call(server, req, res);
  };

  function paceOf(socket: Socket): Pace {
    let pace = paces.get(socket);
    if (!pace) {
      const created: Pace = { unanswered: 0, waiting: [], paused: false };
      paces.set(socket, pace = created);
      // Node resumes a socket itself once its output drains; ours stays paused while it is full.
      socket.on('resume', () => {
        if (created.paused) socket.pause();
      });
    }
    return pace;
  }

  function start(socket: Socket, pace: Pace, req: IncomingMessage, res: ServerResponse): void {
    let answered = false;
    const onAnswered = () => {
      if (answered) return;
      answered = true;
      pace.unanswered--;
      const next = pace.waiting.shift();
      if (next) return start(socket, pace, ...next);
      if (pace.paused && pace.unanswered < maxUnanswered) {
        pace.paused = false;
        socket.resume();
      }
    };
    pace.unanswered++;
    res.once('finish', onAnswered);
    res.once('close', onAnswered);
    serve(req, res);
  }

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    const pace = paceOf(socket);
    if (pace.unanswered < maxUnanswered) {
      start(socket, pace, req, res);
    } else if (pace.waiting.length < maxUnanswered) {
      pace.waiting.push([req, res]);
    } else {
      pace.waiting.length = 0;
      socket.destroy();
      return;
    }
    if (pace.unanswered + pace.waiting.length >= maxUnanswered && !pace.paused) {
      pace.paused = true;
      socket.pause();
    }
  });
}
