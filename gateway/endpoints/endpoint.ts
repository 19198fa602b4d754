// An endpoint: one typed declaration from which the router, the scope check, the pool thread's
// lookup and the OpenAPI document are all derived.
import type { ApiError } from '../../domain/errors.ts';
import type { StreamQuery } from '../../domain/events.ts';
import type { DomainRequest, DomainResult } from '../../domain/requests.ts';
import type { Services } from '../../domain/services.ts';
import type { Database } from '../../lib/pool.ts';

/** A JSON Schema (2020-12, as OpenAPI 3.1 uses it). */
export type JsonSchema = { readonly [keyword: string]: unknown };

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** An error-table entry, or a status and message pattern (echoed input as `[\s\S]*`: `.` skips newlines). */
export type ErrorDoc = (() => ApiError) | { status: number; pattern: string; example: string };

interface Declaration {
  method: Method;
  /** The path as OpenAPI writes it: `/v1/key/{key_id}`. */
  path: string;
  /** The scope a key must hold (domain/scopes.ts). */
  scope: string;
  summary: string;
  description?: string;
  request?: {
    /** Path parameters by name. */
    params?: Record<string, JsonSchema>;
    /** Query parameters by name. */
    query?: Record<string, JsonSchema>;
    body?: JsonSchema;
  };
  /** The failures this endpoint answers beyond those every endpoint shares (openapi.ts). */
  errors: readonly ErrorDoc[];
}

/** Runs in a pool thread, over the database. */
export interface PoolEndpoint<Response = unknown> extends Declaration {
  runs: 'pool';
  success: { status: 200 | 201 | 202; schema: JsonSchema };
  handler: (services: Services, req: DomainRequest) => Promise<DomainResult<Response>>;
  /**
   * Step 9, the plan's checks (402), on their own: run before step 10 for a request with an
   * Idempotency-Key, whose replay, 409 or 422 (or 400) must not answer for a plan that refuses.
   */
  admit?: (services: Services, req: DomainRequest) => Promise<void>;
}

/** Runs on the gateway's thread, over its lanes and pool: a statement or two, no work worth a thread hop. */
export interface InlineEndpoint<Response = unknown> extends Declaration {
  runs: 'inline';
  success: { status: 200 | 201; schema: JsonSchema };
  handler: (db: Database, req: DomainRequest) => Promise<DomainResult<Response>>;
}

/** Authenticated and scope-checked, then one fixed answer (a 501, or `DELETE /v1/key/current`). */
export interface ReservedEndpoint extends Declaration {
  runs: 'reserved';
  answer: () => ApiError;
}

/** Server-Sent Events held open by the gateway; `parse` runs first, so its failures use the envelope. */
export interface StreamEndpoint extends Declaration {
  runs: 'stream';
  /** Headers the endpoint reads, for the OpenAPI document. */
  headers: Record<string, JsonSchema>;
  success: { status: 200; description: string };
  parse: (req: DomainRequest, headers: Record<string, string | undefined>) => StreamQuery;
}

export type Endpoint = PoolEndpoint<any> | InlineEndpoint<any> | ReservedEndpoint | StreamEndpoint;

/** The success response of an endpoint, as its handler's type says. */
export type ResponseOf<E> =
  E extends PoolEndpoint<infer R> ? R : E extends InlineEndpoint<infer R> ? R : never;
