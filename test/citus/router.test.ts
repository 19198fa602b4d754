// On Citus, each statement a single-project endpoint runs is planned to one shard: every task
// count in its EXPLAIN is 1 (a router query, or the coordinator's own tables with none), so a
// project's requests reach one node. The cross-project reads docs/citus.md names are not here.
// Off Citus the test skips, saying so.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { parameterValues, queryStatement } from '../../lib/sql-files.ts';
import { onCitus } from './databases.ts';
import { createTestDatabase } from '../support/service.ts';

const skip = (await onCitus(process.env.TEST_PG_ADMIN_URL)) ? false : 'not on a Citus coordinator (DATABASE_URL at one runs it)';

const P = 'proj_00000000000000000001';
const KEY = 'papi_00000000000000000001';
const APP = 'mapp_00000000000000000001';
const HOOK = 'whep_00000000000000000001';
const HASH = Buffer.alloc(32, 1);

/** Positional statements: their values, the project's among them. Named ones: the project and id. */
const STATEMENTS: Record<string, unknown[] | Record<string, unknown>> = {
  // Authentication and the gateway's reads of the caller's key.
  key_authenticate: [HASH, P],
  key_route: [HASH],
  key_caller: [KEY, P],
  key_check: [KEY, P],
  key_touch_last_used: [KEY, P],
  // Keys.
  key_find: [KEY, P],
  key_list: [P, 10, null],
  key_insert: { id: KEY, project_id: P },
  key_revoke: { id: KEY, project_id: P },
  key_roll: {
    id: KEY, project_id: P, grace_s: 0, new_id: 'papi_00000000000000000002', created_by: 'cons_00000000000000000001', secret_hash: HASH,
    key_preview: 'sk-…', grantable: ['key:read'], caller_key_id: KEY, created_event_id: 'evnt_00000000000000000001',
    rolled_event_id: 'evnt_00000000000000000002', origin: 'api', actor_id: KEY, ip_address: '127.0.0.1',
  },
  // Apps.
  app_create: { id: APP, project_id: P },
  app_edit: { id: APP, project_id: P },
  app_delete: { id: APP, project_id: P },
  app_list: [P, 10, 0],
  // The audit trail.
  event_find: ['evnt_00000000000000000001', P],
  event_list: [P, 10],
  event_list_version: [P],
  event_stream_page: [P, 0, 10, null, null, 10],
  checkpoint_find: [P, null],
  // Webhooks: the endpoints are the coordinator's; the project's head is read on its shard.
  webhook_create: {
    id: HOOK, project_id: P, url: 'https://example.com/', description: '', types: [], secret: 'sealed',
    event_id: 'evnt_00000000000000000001', origin: 'api', actor_id: KEY, ip_address: '127.0.0.1', details: {},
  },
  webhook_edit: { id: HOOK, project_id: P, event_id: 'evnt_00000000000000000001', origin: 'api', actor_id: KEY, ip_address: '127.0.0.1' },
  webhook_delete: { id: HOOK, project_id: P, event_id: 'evnt_00000000000000000001', origin: 'api', actor_id: KEY, ip_address: '127.0.0.1' },
  webhook_rotate: { id: HOOK, project_id: P, secret: 'sealed', event_id: 'evnt_00000000000000000001', origin: 'api', actor_id: KEY, ip_address: '127.0.0.1' },
  webhook_replay: [HOOK, P, 0, null, 'pms_webhook_replays'],
  webhook_find: [HOOK, P],
  webhook_list: [P, 10, 0],
  webhook_attempt_list: [HOOK, P, 10, 0],
  // The coordinator's own: kept answers and request limits.
  idempotent_find: [KEY, 'k'],
  idempotent_keep: [KEY, 'k', 'f', 200, 'sealed'],
  request_lease: { key_id: KEY, window_start: 0, lease: 1, cap: 10, window_end: 60 },
};

let db: pg.Pool;

before(async () => {
  if (skip) return;
  db = new pg.Pool({ connectionString: await createTestDatabase(), max: 1 });
});

after(async () => {
  await db?.end();
});

function values(name: string, given: unknown[] | Record<string, unknown>): unknown[] {
  const statement = queryStatement(name);
  if (Array.isArray(given)) return parameterValues(statement, given, name);
  return parameterValues(statement, Object.fromEntries(statement.names.map((n) => [n, given[n] ?? null])), name);
}

/**
 * The statement with its values written in, as the plan of one execution sees them: Citus plans no
 * INSERT ... SELECT whose parameters are still open, as EXPLAIN with bound values leaves them.
 */
function withLiterals(text: string, given: unknown[]): string {
  const literal = (value: unknown): string => {
    if (value === null || value === undefined) return 'NULL';
    if (Buffer.isBuffer(value)) return `'\\x${value.toString('hex')}'::bytea`;
    if (typeof value === 'number') return String(value);
    if (Array.isArray(value)) return pg.Client.prototype.escapeLiteral(`{${value.map((v) => JSON.stringify(v)).join(',')}}`);
    if (typeof value === 'object') return pg.Client.prototype.escapeLiteral(JSON.stringify(value));
    return pg.Client.prototype.escapeLiteral(String(value));
  };
  return text.replace(/\$(\d+)/g, (_, n: string) => literal(given[Number(n) - 1]));
}

test('every statement of a single-project endpoint is planned to one shard on Citus', { skip }, async () => {
  const fannedOut: string[] = [];
  for (const [name, given] of Object.entries(STATEMENTS)) {
    const explained = await db.query(`EXPLAIN ${withLiterals(queryStatement(name).text, values(name, given))}`).catch((err: Error) => err);
    if (explained instanceof Error) {
      fannedOut.push(`${name}: ${explained.message}`);
      continue;
    }
    const { rows } = explained;
    const plan = rows.map((r) => r['QUERY PLAN'] as string);
    const counts = plan.flatMap((line) => [...line.matchAll(/Task Count: (\d+)/g)].map((m) => Number(m[1])));
    if (counts.some((n) => n !== 1)) fannedOut.push(`${name}: task counts ${counts.join(', ')}\n    ${plan.join('\n    ')}`);
  }
  assert.deepEqual(fannedOut, [], `statements that reach more than one shard:\n  ${fannedOut.join('\n  ')}`);
});

test('the check sees a fan-out: another project\'s app, read by id over every shard, is one', { skip }, async () => {
  const { rows } = await db.query(`EXPLAIN ${withLiterals(queryStatement('app_find_readable').text, [APP, P])}`);
  const counts = rows.flatMap((r) => [...(r['QUERY PLAN'] as string).matchAll(/Task Count: (\d+)/g)].map((m) => Number(m[1])));
  assert.ok(counts.some((n) => n > 1), `task counts ${counts.join(', ')}`);
});
