// The request pacer (gateway/pipelining.ts) on bare http and https servers, no service: a client
// that pipelines many requests whose answers fill the connection's outgoing buffer, and reads none
// of them for a while, must not end the process (Node asserts that its held parser is not fed);
// once it reads, every request is answered, in order.
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { test } from 'node:test';
import tls from 'node:tls';
import { requestPacer } from '../../gateway/pipelining.ts';
import { selfSigned } from '../../gateway/tls.ts';
import { sleep, waitFor } from '../support/wait.ts';

const BODY = Buffer.alloc(200_000, 'x');
/** Requests of ~50 bytes: a 512-byte slice holds fewer than the 8 unanswered the pacer allows. */
const REQUEST = `GET / HTTP/1.1\r\nHost: x\r\nUser-Agent: ${'u'.repeat(10)}\r\n\r\n`;
const UNREAD_MS = 1000;

for (const secure of [false, true]) {
  for (const pipelined of [30, 60]) {
    test(`${secure ? 'https' : 'http'}: ${pipelined} pipelined requests answered 200 kB at once, unread for ${UNREAD_MS} ms, then read: no crash, all answered`, async () => {
      const handler = (_req: http.IncomingMessage, res: http.ServerResponse) => {
        res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': BODY.length });
        res.end(BODY);
      };
      const server = secure ? https.createServer(await selfSigned(), handler) : http.createServer(handler);
      requestPacer({ maxUnanswered: 8, maxPerAddress: 16, trustProxy: false })(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as net.AddressInfo;
      const received: Buffer[] = [];
      let bytes = 0;
      const socket: net.Socket = secure
        ? tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false })
        : net.connect(port, '127.0.0.1');
      try {
        await new Promise((resolve, reject) => {
          socket.once(secure ? 'secureConnect' : 'connect', resolve);
          socket.once('error', reject);
        });
        socket.pause();
        socket.write(REQUEST.repeat(pipelined));
        await sleep(UNREAD_MS);
        assert.ok(!socket.destroyed, 'the connection is open while its client reads nothing');
        socket.on('data', (chunk: Buffer) => {
          received.push(chunk);
          bytes += chunk.length;
        });
        socket.resume();
        const head = 'HTTP/1.1 200 OK\r\n';
        await waitFor(() => `${pipelined} answers of ${BODY.length} bytes each (${bytes} bytes read)`,
          async () => (bytes >= pipelined * BODY.length ? true : undefined), 15_000, 20);
        await sleep(50);
        const text = Buffer.concat(received).toString('latin1');
        assert.equal(text.split(head).length - 1, pipelined, 'one 200 per request, none more');
      } finally {
        socket.destroy();
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    });
  }
}
