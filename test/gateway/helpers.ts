// The gateway tests' own helpers (not a test file itself): envelope assertions that also demand
// an X-Request-Id, the unknown-path answer, and requests on raw connections.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { assertError as assertEnvelopeError, assertSuccess as assertEnvelopeSuccess, MESSAGES } from '../support/assertions.ts';
import { readReply, type Reply, type TestService } from '../support/service.ts';
import { sleep } from '../support/wait.ts';

/** The shared failure assertion, plus the X-Request-Id header every gateway answer carries. */
export function assertError(reply: Reply, status: number, message: string, what = ''): void {
  assertEnvelopeError(reply, status, message, what);
  assertRequestId(reply, what);
}

/** The gateway's unknown-path answer, whose `code` member is the string "404". */
export function assertGatewayNotFound(reply: Reply, what = ''): void {
  const label = what ? `${what}: ` : '';
  assert.equal(reply.status, 404, `${label}status (body: ${reply.text})`);
  assert.deepEqual(reply.body, { code: '404', title: 'Not Found', response: MESSAGES.gatewayNotFound }, `${label}envelope`);
  assert.equal(typeof reply.body.code, 'string', `${label}code is a string`);
  assertRequestId(reply, what);
}

/** The shared success assertion, plus the X-Request-Id header every gateway answer carries. */
export function assertSuccess(reply: Reply, status: 200 | 201, what = ''): void {
  assertEnvelopeSuccess(reply, status, what);
  assertRequestId(reply, what);
}

export function assertRequestId(reply: Reply, what = ''): string {
  const id = reply.headers['x-request-id'];
  assert.equal(typeof id, 'string', `${what ? `${what}: ` : ''}X-Request-Id header present`);
  assert.ok((id as string).length > 0, 'X-Request-Id is not empty');
  return id as string;
}

export interface RawOptions {
  method: string;
  path: string;
  headers?: Record<string, string | number>;
  /** Writes (part of) the body; the request is ended only if this returns true. */
  write?: (req: http.ClientRequest) => boolean;
  /** Plain HTTP to the redirect listener instead of HTTPS. */
  plain?: boolean;
  timeoutMs?: number;
}

/**
 * One request on a connection of its own, where the test controls how much of the body is sent.
 * Resolves with the reply as soon as the service answers, whether or not the body was finished;
 * rejects when no answer comes within timeoutMs (a service waiting for a body it should not read).
 */
export function rawRequest(service: TestService, options: RawOptions): Promise<Reply> {
  const timeoutMs = options.timeoutMs ?? 5000;
  const url = new URL(options.path, options.plain ? service.httpUrl : service.baseUrl);
  const req = options.plain
    ? http.request(url, { method: options.method, headers: options.headers, agent: false })
    : https.request(url, { method: options.method, headers: options.headers, agent: false, ca: readFileSync(service.config.tlsCertFile!),
      // The certificate names localhost; a test's own Host header must not change what is verified.
      servername: 'localhost' });
  return new Promise<Reply>((resolve, reject) => {
    let answered = false;
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no answer to ${options.method} ${options.path} within ${timeoutMs} ms`));
    }, timeoutMs);
    req.on('response', (res) => {
      answered = true;
      readReply(res).then((reply) => {
        clearTimeout(timer);
        resolve(reply);
        req.destroy();
      }, () => {});
    });
    req.on('error', (err) => {
      // A write cut short after the answer arrived is expected: the service stopped reading.
      if (answered) return;
      clearTimeout(timer);
      reject(err);
    });
    const end = options.write ? options.write(req) : true;
    if (end) req.end();
    else req.flushHeaders();
  });
}

/** A JSON object body of exactly `size` bytes that POST /v1/key accepts (an unknown member pads it). */
export function paddedKeyBody(size: number, name = 'padded'): Buffer {
  const head = `{"name":"${name}","pad":"`;
  const tail = '"}';
  const padding = size - head.length - tail.length;
  assert.ok(padding >= 0);
  const body = Buffer.from(head + 'a'.repeat(padding) + tail);
  assert.equal(body.length, size);
  return body;
}

export interface Conversation {
  text: string;
  /** Milliseconds from the first write until the service closed the connection. */
  closedAfterMs: number;
}

/** Opens a TLS connection, writes `data` (each string one write, `gapMs` apart), reads until the service closes it. */
export function converse(service: TestService, parts: string[], gapMs = 0, timeoutMs = 10_000, localAddress?: string): Promise<Conversation> {
  return new Promise((resolve, reject) => {
    const port = Number(new URL(service.baseUrl).port);
    const tcp = localAddress ? net.connect({ host: '127.0.0.1', port, localAddress }) : undefined;
    tcp?.on('error', () => {});
    const socket = tls.connect({ host: '127.0.0.1', port, socket: tcp, ca: readFileSync(service.config.tlsCertFile!), servername: 'localhost' });
    const chunks: Buffer[] = [];
    let started = 0;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the service kept the connection open past ${timeoutMs} ms; read so far: ${Buffer.concat(chunks).toString()}`));
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text: Buffer.concat(chunks).toString('utf8'), closedAfterMs: Date.now() - started });
    });
    socket.once('secureConnect', async () => {
      started = Date.now();
      for (const part of parts) {
        if (socket.destroyed) return;
        socket.write(part);
        if (gapMs) await sleep(gapMs);
      }
    });
  });
}
