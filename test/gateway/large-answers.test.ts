// Large answers leave a slice at a time (gateway/large-answers.ts): on a bare restify server, a
// client that reads nothing leaves the process holding one slice, not the rest of the answer; one
// that reads gets it whole. Then the service: the 217 kB document pipelined between other answers
// arrives whole and in order.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import tls from 'node:tls';
import restify from 'restify';
import { writeEvents } from '../../domain/audit.ts';
import { sendRaw, SLICE_BYTES } from '../../gateway/large-answers.ts';
import { newId } from '../../lib/ids.ts';
import { openApiText } from '../../gateway/openapi.ts';
import { assertSuccess } from '../support/assertions.ts';
import { TestService } from '../support/service.ts';
import { converse } from './helpers.ts';
import { sleep, waitFor } from '../support/wait.ts';

/** Far more than loopback's kernel buffers take for a client that has paused. */
const BODY_BYTES = 48 * 1024 * 1024;

describe('on a bare restify server', () => {
  let server: restify.Server;
  let port: number;
  const accepted: net.Socket[] = [];
  const body = Buffer.alloc(BODY_BYTES, 'x');

  before(async () => {
    server = restify.createServer();
    server.get('/large', (_req, res, next) => {
      sendRaw(res, 200, body, { 'Content-Type': 'text/plain', 'Content-Length': String(body.length) });
      next(false);
    });
    server.server.on('connection', (socket: net.Socket) => accepted.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  });
  after(() => {
    for (const socket of accepted) socket.destroy();
    server.close();
  });

  test('a client that reads nothing leaves one slice waiting in the process, and the rest in the body', async () => {
    const client = net.connect(port, '127.0.0.1', () => client.write('GET /large HTTP/1.1\r\nHost: x\r\n\r\n'));
    client.pause();
    try {
      await waitFor('the answer under way', async () => (accepted.length === 1 && accepted[0]!.writableLength > 0) || undefined);
      // Long enough for the kernel to have taken all it will of a paused client's answer.
      await sleep(500);
      const waiting = accepted[0]!.writableLength;
      assert.ok(waiting > 0 && waiting <= SLICE_BYTES, `${waiting} bytes wait in the process (a slice is ${SLICE_BYTES})`);
    } finally {
      client.destroy();
    }
  });

  test('a client that reads gets the answer whole', async () => {
    const client = net.connect(port, '127.0.0.1', () => client.write('GET /large HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
    const chunks: Buffer[] = [];
    client.on('data', (chunk: Buffer) => chunks.push(chunk));
    await new Promise((resolve) => client.on('close', resolve));
    const text = Buffer.concat(chunks);
    const headEnd = text.indexOf('\r\n\r\n');
    assert.match(text.subarray(0, headEnd).toString('latin1'), new RegExp(`^HTTP/1.1 200 OK\r\n[^]*content-length: ${BODY_BYTES}\r\n`, 'i'));
    assert.equal(text.length - headEnd - 4, BODY_BYTES);
    assert.ok(text.subarray(headEnd + 4).equals(body), 'the body as written');
  });
});

describe('the service', () => {
  let service: TestService;
  before(async () => {
    service = await TestService.start({ jobWorkers: false });
  });
  after(() => service.stop());

  test('the document pipelined between other answers: each whole and in order', async () => {
    const document = Buffer.from(openApiText(), 'utf8');
    assert.ok(document.length > 3 * SLICE_BYTES, `the document (${document.length} bytes) is sliced`);
    const paths = ['/healthz', '/openapi.json', '/healthz', '/openapi.json', '/healthz'];
    const requests = paths.map((path, i) => `GET ${path} HTTP/1.1\r\nHost: localhost\r\n${i === paths.length - 1 ? 'Connection: close\r\n' : ''}\r\n`);
    let rest = Buffer.from((await converse(service, [requests.join('')])).text, 'utf8');
    const answers: Array<{ status: string; body: Buffer }> = [];
    while (rest.length > 0 && answers.length < paths.length) {
      const headEnd = rest.indexOf('\r\n\r\n');
      const head = rest.subarray(0, headEnd).toString('latin1');
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1]);
      answers.push({ status: head.split('\r\n')[0]!, body: rest.subarray(headEnd + 4, headEnd + 4 + length) });
      rest = rest.subarray(headEnd + 4 + length);
    }
    assert.equal(rest.length, 0, 'nothing after the five answers');
    assert.deepEqual(answers.map((a) => a.status), Array(5).fill('HTTP/1.1 200 OK'));
    for (const i of [1, 3]) assert.ok(answers[i]!.body.equals(document), `answer ${i + 1} is the document whole`);
    for (const i of [2, 4]) assert.ok(answers[i]!.body.equals(answers[0]!.body), `answer ${i + 1} is /healthz's`);
  });
});

describe('a large answer left unread', () => {
  let service: TestService;
  before(async () => {
    // Its key runs one request at a time: a place a sliced answer held would stop the next.
    service = await TestService.start({ jobWorkers: false, env: { MAX_REQUESTS_PER_KEY: '1' } });
  });
  after(() => service.stop());

  test('holds no place of its key: the next request of the key is served meanwhile', async () => {
    const p = await service.createProject('Large pages');
    const now = Math.floor(Date.now() / 1000);
    // A page of 100 events of ~2 kB each: an answer of several slices.
    await writeEvents(service.db, Array.from({ length: 100 }, (_, i) => ({
      id: newId('evnt'), project_id: p.projectId, type: 'app.updated', related_table: 'app', related_id: newId('mapp'),
      origin: 'api' as const, actor_id: p.keyId, ip_address: '127.0.0.1',
      details: { changes: { name: { from: `n${i}`, to: `m${i}${'x'.repeat(2000)}` } } }, created_at: now,
    })));
    const page = await service.request('GET', '/v1/event', { key: p.key });
    assertSuccess(page, 200);
    assert.ok(Buffer.byteLength(JSON.stringify(page.body)) > 2 * SLICE_BYTES, 'the page is sliced');
    const socket = tls.connect({ host: '127.0.0.1', port: Number(new URL(service.baseUrl).port), ca: readFileSync(service.config.tlsCertFile!), servername: 'localhost' });
    socket.on('error', () => {});
    try {
      await new Promise((resolve) => socket.once('secureConnect', resolve));
      socket.pause();
      // Many pages, none read: the kernel and then the process hold what it does not take.
      socket.write(`GET /v1/event HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${p.key}\r\n\r\n`.repeat(8));
      await sleep(1000);
      const started = Date.now();
      const current = await service.request('GET', '/v1/key/current', { key: p.key });
      assertSuccess(current, 200);
      assert.ok(Date.now() - started < 2000, `served in ${Date.now() - started} ms`);
    } finally {
      socket.destroy();
    }
  });
});
