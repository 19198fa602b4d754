// Backpressure for pipelined requests. Node parses all a connection sends at once, however many
// answers its client has not read: here its parser gets small slices, none while the connection
// has `maxUnanswered` requests unanswered (an answer counts once handed to the kernel). A client
// address (the peer's, or with TRUST_PROXY the one X-Forwarded-For names) has a bound on requests
// in progress over all its connections; past it they wait, and its connections are woken in turn.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { onParserReady, takeParserInput, type ParserInput } from './node-http-internals.ts';
import { clientAddress } from './request-id.ts';

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/** The most one slice can hold is 512 / 27 (the shortest request line and Host) = 18 requests. */
const SLICE_BYTES = 512;
/** Requests parsed past the bound that may wait before the connection is cut off. */
const WAITING_FACTOR = 4;

export interface PaceOptions {
  /** Requests one connection may have unanswered before it is not read further. */
  maxUnanswered: number;
  /**
   * Requests one client address may have in progress over all its connections (0: no bound): many
   * connections that each read their answers at once would otherwise take the whole process.
   */
  maxPerAddress: number;
  trustProxy: boolean;
}

interface Address {
  key: string;
  inProgress: number;
  /** Connections with a request waiting for this address's room, in the order they began to wait. */
  blocked: Set<Pace>;
}

interface Waiting {
  req: IncomingMessage;
  res: ServerResponse;
  address: Address;
}

interface Pace {
  socket: Socket;
  /** Its responses started and not yet handed to the kernel, oldest first. */
  unanswered: Set<ServerResponse>;
  waiting: Waiting[];
  /** Bytes read but not yet given to the parser. */
  unfed: Buffer[];
  input: ParserInput;
  /** The listener's own request handlers (restify's). */
  serve: Listener;
}

const hasBody = (req: IncomingMessage) =>
  req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0';

/**
 * How a request in progress gives back its address's place (see releaseAddress): a property of its
 * response, not a WeakMap entry, which the garbage collector would have to visit for every request.
 */
const RELEASE = Symbol('releaseAddress');
type Releasable = ServerResponse & { [RELEASE]?: () => void };

/**
 * A request that only waits (an event stream once begun, an answer held back on purpose) is no
 * work in progress: it gives its address's place back, and holds only its connection's until it
 * is answered.
 */
export function releaseAddress(res: ServerResponse): void {
  (res as Releasable)[RELEASE]?.();
}

const UNANSWERED = Symbol('unanswered');
type Paced = Socket & { [UNANSWERED]?: ReadonlySet<ServerResponse> };
const NONE: ReadonlySet<ServerResponse> = new Set();

/** A connection's responses started and not yet handed to the kernel, oldest first. */
export function unansweredResponses(socket: Socket): ReadonlySet<ServerResponse> {
  return (socket as Paced)[UNANSWERED] ?? NONE;
}

