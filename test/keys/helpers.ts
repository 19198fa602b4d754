// The keys tests' own helpers (not a test file itself): the members of a key object and the row as stored.
import type { TestService } from '../support/service.ts';

/** Every field of an API key object as read (no `key`), sorted. */
export const KEY_FIELDS = ['created_at', 'created_by', 'expires_at', 'id', 'key_preview', 'last_used_at', 'name', 'object', 'rate_limit', 'scope', 'status', 'updated_at'];

/** The row as stored, times as Unix seconds. */
export async function keyRow(service: TestService, id: string) {
  const { rows } = await service.db.query(
    `SELECT id, project_id, status, scope,
            floor(extract(epoch FROM expires_at))::bigint AS expires_at,
            floor(extract(epoch FROM last_used_at))::bigint AS last_used_at,
            floor(extract(epoch FROM created_at))::bigint AS created_at,
            floor(extract(epoch FROM updated_at))::bigint AS updated_at
     FROM api_keys WHERE id = $1`, [id]);
  return rows[0] as { id: string; project_id: string; status: string; scope: string[]; expires_at: number | null; last_used_at: number | null; created_at: number; updated_at: number } | undefined;
}
