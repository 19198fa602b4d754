// What the gateway hands a worker thread, and what comes back: plain data, one message each way.
import { errors } from './errors.ts';
import type { Actor } from './actor.ts';
import type { RateLimit } from './rate-limit.ts';

/** The authenticated key, as key_authenticate.sql reads it. */
export interface CallerKey {
  id: string;
  project_id: string;
  name: string;
  key_preview: string;
  scope: string[];
  status: 'activated' | 'expired' | 'revoked';
  expires_at: number | null;
  last_used_at: number | null;
  created_by: string;
  created_at: number;
  updated_at: number;
  /** Fixed at creation: remembering it with the key is safe. */
  rate_limit: RateLimit | null;
}

export interface DomainRequest {
  params: Record<string, string>;
  query: Record<string, string | string[]>;
  /** The parsed JSON object; `{}` for an empty body. */
  body: Record<string, unknown>;
  caller: CallerKey;
  /** False when the gateway recognised the key from memory and its check is still to come. */
  keyChecked: boolean;
  ip: string;
  requestId: string;
  /** A POST, PATCH or DELETE sent with a valid Idempotency-Key. */
  idempotency?: Idempotency;
  /** One sent with an invalid Idempotency-Key: its 400 is step 10's, answered after the plan's 402. */
  idempotencyInvalid?: true;
}

/** An Idempotency-Key and what a retry under it must match: the method, path and parsed body, hashed. */
export interface Idempotency {
  key: string;
  fingerprint: string;
}

export interface DomainResult<Response = unknown> {
  status: number;
  /** The envelope's `response`: the result, or the failure message. */
  response: Response;
  /** The `response` as JSON text already (events as the audit writer stored them): sent as it is. */
  json?: string;
}

export const ok = <Response>(response: Response, status = 200): DomainResult<Response> => ({ status, response });

/** A success whose response is JSON text already; `Response` types it for the typed client. */
export const okJson = <Response>(json: string): DomainResult<Response> => ({ status: 200, response: undefined as Response, json });

/** The response's JSON text, serialised here unless it came as text. */
export const responseJson = (result: DomainResult): string | undefined => result.json ?? JSON.stringify(result.response);

/** Who makes a change through the API, as its event records it. */
export const apiActor = (req: DomainRequest): Actor => ({ origin: 'api', ip: req.ip, keyId: req.caller.id });

/** What a pool thread hands back, pre-serialised: one flat copy across threads, no work on the gateway. */
export interface SerializedResult {
  status: number;
  /** The envelope's `response` as JSON text (undefined when it is undefined). */
  json: string | undefined;
  /** The caller's key was refused by its check: the gateway forgets it. */
  refusedKey?: true;
  /** A kept answer, replayed for a retry (Idempotent-Replayed). */
  replayed?: true;
  /** Seconds for Retry-After. */
  retryAfter?: number;
}

export const list = <Item>(data: Item[], total: number) => ({ object: 'list' as const, data, total });

/** The text JSON.stringify(list(data, total)) writes, for `data` that is JSON text already. */
export const listJson = (dataJson: string, total: number): string => `{"object":"list","data":${dataJson},"total":${total}}`;

/** A page read with its total in one query: every row carries `total`; an empty page is one null-id row. */
export function pageOf<Row extends { id: string | null; total: number }, View>(rows: Row[], view: (row: Row) => View) {
  return list(rows.filter((row) => row.id !== null).map(view), rows[0]?.total ?? 0);
}

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 100;

function oneValue(value: string | string[] | undefined): string | undefined | null {
  if (Array.isArray(value)) return null;
  return value;
}

/** A decimal integer (`0050` is 50) or NaN; capped at MAX_SAFE_INTEGER, past any list's end anyway. */
function decimal(text: string | null): number {
  return text !== null && /^\d+$/.test(text) ? Math.min(Number(text), Number.MAX_SAFE_INTEGER) : NaN;
}

/** `limit` 1..100 (default 20) and `offset` >= 0 (default 0), as decimal integers. */
export function paging(query: DomainRequest['query']): { limit: number; offset: number } {
  const limit = oneValue(query.limit);
  const offset = oneValue(query.offset);
  const parsedLimit = limit === undefined ? DEFAULT_LIMIT : decimal(limit);
  if (!(parsedLimit >= 1 && parsedLimit <= MAX_LIMIT)) throw errors.limit();
  const parsedOffset = offset === undefined ? 0 : decimal(offset);
  if (!(parsedOffset >= 0)) throw errors.offset();
  return { limit: parsedLimit, offset: parsedOffset };
}
