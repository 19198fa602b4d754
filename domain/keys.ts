// The keys resource: list, read, current, create, revoke.
import { isId, newId } from '../lib/ids.ts';
import { queryFile, type Database } from '../lib/pool.ts';
import { composeQuery, parameterValues, type NumberedSql } from '../lib/sql-files.ts';
import { SQLSTATE } from '../lib/sqlstate.ts';
import { recordEvent } from './audit.ts';
import { KeyCheckedDatabase } from './key-check.ts';
import { errors } from './errors.ts';
import { holdsScope, isKnownScope } from './scopes.ts';
import { hashSecret, newSecret, previewOf } from './secrets.ts';
import { parseRateLimit, type RateLimit } from './rate-limit.ts';
import { apiActor, ok, pageOf, paging, type CallerKey, type DomainRequest } from './requests.ts';
import { SYSTEM_ACTOR, type Actor } from './actor.ts';
import { change, changeByStatement, type Services, type Tx } from './services.ts';
import { KEY_NAME, requiredText } from './text-fields.ts';

/** The latest `expires_at` a key takes: 9999-12-31T23:59:59Z. */
export const LATEST_UNIX_SECONDS = 253_402_300_799;

/** A key as api_key_view reads it. */
export type KeyRow = Omit<CallerKey, 'project_id'>;

/** The API key object; `secret` only in the response that creates it. */
export function keyView(row: KeyRow, secret?: string) {
  return {
    id: row.id,
    object: 'api_key' as const,
    name: row.name,
    ...(secret === undefined ? {} : { key: secret }),
    key_preview: row.key_preview,
    scope: row.scope,
    status: row.status,
    expires_at: row.expires_at,
    last_used_at: row.last_used_at,
    created_by: row.created_by,
    created_at: row.created_at,
    updated_at: row.updated_at,
    rate_limit: row.rate_limit,
  };
}

/** `current` is reserved in the identifier position for the key making the call. */
export function keyIdParam(req: DomainRequest): string {
  const id = req.params.key_id ?? '';
  return id === 'current' ? req.caller.id : id;
}

/** The caller's own key shows this call as its last use; the stored value is written lazily. */
function asSeenBy(req: DomainRequest): (row: KeyRow) => KeyRow {
  const now = Math.floor(Date.now() / 1000);
  return (row) => (row.id === req.caller.id ? { ...row, last_used_at: Math.max(row.last_used_at ?? 0, now) } : row);
}

export async function listKeys(db: Database, req: DomainRequest) {
  const { limit, offset } = paging(req.query);
  const rows = await queryFile<KeyRow & { total: number }>(db, 'key_list', [req.caller.project_id, limit, offset]);
  const seen = asSeenBy(req);
  return ok(pageOf(rows, (row) => keyView(seen(row))));
}

/** The calling key as stored now: authentication's row, or if known from memory a read that checks it. */
export async function currentKey(db: Database, req: DomainRequest) {
  const seen = asSeenBy(req);
  if (req.keyChecked || !(db instanceof KeyCheckedDatabase)) return ok(keyView(seen(req.caller)));
  return ok(keyView(seen({ ...req.caller, ...(await db.callerNow()) })));
}

export async function getKey(db: Database, req: DomainRequest) {
  const id = keyIdParam(req);
  if (!isId('papi', id)) throw errors.keyNotFound();
  const [row] = await queryFile<KeyRow>(db, 'key_find', [id, req.caller.project_id]);
  if (!row) throw errors.keyNotFound();
  return ok(keyView(asSeenBy(req)(row)));
}

export interface NewKey {
  name: string;
  scope: string[];
  /** Unix seconds, or null for never. */
  expiresAt: number | null;
  /** Absent or null: the project's plan default. */
  rateLimit?: RateLimit | null;
}

/** Validates a creation body in its fixed order; `caller` is the creating key's scope and expiry. */
export function parseNewKey(body: Record<string, unknown>, caller: { scope: readonly string[]; expiresAt: number | null }, nowSeconds: number): NewKey {
  const { scope, expires_at: expiresAt } = body;
  const name = requiredText(body.name, KEY_NAME);

  let scopes: string[] = ['*'];
  if (scope !== undefined && scope !== null) {
    if (!Array.isArray(scope)) throw errors.scopeNotArray();
    for (const entry of scope) if (!isKnownScope(entry)) throw errors.scopeUnknown(entry);
    if (scope.length === 0) throw errors.scopeEmpty();
    scopes = [...new Set(scope as string[])];
  }

  let expires: number | null = null;
  if (expiresAt !== undefined && expiresAt !== null && expiresAt !== 0) {
    if (typeof expiresAt !== 'number' || !Number.isInteger(expiresAt) || expiresAt <= nowSeconds || expiresAt > LATEST_UNIX_SECONDS) {
      throw errors.expiresAt();
    }
    expires = expiresAt;
  }
  const rateLimit = parseRateLimit(body.rate_limit);

  // Refused, never trimmed: every requested scope must be within the caller's own.
  if (!scopes.every((wanted) => holdsScope(caller.scope, wanted))) throw errors.scopeWider();
  // Nor a longer life: a leaked short-lived key could otherwise make itself a lasting one.
  if (caller.expiresAt !== null && (expires === null || expires > caller.expiresAt)) throw errors.outlivesCaller();
  return { name, scope: scopes, expiresAt: expires, rateLimit };
}

