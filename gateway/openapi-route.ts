// GET /openapi.json: the document itself, not in the envelope, so tools read it as it is.
import { openApiText } from './openapi.ts';
import type { Handler } from './types.ts';
import { sendRaw } from './large-answers.ts';

export function serveOpenApi(): Handler {
  // Bytes encoded once: a string would be encoded, and copied in the heap, for every answer.
  const bytes = Buffer.from(openApiText(), 'utf8');
  const headers = { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(bytes.length) };
  return function openApi(_req, res, next) {
    sendRaw(res, 200, bytes, headers);
    next(false);
  };
}
