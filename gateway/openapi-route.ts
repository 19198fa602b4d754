// GET /openapi.json: the document itself, not in the envelope, so tools read it as it is.
import { openApiText } from './openapi.ts';
import type { Handler } from './types.ts';

export function serveOpenApi(): Handler {
  const text = openApiText();
  const headers = { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(Buffer.byteLength(text)) };
  return function openApi(_req, res, next) {
    res.sendRaw(200, text, headers);
    next(false);
  };
}
