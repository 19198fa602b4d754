// Step 3: a body over the limit is 413, from Content-Length before reading or as soon as a chunked
// body crosses it; otherwise it is kept for step 8. `Expect: 100-continue` is answered here, only
// once the body is to be read.
import type { IncomingMessage, Server } from 'node:http';
import { errors } from '../domain/errors.ts';
import type { Handler } from './types.ts';

export const MAX_BODY_BYTES = 200_000;

const awaitingContinue = new WeakSet<IncomingMessage>();

/** Node answers 100 Continue at once, inviting a body that may be refused unread; deferred to bodyLimit. */
export function continueAtBodyLimit(server: Server): void {
  server.removeAllListeners('checkContinue');
  server.on('checkContinue', (req: IncomingMessage, res) => {
    awaitingContinue.add(req);
    server.emit('request', req, res);
  });
  // Node would answer any other expectation with a bare 417; RFC 9110 lets a server ignore it.
  server.on('checkExpectation', (req: IncomingMessage, res) => {
    server.emit('request', req, res);
  });
}

/** A request that declares no body (no Content-Length, no Transfer-Encoding): nothing is read. */
export function declaresNoBody(req: IncomingMessage): boolean {
  return req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined;
}

export function bodyLimit(maxBytes = MAX_BODY_BYTES): Handler {
  return function readBoundedBody(req, res, next) {
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > maxBytes) return next(errors.bodyTooLarge());
    if (declaresNoBody(req)) {
      req.rawBody = Buffer.alloc(0);
      return next();
    }
    if (awaitingContinue.has(req)) res.writeContinue();
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    /** The body whole (true), the client gone (false), or the body refused. */
    const settle = (result: boolean | Error) => {
      if (settled) return;
      settled = true;
      req.removeListener('data', onData);
      if (result === true) {
        req.rawBody = Buffer.concat(chunks, size);
        next();
      } else {
        next(result);
      }
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        req.pause();
        return settle(errors.bodyTooLarge());
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => settle(true));
    // A client that goes away mid-body gets no answer; there is nobody left to read it.
    req.once('error', () => settle(false));
    req.once('close', () => settle(false));
  };
}
