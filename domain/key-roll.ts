// POST /v1/key/<key_id>/roll (decisions.md, "Key roll"): a new key in the old one's image, the old
// one's life cut to grace_s, in one statement (sql/queries/key_roll.sql). Its shorter expiry is
// enforced where every key's is, in the stored row each request's check reads.
import { isId, newId } from '../lib/ids.ts';
import { queryFile } from '../lib/pool.ts';
import { errors } from './errors.ts';
import { keyIdParam, keyView, mintKey, outlivesRefusal, type KeyRow } from './keys.ts';
import { apiActor, ok, type DomainRequest } from './requests.ts';
import { holdsScope, KNOWN_SCOPES } from './scopes.ts';
import { changeByStatement, type Services } from './services.ts';

export const DEFAULT_GRACE_S = 86_400;
export const MAX_GRACE_S = 2_592_000;

/** Absent or null: the default, as an absent or null `scope` is at creation. */
export function parseGrace(body: Record<string, unknown>): number {
  const grace = body.grace_s;
  if (grace === undefined || grace === null) return DEFAULT_GRACE_S;
  if (typeof grace !== 'number' || !Number.isInteger(grace) || grace < 0 || grace > MAX_GRACE_S) throw errors.graceS();
  return grace;
}

export async function rollKey(services: Services, req: DomainRequest) {
  const graceS = parseGrace(req.body);
  const id = keyIdParam(req);
  if (graceS === 0 && id === req.caller.id) throw errors.revokeCurrent();
  if (!isId('papi', id)) throw errors.keyNotFound();
  const actor = apiActor(req);
  // The scope rule stays in scopes.ts: the statement is given every scope the caller may grant.
  const grantable = KNOWN_SCOPES.filter((scope) => holdsScope(req.caller.scope, scope));
  const minted = mintKey(req.caller.project_id);
  const [row] = await changeByStatement(services, (db, checkedKey) => queryFile<KeyRow & { refusal: 'expired' | 'scope' | 'rate_limit' | null }>(db, 'key_roll', {
    id, project_id: req.caller.project_id, checked_key: checkedKey, grace_s: graceS,
    new_id: minted.id, created_by: req.caller.created_by, secret_hash: minted.hash, key_preview: minted.preview, grantable,
    caller_key_id: req.caller.id, caller_rate_limit: req.caller.rate_limit,
    created_event_id: newId('evnt'), rolled_event_id: newId('evnt'), origin: actor.origin, actor_id: actor.keyId ?? null, ip_address: actor.ip,
  })).catch(outlivesRefusal);
  if (!row) throw errors.keyNotFound();
  if (row.refusal === 'expired') throw errors.rollExpired();
  if (row.refusal === 'scope') throw errors.scopeWider();
  if (row.refusal === 'rate_limit') throw errors.rateLimitLooser();
  return ok(keyView(row, minted.secret), 201);
}
