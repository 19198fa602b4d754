// The keys resource (api.md 4.1): list, read, current, create, revoke.
import { isId, newId } from '../lib/ids.ts';
import { queryFile, type Database } from '../lib/pool.ts';
import { recordEvent } from './audit.ts';
import { KeyCheckedDatabase } from './key-check.ts';
import { errors } from './errors.ts';
import { holdsScope, isKnownScope } from './scopes.ts';
import { hashSecret, newSecret, previewOf } from './secrets.ts';
import { apiActor, ok, pageOf, paging, type CallerKey, type DomainRequest } from './requests.ts';
import { change, type Actor, type Services, type Tx } from './services.ts';
import { KEY_NAME, requiredText } from './text-fields.ts';

/** The latest `expires_at` a key takes, the last second timestamptz (and any client) can sensibly hold: 9999-12-31T23:59:59Z. */
export const LATEST_UNIX_SECONDS = 253_402_300_799;

/** A key as api_key_view reads it. */
type KeyRow = Omit<CallerKey, 'project_id'>;

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
  };
}

/** `current` is reserved in the identifier position for the key making the call. */
function keyIdParam(req: DomainRequest): string {
  const id = req.params.key_id ?? '';
  return id === 'current' ? req.caller.id : id;
}

export async function listKeys(services: Services, req: DomainRequest) {
  const { limit, offset } = paging(req.query);
  const rows = await queryFile<KeyRow & { total: number }>(services.db, 'key_list', [req.caller.project_id, limit, offset]);
  return ok(pageOf(rows, (row) => keyView(row)));
}

/**
 * The key making the call, as stored now: when authentication just read it, that row; when the
 * gateway knew it from memory (where last_used_at is not kept fresh), a read that is its check.
 */
export async function currentKey(db: Database, req: DomainRequest) {
  if (req.keyChecked || !(db instanceof KeyCheckedDatabase)) return ok(keyView(req.caller));
  return ok(keyView({ ...req.caller, ...(await db.callerNow()) }));
}

export async function getKey(services: Services, req: DomainRequest) {
  const id = keyIdParam(req);
  if (!isId('papi', id)) throw errors.keyNotFound();
  const [row] = await queryFile<KeyRow>(services.db, 'key_find', [id, req.caller.project_id]);
  if (!row) throw errors.keyNotFound();
  return ok(keyView(row));
}

export interface NewKey {
  name: string;
  scope: string[];
  /** Unix seconds, or null for never. */
  expiresAt: number | null;
}

/** Validates a creation body in the order decisions.md gives; `callerScope` is the creating key's. */
export function parseNewKey(body: Record<string, unknown>, callerScope: readonly string[], nowSeconds: number): NewKey {
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

  // Refused, never trimmed: every requested scope must be within the caller's own.
  if (!scopes.every((wanted) => holdsScope(callerScope, wanted))) throw errors.scopeWider();
  return { name, scope: scopes, expiresAt: expires };
}

/** Inserts a key and enqueues `key.created`; shared by the API and the workspace command line. */
export async function insertKey(tx: Tx, actor: Actor, projectId: string, consumerId: string, input: NewKey) {
  const secret = newSecret();
  const id = newId('papi');
  const [row] = await queryFile<KeyRow>(tx.client, 'key_insert',
    [id, projectId, consumerId, input.name, hashSecret(secret), previewOf(secret), input.scope, input.expiresAt]);
  await recordEvent(tx, actor, {
    projectId,
    type: 'key.created',
    related: { table: 'key', id },
    details: { name: input.name, scope: input.scope, expires_at: input.expiresAt },
    at: row!.created_at,
  });
  return { row: row!, secret };
}

export async function createKey(services: Services, req: DomainRequest) {
  const input = parseNewKey(req.body, req.caller.scope, Math.floor(Date.now() / 1000));
  const { row, secret } = await change(services, (tx) =>
    insertKey(tx, apiActor(req), req.caller.project_id, req.caller.created_by, input));
  return ok(keyView(row, secret), 201);
}

export async function revokeKey(services: Services, req: DomainRequest) {
  const id = keyIdParam(req);
  if (id === req.caller.id) throw errors.revokeCurrent();
  if (!isId('papi', id)) throw errors.keyNotFound();
  const projectId = req.caller.project_id;
  await change(services, async (tx) => {
    const [revoked] = await queryFile<{ id: string; name: string; updated_at: number }>(tx.client, 'key_revoke', [id, projectId]);
    if (!revoked) throw errors.keyNotFound();
    await recordEvent(tx, apiActor(req), {
      projectId,
      type: 'key.revoked',
      related: { table: 'key', id },
      details: { name: revoked.name },
      at: revoked.updated_at,
    });
  });
  return ok({ deleted: true as const, id });
}

/** The `key.expire` job: marks due keys `expired`, each with its `key.expired` event. */
export async function expireDueKeys(services: Services, batchSize = 500): Promise<number> {
  let total = 0;
  for (;;) {
    const expired = await change(services, async (tx) => {
      const rows = await queryFile<{ id: string; project_id: string; expires_at: number; updated_at: number }>(tx.client, 'key_expire_due', [batchSize]);
      for (const row of rows) {
        await recordEvent(tx, { origin: 'system', ip: '127.0.0.1' }, {
          projectId: row.project_id,
          type: 'key.expired',
          related: { table: 'key', id: row.id },
          details: { expires_at: row.expires_at },
          at: row.updated_at,
        });
      }
      return rows.length;
    });
    total += expired;
    if (expired < batchSize) return total;
  }
}
