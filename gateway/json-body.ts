// Step 8: a POST or PATCH body must be a JSON object; an empty one counts as {}.
import { errors } from '../domain/errors.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The parsed object; a body that is not a JSON object throws 400 `Invalid JSON.` */
export function parseJsonObject(raw: Buffer | undefined): Record<string, unknown> {
  if (!raw || raw.length === 0) return {};
  let value: unknown;
  try {
    const text = utf8.decode(raw);
    if (text.trim() === '') return {};
    value = JSON.parse(text);
  } catch {
    throw errors.invalidJson();
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw errors.invalidJson();
  return value as Record<string, unknown>;
}
