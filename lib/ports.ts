// The listeners' ports, checked before anything else starts: a taken port is one line naming the
// variable that moves it, not an EADDRINUSE stack after half the service has started.
import { createServer, type Server } from 'node:net';
import type { Config } from './config.ts';
import { StartupError } from './startup-error.ts';

/** Why a listener could not bind, in words the person starting the process can act on. */
export function listenFailure(err: unknown, host: string, port: number, variable: string): unknown {
  switch ((err as { code?: string }).code) {
    case 'EADDRINUSE':
      return new StartupError(`port ${port} is already in use; set ${variable} to another port.`);
    case 'EACCES':
      return new StartupError(`port ${port} may not be bound by this user; set ${variable} to a port above 1023.`);
    case 'EADDRNOTAVAIL':
      return new StartupError(`${host} is not an address of this machine; set HOST to one of its addresses.`);
    default:
      return err;
  }
}

function bind(host: string, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ port, host, exclusive: true }, () => resolve(server));
  });
}

/** Binds both ports at once for a moment (catching the two set equal); port 0 is not checked. */
export async function checkListenPorts(config: Config): Promise<void> {
  const held: Server[] = [];
  try {
    for (const [port, variable] of [[config.httpsPort, 'PORT'], [config.httpPort, 'HTTP_PORT']] as const) {
      if (port === 0) continue;
      try {
        held.push(await bind(config.host, port));
      } catch (err) {
        throw listenFailure(err, config.host, port, variable);
      }
    }
  } finally {
    await Promise.all(held.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}
