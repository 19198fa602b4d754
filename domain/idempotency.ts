// Idempotent retries: the first answer to a request sent with an Idempotency-Key is kept, sealed,
// in the same transaction as its change, so a retry gets that answer and never a second change.
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type pg from 'pg';
import { requestJob } from '../lib/jobs.ts';
import { openTransaction, queryFile, type Database } from '../lib/pool.ts';
import { ApiError, errors } from './errors.ts';
import { DRAIN_QUEUE } from './jobs.ts';
import { KeyRefusal } from './key-check.ts';
import { seal, sealingKeyOf, unseal } from './sealing.ts';
import { responseJson, type DomainRequest, type DomainResult, type Idempotency } from './requests.ts';
import type { Services } from './services.ts';

export const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(['POST', 'PATCH', 'DELETE']);
const VISIBLE_ASCII = /^[\x21-\x7e]{1,255}$/;

/** The header's value checked; a request without it is undefined, one with a bad value 'invalid' (a 400 at step 10). */
export function idempotencyOf(header: string | string[] | undefined, method: string, pathAndQuery: string, body: unknown): Idempotency | 'invalid' | undefined {
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !VISIBLE_ASCII.test(header)) return 'invalid';
  const fingerprint = createHash('sha256').update(`${method}\n${pathAndQuery}\n${canonicalize(body) ?? 'null'}`, 'utf8').digest('hex');
  return { key: header, fingerprint };
}

export type IdempotentResult = DomainResult & { replayed?: true };

/**
 * An answer kept for a retry: the work's own (step 11 on), not a refusal of the key, a plan's
 * (an earlier step of the order of checks) or the service's failure, which a retry runs afresh.
 */
function kept(err: unknown): err is ApiError {
  return err instanceof ApiError && !(err instanceof KeyRefusal) && err.status < 500 && err.status !== 402;
}

/**
 * Runs `work` for a request with an Idempotency-Key. On one connection: the key and value's lock
 * (taken: 409), the kept answer (replayed, or 422 for another request), else the work and its
 * answer in one transaction. The work is given that transaction as its database.
 */
export async function answerIdempotently(
  services: Services, request: DomainRequest & { idempotency: Idempotency }, work: (db: Database) => Promise<DomainResult>,
): Promise<IdempotentResult> {
  const { idempotency } = request;
  const sealingKey = sealingKeyOf(services.config);
  const keyId = request.caller.id;
  // Also what a kept answer is sealed to: moved to another key's row, it does not open.
  const lockName = `${keyId}\n${idempotency.key}`;
  const client = await services.pool.connect();
  let broken: Error | undefined;
  try {
    const [{ locked }] = await queryFile<{ locked: boolean }>(client, 'idempotent_lock', [lockName]) as [{ locked: boolean }];
    if (!locked) throw errors.idempotencyInProgress();
    try {
      const [found] = await queryFile<{ fingerprint: string; status: number; sealed_response: string }>(client, 'idempotent_find', [keyId, idempotency.key]);
      if (found) {
        if (found.fingerprint !== idempotency.fingerprint) throw errors.idempotencyMismatch();
        return { status: found.status, response: undefined, json: unseal(sealingKey, found.sealed_response, lockName), replayed: true };
      }
      const keep = (db: pg.PoolClient, result: DomainResult) => queryFile(db, 'idempotent_keep', [
        keyId, idempotency.key, idempotency.fingerprint, result.status, seal(sealingKey, responseJson(result) ?? 'null', lockName),
      ]);
      await client.query('BEGIN');
      let result: DomainResult;
      try {
        result = await work(openTransaction(client));
      } catch (err) {
        await client.query('ROLLBACK');
        // Nothing changed: the answer is kept on its own.
        if (kept(err)) await keep(client, { status: err.status, response: err.message });
        throw err;
      }
      if (result.status >= 500) {
        await client.query('ROLLBACK');
        return result;
      }
      await keep(client, result);
      await client.query('COMMIT');
      // The change's event waits in the outbox; the drain asked for inside the transaction may have come early.
      requestJob(services.pool, services.boss, DRAIN_QUEUE);
      return result;
    } finally {
      await queryFile(client, 'idempotent_unlock', [lockName]);
    }
  } catch (err) {
    if (!(err instanceof ApiError)) broken = err as Error;
    throw err;
  } finally {
    client.release(broken);
  }
}

/** Kept answers older than 24 hours, deleted (the purge job). */
export async function purgeIdempotentRequests(pool: pg.Pool): Promise<number> {
  const [row] = await queryFile<{ purged: number }>(pool, 'idempotent_purge');
  return row?.purged ?? 0;
}
