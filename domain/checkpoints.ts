// Signed checkpoints of each project's chain head: an Ed25519 signature by a key the database does
// not hold, so a checkpoint kept outside proves the events up to it were not rewritten since.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import type pg from 'pg';
import type { Config } from '../lib/config.ts';
import { readOrMakeOnce } from '../lib/made-once.ts';
import { queryFile, type Database } from '../lib/pool.ts';
import { StartupError } from '../lib/startup-error.ts';
import { errors } from './errors.ts';
import { ok, type DomainRequest } from './requests.ts';

export interface Checkpoint {
  object: 'checkpoint';
  project: string;
  sequence: number;
  hash: string;
  created_at: number;
  key_id: string;
  signature: string;
}

export interface SigningKey {
  id: string;
  algorithm: 'ed25519';
  public_key: string;
  created_at: number;
}

export interface Signer {
  keyId: string;
  publicKey: string;
  privateKey: KeyObject;
}

interface CheckpointRow {
  project_id: string;
  sequence: string | number;
  hash: string;
  created_at: string | number;
  key_id: string;
  signature: string;
}

/** Heads signed per statement when many projects are due at once. */
const CHECKPOINT_BATCH = 500;
const KEY_FILE = 'audit-signing-key.pem';

/** The bytes a checkpoint's signature covers. */
export function checkpointText(c: Pick<Checkpoint, 'project' | 'sequence' | 'hash' | 'created_at'>): string {
  return `pms-audit-checkpoint/v1\n${c.project}\n${c.sequence}\n${c.hash}\n${c.created_at}\n`;
}

function rawPublicKey(key: KeyObject): Buffer {
  return Buffer.from(key.export({ format: 'jwk' }).x!, 'base64url');
}

/**
 * AUDIT_SIGNING_KEY (PKCS#8 PEM), else the key made once under DATA_DIR. Made with O_EXCL, so two
 * processes starting together on one host keep the same key.
 */
