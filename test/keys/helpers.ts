// Shared by the keys tests: exact-envelope assertions and a few shortcuts. Not a test file itself.
import assert from 'node:assert/strict';
import type { Reply, TestService } from '../support/service.ts';

export const TITLES: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  422: 'Unprocessable entity',
};

/** Every field of an API key object as read (no `key`), sorted. */
export const KEY_FIELDS = ['created_at', 'created_by', 'expires_at', 'id', 'key_preview', 'last_used_at', 'name', 'object', 'scope', 'status', 'updated_at'];

export const KEY_ID = /^papi_[0-9a-f]{20}$/;
export const SECRET = /^sk-project-[0-9A-Za-z]{43,}$/;

export const REFUSED = "The API key doesn't have permissions to perform the request.";
export const EXPIRED = 'The API key has expired.';
export const KEY_NOT_FOUND = 'API key not found.';

export const nowSeconds = () => Math.floor(Date.now() / 1000);

/** A failure: exact status, envelope code and title, and message. */
export function assertFailure(reply: Reply, status: number, message: string): void {
  assert.equal(reply.status, status, `status (body: ${reply.text})`);
  assert.deepEqual(reply.body, { code: status, title: TITLES[status], response: message });
}

/** A success: exact status, envelope code and title; returns `response`. */
export function assertSuccess(reply: Reply, status = 200): any {
  assert.equal(reply.status, status, `status (body: ${reply.text})`);
  assert.deepEqual(Object.keys(reply.body).sort(), ['code', 'response', 'title']);
  assert.equal(reply.body.code, status);
  assert.equal(reply.body.title, TITLES[status]);
  return reply.body.response;
}

/** Creates a key through the API; fails the test unless the answer is 201. */
export async function createKey(service: TestService, callerKey: string, body: Record<string, unknown>): Promise<{ id: string; key: string; object: any }> {
  const reply = await service.request('POST', '/v1/key', { key: callerKey, body });
  const object = assertSuccess(reply, 201);
  return { id: object.id, key: object.key, object };
}

/** Polls `probe` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The row as stored, times as Unix seconds. */
export async function keyRow(service: TestService, id: string) {
  const { rows } = await service.db.query(
    `SELECT id, project_id, status, scope,
            extract(epoch FROM expires_at)::bigint AS expires_at,
            extract(epoch FROM last_used_at)::bigint AS last_used_at,
            extract(epoch FROM created_at)::bigint AS created_at,
            extract(epoch FROM updated_at)::bigint AS updated_at
     FROM api_keys WHERE id = $1`, [id]);
  return rows[0] as { id: string; project_id: string; status: string; scope: string[]; expires_at: number | null; last_used_at: number | null; created_at: number; updated_at: number } | undefined;
}
