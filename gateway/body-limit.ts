// Step 3: a body over the limit is 413, from Content-Length before reading a byte, or the moment
// a chunked body crosses the limit while streaming. Within the limit the body is kept for step 8.
import { errors } from '../domain/errors.ts';
import { sendError } from './envelope.ts';
import type { Handler } from './types.ts';

export const MAX_BODY_BYTES = 200_000;

export function bodyLimit(maxBytes = MAX_BODY_BYTES): Handler {
  return function readBoundedBody(req, res, next) {
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > maxBytes) {
      sendError(res, errors.bodyTooLarge());
      return next(false);
    }
    if (declared === undefined && req.headers['transfer-encoding'] === undefined) {
      req.rawBody = Buffer.alloc(0);
      return next();
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (ok: boolean) => {
      if (settled) return;
      settled = true;
      req.removeListener('data', onData);
      if (ok) {
        req.rawBody = Buffer.concat(chunks, size);
        next();
      } else {
        next(false);
      }
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        sendError(res, errors.bodyTooLarge());
        req.pause();
        return settle(false);
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
