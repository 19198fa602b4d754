// Key secrets: `sk-project-`, 43 random base62 characters (256 bits), the key's project id in 14
// base62 characters (so its lookup goes to one shard: docs/citus.md), then a base62 CRC32 of them,
// so a malformed value is refused without a lookup and scanners can tell real secrets. Older
// secrets (no project; no checksum) keep working.
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
const ROUTED_SHAPE = /^sk-project-([0-9A-Za-z]{43}([0-9A-Za-z]{14}))([0-9A-Za-z]{6})$/;
/** A project id's 20 hex digits (80 bits) fit 14 base62 characters (62^14 > 2^80). */
const PROJECT_CHARS = 14;
const PROJECT_ID = /^proj_([0-9a-f]{20})$/;
const PROJECT_LIMIT = 1n << 80n;

function projectPart(projectId: string): string | undefined {
  const hex = PROJECT_ID.exec(projectId)?.[1];
  if (hex === undefined) return undefined;
  let value = BigInt(`0x${hex}`);
  let out = '';
  for (let i = 0; i < PROJECT_CHARS; i++) {
    out = BASE62[Number(value % 62n)] + out;
    value /= 62n;
  }
  return out;
}

function projectOf(part: string): string | undefined {
  let value = 0n;
  for (const c of part) value = value * 62n + BigInt(BASE62.indexOf(c));
  return value < PROJECT_LIMIT ? `proj_${value.toString(16).padStart(20, '0')}` : undefined;
}

function checksumOf(random: string): string {
  let value = crc32(random);
  let out = '';
  for (let i = 0; i < CHECKSUM_CHARS; i++) {
    out = BASE62[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}

/** A new secret of the project's key; without the project's part when its id is not one the service makes. */
export function newSecret(projectId: string): string {
  let random = '';
  while (random.length < RANDOM_CHARS) {
    for (const byte of randomBytes(64)) {
      if (byte < UNBIASED_LIMIT && random.length < RANDOM_CHARS) random += BASE62[byte % 62];
    }
  }
  const body = random + (projectPart(projectId) ?? '');
  return `${SECRET_PREFIX}${body}${checksumOf(body)}`;
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
  return secretProject(value) !== undefined;
}

/**
 * Before any lookup: the project a bearer value's secret names, null for a secret of an older
 * shape (which names none), undefined for a value no secret can be (its shape, its checksum).
 */
export function secretProject(value: string): string | null | undefined {
  const routed = ROUTED_SHAPE.exec(value);
  if (routed !== null) return checksumOf(routed[1]!) === routed[3] ? projectOf(routed[2]!) : undefined;
  if (LEGACY_SHAPE.test(value)) return null;
  const parts = CHECKSUMMED_SHAPE.exec(value);
  return parts !== null && checksumOf(parts[1]!) === parts[2] ? null : undefined;
}

/** One-shot, without a Hash object per call: every request hashes its bearer (UTF-8). */
export function hashSecret(secret: string): Buffer {
  return hash('sha256', secret, 'buffer');
}

export function previewOf(secret: string): string {
  return `sk-project-...${secret.slice(-4)}`;
}
