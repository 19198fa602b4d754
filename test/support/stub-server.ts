// An HTTPS server of a test's own, with the test certificate, answering as the test says: what no
// sound service would send (a proxy's page, a cut body, a 503 after 503), and each request it got.
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

export interface StubRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** Date.now() when it came. */
  at: number;
}

export interface StubServer {
  baseUrl: string;
  requests: StubRequest[];
  /** The requests' paths with their queries, in order. */
  readonly urls: string[];
  close(): Promise<void>;
}

/** `answer` is given each request with its number, from 0. */
export async function stubServer(answer: (req: IncomingMessage, res: ServerResponse, index: number) => void): Promise<StubServer> {
  const requests: StubRequest[] = [];
  const tls = { cert: readFileSync(process.env.TEST_TLS_CERT_FILE!), key: readFileSync(process.env.TEST_TLS_KEY_FILE!) };
  const server = https.createServer(tls, (req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, at: Date.now() });
    answer(req, res, requests.length - 1);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    get urls() { return requests.map((r) => r.url); },
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
