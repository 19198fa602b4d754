// Answers their clients leave unread. A connection whose pending output its client has taken none
// of for `timeoutMs` is reset, and while the process holds more than `maxBytes` for its clients,
// the stalled connections holding the most go first: a client that reads makes progress and is
// never cut for the bound. An event stream keeps its own stall rule (event-streams.ts). After a
// flood of cuts the heap is collected, so that what the cut connections held is given back.
import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { CollectionAfterCuts } from '../lib/heap.ts';
import type { Logger } from '../lib/log.ts';
import { onParserReady, outputTaken, resetConnection } from './node-http-internals.ts';
import { releaseAddress, unansweredResponses } from './pipelining.ts';

export interface UnreadOutputOptions {
  /** How long a connection's pending output may go untaken before it is reset. */
  timeoutMs: number;
  /** Output pending for all the process's clients past which the stalled ones are cut. */
  maxBytes: number;
  /** Growth of the RSS since the last collection past which cuts lead to one (lib/heap.ts; half maxBytes unless given). */
  collectAfterGrowthBytes?: number;
}

const SWEEP_MS = 250;
/**
 * Past the memory bound, a connection is cut only once it has taken nothing for this long: longer
 * than a round trip on any honest link, within which the kernel takes more from a client that reads.
 */
const BOUND_STALL_MS = 1000;
/** Cuts are logged as one line per interval with their counts, not a line each under a flood. */
const CUT_LOG_INTERVAL_MS = 10_000;
/**
 * Connections closed per turn of the event loop: a flood's many must not hold up every other answer
 * at once (freeing a TLS connection's state is a fraction of a millisecond each).
 */
const CUTS_PER_TURN = 8;

interface Watch {
  /** outputTaken when last seen moving. */
  taken: number;
  /** Since when the socket has had output pending and its client taken none of it (0: none pending). */
  stalledSince: number;
  /** Its output pending, on the socket and in the responses waiting for it. */
  bytes: number;
}

const OWN_RULE = Symbol('ownStallRule');
type Marked = Socket & { [OWN_RULE]?: boolean };

/** The connection of a response that enforces its own stall rule (a live event stream), while it lasts. */
export function keepsOwnStallRule(res: ServerResponse): void {
  const mark = (socket: Marked) => {
    socket[OWN_RULE] = true;
    const clear = () => { socket[OWN_RULE] = false; };
    res.once('finish', clear);
    res.once('close', clear);
  };
  if (res.socket) mark(res.socket);
  else res.once('socket', mark);
}

/**
 * A connection's output pending now. A response answered whole that only waits for its client is
 * no work in progress: it gives its address's place back (a client that reads nothing would hold
 * its address's places for as long as it is let be).
 */
function measure(socket: Socket): number {
  let queued = 0;
  for (const res of unansweredResponses(socket)) {
    if (res.writableEnded) releaseAddress(res);
    // Those behind the first wait for the socket with what they wrote.
    if (!res.socket) queued += res.writableLength;
  }
  return socket.writableLength + queued;
}

export function boundUnreadOutput(servers: Server[], options: UnreadOutputOptions, log: Logger): void {
  const { timeoutMs, maxBytes, collectAfterGrowthBytes = maxBytes / 2 } = options;
  const watched = new Map<Socket, Watch>();
  const cut = { stalled: 0, overBound: 0, peakBytes: 0 };
  let cutLogTimer: NodeJS.Timeout | undefined;

  const collection = new CollectionAfterCuts(collectAfterGrowthBytes, log);

  const cutting: Socket[] = [];
  function cutSome(): void {
    for (const socket of cutting.splice(0, CUTS_PER_TURN)) {
      resetConnection(socket, unansweredResponses(socket));
    }
    if (cutting.length > 0) setImmediate(cutSome);
  }

  /** Resets a connection in a later turn; it counts for nothing meanwhile. */
  function cutOff(socket: Socket, kind: 'stalled' | 'overBound', total: number): void {
    watched.delete(socket);
    cutting.push(socket);
    if (cutting.length === 1) setImmediate(cutSome);
    cut[kind]++;
    collection.cut();
    cut.peakBytes = Math.max(cut.peakBytes, total);
    cutLogTimer ??= setTimeout(() => {
      log.warn({ stalled: cut.stalled, overBound: cut.overBound, peakUnreadBytes: cut.peakBytes, timeoutMs, maxBytes },
        'connections whose clients left their answers unread closed');
      cut.stalled = 0;
      cut.overBound = 0;
      cut.peakBytes = 0;
      cutLogTimer = undefined;
    }, CUT_LOG_INTERVAL_MS).unref();
  }

  function sweep(): void {
    const now = performance.now();
    let total = 0;
    const timedOut: Socket[] = [];
    const stalled: Array<[Socket, Watch]> = [];
    for (const [socket, watch] of watched) {
      if ((socket as Marked)[OWN_RULE]) {
        watch.stalledSince = 0;
        continue;
      }
      const bytes = watch.bytes = measure(socket);
      total += bytes;
      if (socket.writableLength === 0) {
        watch.stalledSince = 0;
        continue;
      }
      const taken = outputTaken(socket);
      if (watch.stalledSince === 0 || taken !== watch.taken) {
        watch.taken = taken;
        watch.stalledSince = now;
      } else if (now - watch.stalledSince >= timeoutMs) {
        timedOut.push(socket);
        total -= bytes;
      } else if (now - watch.stalledSince >= BOUND_STALL_MS) {
        stalled.push([socket, watch]);
      }
    }
    const peak = total + timedOut.reduce((sum, socket) => sum + watched.get(socket)!.bytes, 0);
    for (const socket of timedOut) cutOff(socket, 'stalled', peak);
    if (total <= maxBytes) return;
    stalled.sort(([, a], [, b]) => b.bytes - a.bytes);
    for (const [socket, watch] of stalled) {
      if (total <= maxBytes) break;
      cutOff(socket, 'overBound', peak);
      total -= watch.bytes;
    }
  }

  const timer = setInterval(sweep, SWEEP_MS).unref();
  for (const server of servers) {
    onParserReady(server, (socket) => {
      watched.set(socket, { taken: 0, stalledSince: 0, bytes: 0 });
      socket.once('close', () => watched.delete(socket));
    });
    server.once('close', () => clearInterval(timer));
  }
}
