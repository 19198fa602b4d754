import { createHash, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'sk-project-';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** 43 base62 characters carry 256 bits of entropy. */
const SECRET_CHARS = 43;
/** Bytes at or above this would bias `% 62`; they are drawn again. */
const UNBIASED_LIMIT = 248;

export function newSecret(): string {
  let out = SECRET_PREFIX;
  while (out.length < SECRET_PREFIX.length + SECRET_CHARS) {
    for (const byte of randomBytes(64)) {
      if (byte < UNBIASED_LIMIT && out.length < SECRET_PREFIX.length + SECRET_CHARS) out += BASE62[byte % 62];
    }
  }
  return out;
}

export function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

export function previewOf(secret: string): string {
  return `sk-project-...${secret.slice(-4)}`;
}
