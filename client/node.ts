// The client for Node with a certificate of its own to trust (the self-signed one `npm start`
// makes), which the global fetch cannot be given: index.ts's Client sending over node:https, its
// connections kept alive until close(). Everything else is index.ts's, exported as it is.
import https from 'node:https';
import { Readable } from 'node:stream';
import { Client as FetchClient, type ClientOptions as FetchClientOptions, type Fetch } from './index.ts';

export * from './index.ts';

export interface ClientOptions extends Omit<FetchClientOptions, 'fetch'> {
  /** PEM of a certificate to trust, e.g. the self-signed .data/tls/cert.pem of `npm start`. */
  ca?: string | Uint8Array;
  /** false accepts any certificate (a test server); prefer `ca`. */
  rejectUnauthorized?: boolean;
}

/** fetch's part that the client uses, over node:https. */
function overHttps(agent: https.Agent): Fetch {
  return (url, init) => new Promise((resolve, reject) => {
    const headers = init.body === undefined ? init.headers : { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) };
    const req = https.request(url, { method: init.method, headers, agent, signal: init.signal }, (res) => resolve({
      status: res.statusCode ?? 0,
      statusText: res.statusMessage ?? '',
      headers: {
        get: (name) => {
          const value = res.headers[name.toLowerCase()];
          return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
        },
      },
      body: Readable.toWeb(res) as ReadableStream<Uint8Array>,
    }));
    req.on('error', reject);
    req.end(init.body);
  });
}

export class Client extends FetchClient {
  private readonly agent: https.Agent;

  constructor({ ca, rejectUnauthorized, ...options }: ClientOptions) {
    const agent = new https.Agent({
      keepAlive: true,
      ...(ca === undefined ? {} : { ca: typeof ca === 'string' ? ca : Buffer.from(ca) }),
      ...(rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
    });
    super({ ...options, fetch: overHttps(agent) });
    this.agent = agent;
  }

  /** Ends the requests and streams in flight and closes the kept-alive connections. */
  override close(): void {
    super.close();
    this.agent.destroy();
  }
}