/** One pacer serves every listener of a process, so an address's bound counts them all. */
export function requestPacer(options: PaceOptions): (server: Server) => void {
  const { maxUnanswered, maxPerAddress, trustProxy } = options;
  const addresses = new Map<string, Address>();

  const addressOf = (key: string): Address => {
    let address = addresses.get(key);
    if (!address) {
      address = { key, inProgress: 0, blocked: new Set() };
      addresses.set(key, address);
    }
    return address;
  };
  const forgetIfIdle = (address: Address) => {
    if (address.inProgress === 0 && address.blocked.size === 0) addresses.delete(address.key);
  };
  const hasRoom = (address: Address) => maxPerAddress === 0 || address.inProgress < maxPerAddress;

  /**
   * Starts the connection's waiting requests while it and their address have room, and while its
   * answers so far have gone out (its outgoing buffer has room, and Node does not hold its parser):
   * a client that reads none of them holds one large answer at most, and one place of its address.
   */
  function startWaiting(pace: Pace): void {
    const { socket, input } = pace;
    while (pace.waiting.length > 0 && pace.unanswered.size < maxUnanswered && !socket.destroyed && !input.held && !socket.writableNeedDrain) {
      const next = pace.waiting[0]!;
      if (!hasRoom(next.address)) {
        next.address.blocked.add(pace);
        return;
      }
      pace.waiting.shift();
      start(pace, next);
    }
  }

  /**
   * Gives the parser slice after slice while nothing parsed waits, the connection has room and Node
   * does not hold the parser; keeps the rest, and reads the socket only while all it read has been
   * parsed. Node lets go of its parser once the connection's answers have drained (advance).
   */
  function feed(pace: Pace): void {
    const { socket, input } = pace;
    while (pace.unfed.length > 0 && pace.waiting.length === 0 && pace.unanswered.size < maxUnanswered && !socket.destroyed && !input.held) {
      const chunk = pace.unfed[0]!;
      let slice = chunk;
      if (chunk.length <= SLICE_BYTES) pace.unfed.shift();
      else {
        slice = chunk.subarray(0, SLICE_BYTES);
        pace.unfed[0] = chunk.subarray(SLICE_BYTES);
      }
      input.parse(slice);
    }
    if (pace.unfed.length > 0 || pace.waiting.length > 0 || pace.unanswered.size >= maxUnanswered || input.held) socket.pause();
    else socket.resume();
  }

  function advance(pace: Pace): void {
    startWaiting(pace);
    feed(pace);
  }

  /** Hands the address's room to its blocked connections, one request each in turn. */
  function wake(address: Address): void {
    for (const pace of [...address.blocked]) {
      if (!hasRoom(address)) return;
      address.blocked.delete(pace);
      // Back of the line once it has had its turn, if it has more waiting (startWaiting re-adds it).
      advance(pace);
    }
  }

  /**
   * Answers given back in this turn of the event loop; their room is handed on in the next. An
   * answer often completes within the turn that started it (a write the kernel takes at once), so
   * room handed on at once would let an address start request after request in one turn, and every
   * other client would wait for the turn to end: this way an address starts at most its bound a turn.
   */
  const freed: Address[] = [];

  function handBack(): void {
    const given = freed.splice(0);
    for (const address of given) address.inProgress--;
    for (const address of new Set(given)) {
      wake(address);
      forgetIfIdle(address);
    }
  }

  function start(pace: Pace, { req, res, address }: Waiting): void {
    let answered = false;
    let holdsAddress = true;
    const giveBackAddress = () => {
      if (!holdsAddress) return;
      holdsAddress = false;
      freed.push(address);
      if (freed.length === 1) setImmediate(handBack);
    };
    const takeAgain = () => {
      if (answered || holdsAddress) return;
      holdsAddress = true;
      address.inProgress++;
    };
    const onAnswered = () => {
      if (answered) return;
      answered = true;
      pace.unanswered.delete(res);
      giveBackAddress();
      advance(pace);
    };
    pace.unanswered.add(res);
    address.inProgress++;
    (res as Releasable)[RELEASE] = giveBackAddress;
    res.once('finish', onAnswered);
    res.once('close', onAnswered);
    pace.serve(req, res);
    if (hasBody(req)) {
      // A body still arriving at the end of this turn waits on its client, not on the process: the
      // address's room is not held meanwhile (a slow body would block its address's other clients).
      setImmediate(() => {
        if (req.complete || answered) return;
        giveBackAddress();
        req.once('end', takeAgain);
      });
    }
  }

  return function paceRequests(server: Server): void {
    const listeners = server.listeners('request') as Listener[];
    server.removeAllListeners('request');
    const paces = new WeakMap<Socket, Pace>();
    const serve: Listener = (req, res) => {
      for (const listener of listeners) listener.call(server, req, res);
    };

    onParserReady(server, (socket) => {
      const pace: Pace = {
        socket, unanswered: new Set(), waiting: [], unfed: [], serve,
        input: takeParserInput(socket, (chunk) => {
          pace.unfed.push(chunk);
          feed(pace);
        }, () => advance(pace)),
      };
      paces.set(socket, pace);
      (socket as Paced)[UNANSWERED] = pace.unanswered;
      socket.on('drain', () => advance(pace));
      socket.once('close', () => {
        for (const { address } of pace.waiting) {
          address.blocked.delete(pace);
          forgetIfIdle(address);
        }
        pace.waiting.length = 0;
        pace.unfed.length = 0;
      });
    });

    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const socket = req.socket;
      const pace = paces.get(socket);
      if (socket.destroyed || !pace) return;
      if (pace.waiting.length >= maxUnanswered * WAITING_FACTOR) {
        socket.destroy();
        return;
      }
      pace.waiting.push({ req, res, address: addressOf(clientAddress(req, trustProxy)) });
      // Called while the parser runs: only starts what may start; the feed loop that called the
      // parser goes on or stops by what is left waiting.
      startWaiting(pace);
    });
  };
}