/** A new key's id and secret, and what of the secret is stored: every key's, made once here. */
export function mintKey(projectId: string) {
  const secret = newSecret(projectId);
  return { id: newId('papi'), secret, hash: hashSecret(secret), preview: previewOf(secret) };
}

/** A new key's row as key_insert.sql takes it, with its secret; `callerLimit` the making key's. */
function newKeyValues(projectId: string, consumerId: string, input: NewKey, callerLimit: RateLimit | null) {
  const { id, secret, hash, preview } = mintKey(projectId);
  const values = {
    id, project_id: projectId, created_by: consumerId, name: input.name,
    secret_hash: hash, key_preview: preview, scope: input.scope, expires_at: input.expiresAt,
    rate_limit: input.rateLimit ?? null, caller_rate_limit: callerLimit,
  };
  return { secret, values };
}

/** `key.created`'s details. */
const createdDetails = (input: NewKey) => ({ name: input.name, scope: input.scope, expires_at: input.expiresAt });

/** Inserts a key and enqueues `key.created` in a change of several statements (the workspace's). */
export async function insertKey(tx: Tx, actor: Actor, projectId: string, consumerId: string, input: NewKey) {
  const { secret, values } = newKeyValues(projectId, consumerId, input, null);
  // No key to check: the change checked its own in its BEGIN, or no key makes it.
  const [row] = await queryFile<KeyRow>(tx.client, 'key_insert', { ...values, checked_key: null });
  await recordEvent(tx, actor, {
    projectId,
    type: 'key.created',
    related: { table: 'key', id: row!.id },
    details: createdDetails(input),
    at: row!.created_at,
  });
  return { row: row!, secret };
}

/** sql/templates/key_create.sql: key_insert.sql with the check of the caller's key and the hand-off around it. */
let keyCreate: NumberedSql | undefined;

/** The API's key creation: one statement holding the key check and the event. */
export async function createKey(services: Services, req: DomainRequest) {
  const input = parseNewKey(req.body, { scope: req.caller.scope, expiresAt: req.caller.expires_at }, Math.floor(Date.now() / 1000));
  const actor = apiActor(req);
  const statement = keyCreate ??= composeQuery('key_create', { insert: 'key_insert' });
  const { row, secret } = await changeByStatement(services, async (db, checkedKey) => {
    const { secret, values } = newKeyValues(req.caller.project_id, req.caller.created_by, input, req.caller.rate_limit);
    const { rows: [row] } = await db.query({
      name: 'key_create',
      text: statement.text,
      values: parameterValues(statement, {
        ...values, checked_key: checkedKey, actor_id: actor.keyId ?? null, event_id: newId('evnt'), origin: actor.origin, ip_address: actor.ip,
        details: JSON.stringify(createdDetails(input)),
      }, 'key_create'),
    });
    return { row: row as KeyRow, secret };
  }).catch(outlivesRefusal);
  return ok(keyView(row, secret), 201);
}

/** key_within_caller_life's and rate_limit_within_caller's refusals as creation's 403s; any other error as it is. */
export function outlivesRefusal(err: unknown): never {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === SQLSTATE.keyOutlivesCaller) throw errors.outlivesCaller();
  if (code === SQLSTATE.keyRateLimitLooser) throw errors.rateLimitLooser();
  throw err;
}

export async function revokeKey(services: Services, req: DomainRequest) {
  const id = keyIdParam(req);
  if (id === req.caller.id) throw errors.revokeCurrent();
  if (!isId('papi', id)) throw errors.keyNotFound();
  const actor = apiActor(req);
  const [revoked] = await changeByStatement(services, (db, checkedKey) => queryFile<{ id: string }>(db, 'key_revoke', {
    id, project_id: req.caller.project_id, checked_key: checkedKey, expired_event_id: newId('evnt'), revoked_event_id: newId('evnt'),
    origin: actor.origin, actor_id: actor.keyId ?? null, ip_address: actor.ip,
    system_origin: SYSTEM_ACTOR.origin, system_ip_address: SYSTEM_ACTOR.ip,
  }));
  if (!revoked) throw errors.keyNotFound();
  return ok({ deleted: true as const, id });
}

/** A key's expiry, a change of the service's own, dated when it happened: its expires_at. */
function recordExpiry(tx: Tx, projectId: string, keyId: string, expiresAt: number): Promise<string> {
  return recordEvent(tx, SYSTEM_ACTOR, {
    projectId,
    type: 'key.expired',
    related: { table: 'key', id: keyId },
    details: { expires_at: expiresAt },
    at: expiresAt,
  });
}

/** The `key.expire` job: marks due keys `expired`, each with its `key.expired` event. */
export async function expireDueKeys(services: Services, batchSize = 500): Promise<number> {
  let total = 0;
  for (;;) {
    const expired = await change(services, async (tx) => {
      const rows = await queryFile<{ id: string; project_id: string; expires_at: number }>(tx.client, 'key_expire_due', [batchSize]);
      for (const row of rows) await recordExpiry(tx, row.project_id, row.id, row.expires_at);
      return rows.length;
    });
    total += expired;
    if (expired < batchSize) return total;
  }
}
