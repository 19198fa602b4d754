// What the service needs of pg beneath its documented API, behind names of its own: the socket a
// connection runs on, and whether a query is in flight on it. lib/pool.ts bounds a silent server
// and cuts a stuck lane with them. test/database/pg-internals.test.ts fails, naming this file, on
// a pg that no longer gives either.
import { Socket } from 'node:net';
import pg from 'pg';
import { DatabaseSocket } from './database-sockets.ts';

/**
 * A Client on a socket made here and handed to pg through its `stream` option (typed, though not
 * on pg's documentation site), so that nothing reads pg's own `connection.stream`.
 */
export class SocketClient extends pg.Client {
  readonly #made: { socket?: Socket };

  /** `makeSocket`: a DatabaseSocket unless the connection must outlive a silence (lib/database-sockets.ts). */
  constructor(config?: pg.ClientConfig, makeSocket: () => Socket = () => new DatabaseSocket(config?.connectionString ?? '')) {
    const made: { socket?: Socket } = {};
    super({ ...config, stream: () => (made.socket = makeSocket()) });
    this.#made = made;
  }

  get socket(): Socket | undefined {
    return this.#made.socket;
  }
}

/** A SocketClient that sends each statement at once, behind those still in flight (lib/lanes.ts). */
export class PipeliningClient extends SocketClient {
  constructor(config?: pg.ClientConfig) {
    super({ ...config, pipeline: true });
  }
}

/** The socket `client` connects on: a SocketClient's, once pg has asked for it. */
export function socketOf(client: pg.ClientBase): Socket {
  const socket = client instanceof SocketClient ? client.socket : undefined;
  if (!socket) throw new Error('pg never took the socket lib/pg-internals.ts made for this client (ClientConfig.stream)');
  return socket;
}

/**
 * Whether `client` has a query sent and not yet answered. pg says so only in a field of its own,
 * `readyForQuery`: its one public reading, Client#activeQuery, is deprecated and goes in pg 9.
 */
export function queryInFlight(client: pg.ClientBase): boolean {
  return !(client as unknown as { readyForQuery: boolean }).readyForQuery;
}
