// Each database's connections in this thread, cut when its host goes silent and refused while it
// is (lib/database-watch.ts decides; pool threads hear it on a BroadcastChannel). A database is
// named by its connection string: one process may reach several (tests do).
import { Socket } from 'node:net';
import { BroadcastChannel, isMainThread } from 'node:worker_threads';

export const CHANNEL = 'pms-database-watch';

/** What the watch tells the pool threads. */
export interface SilenceMessage {
  database: string;
  silent: boolean;
}

interface Target {
  sockets: Set<Socket>;
  silent: boolean;
}

const targets = new Map<string, Target>();
let following = false;

function targetOf(database: string): Target {
  let target = targets.get(database);
  if (!target) targets.set(database, (target = { sockets: new Set(), silent: false }));
  return target;
}

/** What a connection meets while its host is silent: isDatabaseUnavailable reads it as 503. */
export class DatabaseSilent extends Error {
  readonly code = 'EHOSTUNREACH';
  constructor() {
    super('the database host is silent (lib/database-watch.ts)');
  }
}

/** The socket of every connection the pools make: cut when its host goes silent, refused while it is. */
export class DatabaseSocket extends Socket {
  readonly #target: Target;

  constructor(database: string) {
    super();
    const target = (this.#target = targetOf(database));
    target.sockets.add(this);
    this.once('close', () => target.sockets.delete(this));
  }

  override connect(...args: unknown[]): this {
    (Socket.prototype.connect as (...a: unknown[]) => this).apply(this, args);
    // Destroyed after connect() began: a socket destroyed before it would be revived by it.
    if (this.#target.silent) this.destroy(new DatabaseSilent());
    return this;
  }
}

export function setSilent({ database, silent }: SilenceMessage): void {
  const target = targetOf(database);
  target.silent = silent;
  if (silent) for (const socket of target.sockets) socket.destroy(new DatabaseSilent());
}

/** A pool thread obeys the gateway thread's watch; every pool calls this, the first call counts. */
export function followDatabaseWatch(): void {
  if (isMainThread || following) return;
  following = true;
  const channel = new BroadcastChannel(CHANNEL);
  channel.onmessage = (message) => setSilent((message as { data: SilenceMessage }).data);
  channel.unref();
}

export const isSilent = (database: string): boolean => targetOf(database).silent;
export const databaseSockets = (database: string): ReadonlySet<Socket> => targetOf(database).sockets;
