// Secrets the service must use again (a webhook endpoint's signing secret) are kept sealed:
// AES-256-GCM under SEALING_KEY, bound to the row they belong to, so a copy of the database
// alone reveals none and a sealed value moved to another row does not open.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Config } from '../lib/config.ts';
import { readOrMakeOnce } from '../lib/made-once.ts';

const KEY_FILE = 'sealing-key';
const VERSION = 'v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const keys = new WeakMap<Config, Buffer>();

/** SEALING_KEY, else the key made once under DATA_DIR: processes on several hosts need SEALING_KEY. */
export function sealingKeyOf(config: Config): Buffer {
  let key = keys.get(config);
  if (key) return key;
  const text = config.sealingKey ?? readOrMakeOnce(config.dataDir, KEY_FILE, () => `${randomBytes(32).toString('base64')}\n`).trim();
  key = Buffer.from(text, 'base64');
  if (key.length !== 32) throw new Error(`the sealing key under ${config.dataDir} is not 32 bytes`);
  keys.set(config, key);
  return key;
}

/** `v1:` and the base64 of the nonce, the tag and the ciphertext; `boundTo` must match to open it. */
export function seal(key: Buffer, secret: string, boundTo: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(Buffer.from(boundTo, 'utf8'));
  const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return VERSION + Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64');
}

/** The secret, or a throw when the key or the row is not the one it was sealed with. */
export function unseal(key: Buffer, sealed: string, boundTo: string): string {
  if (!sealed.startsWith(VERSION)) throw new Error('not a sealed value');
  const bytes = Buffer.from(sealed.slice(VERSION.length), 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES)).setAAD(Buffer.from(boundTo, 'utf8'));
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
}