export function loadSigner(config: Config): Signer {
  const pem = config.auditSigningKey
    ?? readOrMakeOnce(config.dataDir, KEY_FILE, () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    throw new StartupError('AUDIT_SIGNING_KEY must be an Ed25519 private key in PKCS#8 PEM.');
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new StartupError('AUDIT_SIGNING_KEY must be an Ed25519 private key in PKCS#8 PEM.');
  const raw = rawPublicKey(createPublicKey(privateKey));
  return { keyId: createHash('sha256').update(raw).digest('hex'), publicKey: raw.toString('base64'), privateKey };
}

/** Records the signer's public key, so /.well-known/audit-keys.json lists it before it signs. */
export async function registerSigner(pool: pg.Pool, signer: Signer): Promise<void> {
  await queryFile(pool, 'signing_key_register', [signer.keyId, signer.publicKey, Math.floor(Date.now() / 1000)]);
}

/** Signs the head of every project due a checkpoint; returns how many were made. */
export async function makeCheckpoints(pool: pg.Pool, signer: Signer, intervalSeconds: number): Promise<number> {
  let made = 0;
  for (;;) {
    const now = Math.floor(Date.now() / 1000);
    const due = await queryFile<{ project_id: string; sequence: string; hash: string }>(pool, 'checkpoint_due', [intervalSeconds, now, CHECKPOINT_BATCH]);
    if (due.length === 0) return made;
    const signatures = due.map((head) => sign(null, Buffer.from(checkpointText({
      project: head.project_id, sequence: Number(head.sequence), hash: head.hash, created_at: now,
    }), 'utf8'), signer.privateKey).toString('base64'));
    await queryFile(pool, 'checkpoint_insert', [
      due.map((head) => head.project_id), due.map((head) => head.sequence), due.map((head) => head.hash),
      due.map(() => now), due.map(() => signer.keyId), signatures,
    ]);
    made += due.length;
    if (due.length < CHECKPOINT_BATCH) return made;
  }
}

/** Whether some project's head is due a checkpoint (the worker's sweep). */
export async function checkpointsDue(pool: pg.Pool, intervalSeconds: number): Promise<boolean> {
  const due = await queryFile(pool, 'checkpoint_due', [intervalSeconds, Math.floor(Date.now() / 1000), 1]);
  return due.length > 0;
}

function checkpointView(row: CheckpointRow): Checkpoint {
  return {
    object: 'checkpoint', project: row.project_id, sequence: Number(row.sequence), hash: row.hash,
    created_at: Number(row.created_at), key_id: row.key_id, signature: row.signature,
  };
}

const POSITIVE = /^[1-9]\d{0,15}$/;

/** GET /v1/event/checkpoint: the latest, or the one made at exactly `?sequence=n`. */
export async function getCheckpoint(db: Database, req: DomainRequest) {
  const asked = req.query.sequence;
  if (asked !== undefined && (typeof asked !== 'string' || !POSITIVE.test(asked))) throw errors.checkpointSequence();
  const [row] = await queryFile<CheckpointRow>(db, 'checkpoint_find', [req.caller.project_id, asked ?? null]);
  if (!row) throw errors.checkpointNotFound();
  return ok(checkpointView(row));
}

export async function latestCheckpoint(pool: pg.Pool, projectId: string): Promise<Checkpoint | undefined> {
  const [row] = await queryFile<CheckpointRow>(pool, 'checkpoint_find', [projectId, null]);
  return row && checkpointView(row);
}

/** Every key the service has signed with: GET /.well-known/audit-keys.json. */
export async function signingKeys(pool: Database): Promise<{ keys: SigningKey[] }> {
  const rows = await queryFile<{ id: string; public_key: string; created_at: string }>(pool, 'signing_keys', []);
  return { keys: rows.map((row) => ({ id: row.id, algorithm: 'ed25519', public_key: row.public_key, created_at: Number(row.created_at) })) };
}

/** Whether `signature` is the checkpoint's, under a raw Ed25519 public key given in base64. */
export function checkpointSigned(checkpoint: Checkpoint, publicKeyBase64: string): boolean {
  const raw = Buffer.from(publicKeyBase64, 'base64');
  if (raw.length !== 32) return false;
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
  return verify(null, Buffer.from(checkpointText(checkpoint), 'utf8'), key, Buffer.from(checkpoint.signature, 'base64'));
}

export async function signingKeyOf(pool: pg.Pool, keyId: string): Promise<string | undefined> {
  const [row] = await queryFile<{ public_key: string }>(pool, 'signing_key_find', [keyId]);
  return row?.public_key;
}

export type CheckpointVerdict = { checkpoint: number | null; reason?: undefined } | { checkpoint: number; reason: string };

/**
 * The project's latest checkpoint against its key and its chain: the signature under the key it
 * names, and the hash it signed against the stored event at its sequence.
 */
export async function verifyLatestCheckpoint(pool: pg.Pool, projectId: string): Promise<CheckpointVerdict> {
  const checkpoint = await latestCheckpoint(pool, projectId);
  if (!checkpoint) return { checkpoint: null };
  const publicKey = await signingKeyOf(pool, checkpoint.key_id);
  if (!publicKey) return { checkpoint: checkpoint.sequence, reason: `the key ${checkpoint.key_id} that signed it is not among the service's keys` };
  if (!checkpointSigned(checkpoint, publicKey)) return { checkpoint: checkpoint.sequence, reason: 'its signature does not verify' };
  const [event] = await queryFile<{ hash: string | null }>(pool, 'event_chain_page', [projectId, checkpoint.sequence - 1, 1]);
  if (event?.hash !== checkpoint.hash) return { checkpoint: checkpoint.sequence, reason: 'the event at its sequence does not have the hash it signed' };
  return { checkpoint: checkpoint.sequence };
}
