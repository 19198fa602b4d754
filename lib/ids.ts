import { randomBytes } from 'node:crypto';

export type IdPrefix =
  | 'papi' | 'cons' | 'proj' | 'mapp' | 'madi' | 'miid' | 'modi' | 'mlyi' | 'file' | 'run' | 'evnt' | 'evty' | 'whep' | 'whda';

const HEX_CHARS = 20;

/** `<prefix>_` and 20 lowercase hex characters from the CSPRNG. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(HEX_CHARS / 2).toString('hex')}`;
}

/** `count` ids as newId makes them, from one read of the CSPRNG (a batch of results' ids). */
export function newIds(prefix: IdPrefix, count: number): string[] {
  const hex = randomBytes((count * HEX_CHARS) / 2).toString('hex');
  return Array.from({ length: count }, (_, i) => `${prefix}_${hex.slice(i * HEX_CHARS, (i + 1) * HEX_CHARS)}`);
}

/** Whether a path parameter can name a record of this kind at all. */
export function isId(prefix: IdPrefix, value: string): boolean {
  return value.length === prefix.length + 1 + HEX_CHARS
    && value.startsWith(`${prefix}_`)
    && /^[0-9a-f]+$/.test(value.slice(prefix.length + 1));
}
