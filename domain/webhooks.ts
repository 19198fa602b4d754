// The webhooks resource: a project's endpoints, their secrets, the delivery log and replays. Each
// change is one statement that checks the caller's key and hands its event over.
import { randomBytes } from 'node:crypto';
import { isId, newId } from '../lib/ids.ts';
import { queryFile, type Database } from '../lib/pool.ts';
import { REPLAYS_CHANNEL } from './audit.ts';
import { errors } from './errors.ts';
import { EVENT_TYPES } from './jobs.ts';
import { apiActor, ok, pageOf, paging, type DomainRequest } from './requests.ts';
import { seal, sealingKeyOf } from './sealing.ts';
import { changeByStatement, type Services } from './services.ts';
import { hostOf, PrivateAddress, resolveChecked } from './webhook-addresses.ts';

const URL_MAX_CHARS = 2000;
const DESCRIPTION_MAX_CHARS = 200;
/** A name that does not resolve in this long is let through: each delivery checks it again. */
const CREATION_LOOKUP_MS = 3000;
const KNOWN_TYPES: ReadonlySet<string> = new Set(EVENT_TYPES);

interface EndpointRow {
  id: string;
  url: string;
  description: string;
  types: string[];
  status: 'enabled' | 'disabled';
  disabled_reason: 'gone' | 'failing' | 'manual' | null;
  created_at: number;
  updated_at: number;
}

/** The endpoint object; `secret` only in the answers of creation and rotation. */
export function endpointView(row: EndpointRow, secret?: string) {
  return {
    id: row.id,
    object: 'webhook_endpoint' as const,
    url: row.url,
    description: row.description,
    types: row.types,
    status: row.status,
    disabled_reason: row.disabled_reason,
    created_at: row.created_at,
    updated_at: row.updated_at,
    ...(secret === undefined ? {} : { secret }),
  };
}

interface AttemptRow {
  id: string;
  event_id: string;
  sequence: number;
  attempt: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  created_at: number;
}

function attemptView(row: AttemptRow) {
  return {
    id: row.id,
    object: 'webhook_delivery' as const,
    event: row.event_id,
    sequence: Number(row.sequence),
    attempt: row.attempt,
    status_code: row.status_code,
    error: row.error,
    duration_ms: row.duration_ms,
    created_at: row.created_at,
  };
}

/** `whsec_` and the base64 of 32 random bytes, as Standard Webhooks writes a secret. */
export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

const chars = (value: string) => [...value].length;

/** An https URL of at most 2,000 characters whose host is not, nor resolves to, a private address. */
async function parseUrl(value: unknown, allowPrivate: boolean): Promise<string> {
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) throw errors.webhookUrlRequired();
  if (typeof value !== 'string' || chars(value) > URL_MAX_CHARS) throw errors.webhookUrlHttps();
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw errors.webhookUrlHttps();
  }
  if (url.protocol !== 'https:' || url.hostname === '') throw errors.webhookUrlHttps();
  if (!allowPrivate) {
    const lookup = resolveChecked(hostOf(url), false);
    const timeout = new Promise<void>((resolve) => setTimeout(resolve, CREATION_LOOKUP_MS).unref());
    // Only a refusal counts: a name that does not resolve (yet) fails its deliveries, not its creation.
    const refused = await Promise.race([lookup.then(() => false, (err: unknown) => err instanceof PrivateAddress), timeout.then(() => false)]);
    if (refused) throw errors.webhookUrlPrivate();
  }
  return value;
}

function parseDescription(value: unknown): string {
  if (typeof value !== 'string') throw errors.webhookDescriptionType();
  if (chars(value) > DESCRIPTION_MAX_CHARS) throw errors.webhookDescriptionLength();
  return value;
}

/** Event type names, each known, duplicates dropped in the order sent; empty: every type. */
function parseTypes(value: unknown): string[] {
  if (!Array.isArray(value)) throw errors.webhookTypesNotArray();
  for (const entry of value) {
    if (typeof entry !== 'string' || !KNOWN_TYPES.has(entry)) throw errors.streamUnknownType(typeof entry === 'string' ? entry : JSON.stringify(entry));
  }
  return [...new Set(value as string[])];
}

function endpointIdParam(req: DomainRequest): string {
  const id = req.params.webhook_id ?? '';
  if (!isId('whep', id)) throw errors.webhookNotFound();
  return id;
}

