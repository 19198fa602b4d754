// Large answers leave a slice at a time, each once the kernel has taken the one before. Written
// whole, an answer is encrypted whole into its TLS socket's buffer, so a client that reads none of
// it holds all of it in the process (about 250 kB for /openapi.json); a slice holds 64 kB, and the
// rest waits in the body, which for the document is one buffer shared by every answer.
import type { Response } from 'restify';
import { releaseAddress } from './pipelining.ts';
import { releaseTurn } from './turns.ts';

export const SLICE_BYTES = 64 * 1024;

/** What res.sendRaw does, a body larger than a slice written a slice at a time. */
export function sendRaw(res: Response, status: number, body: string | Buffer, headers: Readonly<Record<string, string>>): void {
  // A string's bytes are at most three per character: a short one is never large.
  if (body.length <= SLICE_BYTES / 3 || res.req.method === 'HEAD') {
    res.sendRaw(status, body, headers);
    return;
  }
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  if (bytes.length <= SLICE_BYTES) {
    res.sendRaw(status, bytes, headers);
    return;
  }
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.writeHead(status);
  // Answered: what is left only waits for its client, and holds no place of its address or key.
  releaseAddress(res);
  releaseTurn(res);
  writeFrom(res, bytes, 0);
}

function writeFrom(res: Response, body: Buffer, offset: number): void {
  const end = offset + SLICE_BYTES;
  if (end >= body.length) {
    res.end(body.subarray(offset));
    return;
  }
  res.write(body.subarray(offset, end), (err) => {
    if (!err && !res.destroyed) writeFrom(res, body, end);
  });
}
