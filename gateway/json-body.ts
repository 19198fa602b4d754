// Step 8: a POST or PATCH body must be a JSON object; empty counts as {}. Also refused, as nothing
// downstream can hold them: deep nesting (copying it to a thread would overflow the stack) and text
// PostgreSQL cannot store (U+0000, lone surrogates).
import { errors } from '../domain/errors.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true });
/** The deepest body an endpoint takes is 3 levels (data → entry → member); this leaves room. */
export const MAX_JSON_DEPTH = 32;

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
  checkValues(value);
  return value as Record<string, unknown>;
}

const storable = (text: string) => text.isWellFormed() && !text.includes('\u0000');

/** Walks the value without recursion, so its own depth cannot overflow the stack either. */
function checkValues(root: object): void {
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (typeof value === 'string') {
      if (!storable(value)) throw errors.unstorableText();
    } else if (typeof value === 'object' && value !== null) {
      if (depth > MAX_JSON_DEPTH) throw errors.tooDeep();
      for (const [key, member] of Object.entries(value)) {
        if (!storable(key)) throw errors.unstorableText();
        stack.push([member, depth + 1]);
      }
    }
  }
}