export async function createWebhook(services: Services, req: DomainRequest) {
  const { body } = req;
  const url = await parseUrl(body.url, services.config.webhookAllowPrivate);
  const description = body.description === undefined || body.description === null ? '' : parseDescription(body.description);
  const types = body.types === undefined || body.types === null ? [] : parseTypes(body.types);
  const actor = apiActor(req);
  const secret = newWebhookSecret();
  const id = newId('whep');
  const [row] = await changeByStatement(services, (db, checkedKey) => queryFile<EndpointRow>(db, 'webhook_create', {
    id, project_id: req.caller.project_id, url, description, types, secret: seal(sealingKeyOf(services.config), secret, id), checked_key: checkedKey,
    event_id: newId('evnt'), origin: actor.origin, actor_id: actor.keyId ?? null, ip_address: actor.ip, details: JSON.stringify({ url, description, types }),
  }));
  return ok(endpointView(row!, secret), 201);
}

export async function listWebhooks(db: Database, req: DomainRequest) {
  const { limit, offset } = paging(req.query);
  const rows = await queryFile<EndpointRow & { total: number }>(db, 'webhook_list', [req.caller.project_id, limit, offset]);
  return ok(pageOf(rows, (row) => endpointView(row)));
}

export async function getWebhook(db: Database, req: DomainRequest) {
  const [row] = await queryFile<EndpointRow>(db, 'webhook_find', [endpointIdParam(req), req.caller.project_id]);
  if (!row) throw errors.webhookNotFound();
  return ok(endpointView(row));
}

export async function updateWebhook(services: Services, req: DomainRequest) {
  const { url, description, types, status } = req.body;
  if (url === undefined && description === undefined && types === undefined && status === undefined) throw errors.webhookNothingToUpdate();
  const edit = {
    url: url === undefined ? null : await parseUrl(url, services.config.webhookAllowPrivate),
    description: description === undefined ? null : parseDescription(description),
    types: types === undefined ? null : parseTypes(types),
    status: status === undefined ? null : status,
  };
  if (edit.status !== null && edit.status !== 'enabled' && edit.status !== 'disabled') throw errors.webhookStatus();
  const id = endpointIdParam(req);
  const actor = apiActor(req);
  const [row] = await changeByStatement(services, (db, checkedKey) => queryFile<EndpointRow>(db, 'webhook_edit', {
    id, project_id: req.caller.project_id, url: edit.url, description: edit.description, types: edit.types, status: edit.status,
    checked_key: checkedKey, event_id: newId('evnt'), origin: actor.origin, actor_id: actor.keyId ?? null, ip_address: actor.ip,
  }));
  if (!row) throw errors.webhookNotFound();
  return ok(endpointView(row));
}

export async function deleteWebhook(services: Services, req: DomainRequest) {
  const id = endpointIdParam(req);
  const actor = apiActor(req);
  const [deleted] = await changeByStatement(services, (db, checkedKey) => queryFile<{ id: string }>(db, 'webhook_delete', {
    id, project_id: req.caller.project_id, checked_key: checkedKey,
    event_id: newId('evnt'), origin: actor.origin, actor_id: actor.keyId ?? null, ip_address: actor.ip,
  }));
  if (!deleted) throw errors.webhookNotFound();
  return ok({ deleted: true as const, id });
}

/** A new secret; the one it replaces is still signed with, beside it, for 24 hours. */
export async function rotateWebhookSecret(services: Services, req: DomainRequest) {
  const id = endpointIdParam(req);
  const actor = apiActor(req);
  const secret = newWebhookSecret();
  const [row] = await changeByStatement(services, (db, checkedKey) => queryFile<EndpointRow>(db, 'webhook_rotate', {
    id, project_id: req.caller.project_id, secret: seal(sealingKeyOf(services.config), secret, id), checked_key: checkedKey,
    event_id: newId('evnt'), origin: actor.origin, actor_id: actor.keyId ?? null, ip_address: actor.ip,
  }));
  if (!row) throw errors.webhookNotFound();
  return ok(endpointView(row, secret));
}

export async function listWebhookDeliveries(db: Database, req: DomainRequest) {
  const id = endpointIdParam(req);
  const { limit, offset } = paging(req.query);
  const rows = await queryFile<AttemptRow & { total: number }>(db, 'webhook_attempt_list', [id, req.caller.project_id, limit, offset]);
  if (rows.length === 0) throw errors.webhookNotFound();
  return ok(pageOf(rows, attemptView));
}

/** Queues again every event after `after` that the endpoint's types match; the worker sends them. */
export async function replayWebhook(services: Services, req: DomainRequest) {
  const { after } = req.body;
  if (typeof after !== 'number' || !Number.isSafeInteger(after) || after < 0) throw errors.streamAfter();
  const id = endpointIdParam(req);
  const [row] = await changeByStatement(services, (db, checkedKey) => queryFile<{ status: string; queued: number }>(db, 'webhook_replay', [
    id, req.caller.project_id, after, checkedKey, REPLAYS_CHANNEL,
  ]));
  if (!row) throw errors.webhookNotFound();
  if (row.status !== 'enabled') throw errors.webhookReplayDisabled();
  return ok({ queued: Number(row.queued) }, 202);
}
