import { randomBytes } from 'node:crypto';

export type IdPrefix =
  | 'papi' | 'cons' | 'proj' | 'mapp' | 'madi' | 'miid' | 'modi' | 'mlyi' | 'file' | 'run' | 'evnt' | 'evty' | 'whep' | 'whda';

const HEX_CHARS = 20;

/** `<prefix>_` and 20 lowercase hex characters from the CSPRNG. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(HEX_CHARS / 2).toString('hex')}`;
}

/** Whether a path parameter can name a record of this kind at all. */
export function isId(prefix: IdPrefix, value: string): boolean {
  return value.length === prefix.length + 1 + HEX_CHARS
    && value.startsWith(`${prefix}_`)
    && /^[0-9a-f]+$/.test(value.slice(prefix.length + 1));
}
