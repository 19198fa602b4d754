// Bounds on open connections over both listeners, in total and per address: a connection past
// them is destroyed on accept, before TLS or HTTP spend anything on it.
import type { Server, Socket } from 'node:net';
import type { Logger } from '../lib/log.ts';

export interface ConnectionBoundsOptions {
  maxConnections: number;
  /** 0: no per-address bound (behind a proxy every connection comes from the proxy). */
  maxConnectionsPerAddress: number;
}

/** Refusals are logged as one line per interval with their count, not a line each under a flood. */
const REFUSAL_LOG_INTERVAL_MS = 10_000;

export function boundConnections(servers: Server[], options: ConnectionBoundsOptions, log: Logger): void {
  let open = 0;
  const perAddress = new Map<string, number>();
  let refused = 0;
  let refusalLogTimer: NodeJS.Timeout | undefined;

  function noteRefusal(): void {
    refused++;
    refusalLogTimer ??= setTimeout(() => {
      log.warn({ refused, open, ...options }, 'connections refused past their bounds');
      refused = 0;
      refusalLogTimer = undefined;
    }, REFUSAL_LOG_INTERVAL_MS).unref();
  }

  function admit(socket: Socket): void {
    const address = socket.remoteAddress ?? '';
    const fromAddress = perAddress.get(address) ?? 0;
    if (open >= options.maxConnections
      || (options.maxConnectionsPerAddress > 0 && fromAddress >= options.maxConnectionsPerAddress)) {
      noteRefusal();
      socket.destroy();
      return;
    }
    open++;
    perAddress.set(address, fromAddress + 1);
    socket.once('close', () => {
      open--;
      const left = perAddress.get(address)! - 1;
      if (left === 0) perAddress.delete(address);
      else perAddress.set(address, left);
    });
  }

  // Ahead of TLS's own listener, so a refused socket never starts a handshake.
  for (const server of servers) server.prependListener('connection', admit);
}
