// Key secrets: `sk-project-`, 43 random base62 characters (256 bits), then a base62 CRC32 of them,
// so a malformed value is refused without a lookup and scanners can tell real secrets. Secrets
// without the checksum (older ones) keep working.
import { hash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

export const SECRET_PREFIX = 'sk-project-';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** 43 base62 characters carry 256 bits of entropy. */
const RANDOM_CHARS = 43;
/** 62^6 > 2^32: any CRC32 fits. */
const CHECKSUM_CHARS = 6;
/** Bytes at or above this would bias `% 62`; they are drawn again. */
const UNBIASED_LIMIT = 248;
const LEGACY_SHAPE = /^sk-project-[0-9A-Za-z]{43}$/;
const CHECKSUMMED_SHAPE = /^sk-project-([0-9A-Za-z]{43})([0-9A-Za-z]{6})$/;

function checksumOf(random: string): string {
  let value = crc32(random);
  let out = '';
  for (let i = 0; i < CHECKSUM_CHARS; i++) {
    out = BASE62[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}

export function newSecret(): string {
  let random = '';
  while (random.length < RANDOM_CHARS) {
    for (const byte of randomBytes(64)) {
      if (byte < UNBIASED_LIMIT && random.length < RANDOM_CHARS) random += BASE62[byte % 62];
    }
  }
  return `${SECRET_PREFIX}${random}${checksumOf(random)}`;
}

/** What looks like a secret inside a text bound for a log (one a client sent by mistake in a path or a header). */
const SECRET_IN_TEXT = /sk-project-[0-9A-Za-z]+/g;

/** The text with anything of a secret's shape hidden. */
export function withoutSecrets(text: string): string {
  return text.replace(SECRET_IN_TEXT, `${SECRET_PREFIX}[redacted]`);
}

/**
 * A request's path as logged, any secret hidden, percent-encoded or not (the router decodes it).
 * Only ASCII escapes are decoded, which finds a secret even among non-UTF-8 escapes.
 */
export function loggablePath(path: string): string {
  const decoded = path.includes('%') ? path.replace(/%([0-7][0-9A-Fa-f])/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))) : path;
  const hidden = withoutSecrets(decoded);
  return hidden === decoded ? path : hidden;
}

/** Whether the text holds anything of a secret's shape. */
export function holdsSecret(text: string): boolean {
  return withoutSecrets(text) !== text;
}

/** Whether a bearer value can be a secret (a valid checksum, or the older shape), before any lookup. */
export function couldBeSecret(value: string): boolean {
  if (LEGACY_SHAPE.test(value)) return true;
  const parts = CHECKSUMMED_SHAPE.exec(value);
  return parts !== null && checksumOf(parts[1]!) === parts[2];
}

/** One-shot, without a Hash object per call: every request hashes its bearer (UTF-8). */
export function hashSecret(secret: string): Buffer {
  return hash('sha256', secret, 'buffer');
}

export function previewOf(secret: string): string {
  return `sk-project-...${secret.slice(-4)}`;
}
