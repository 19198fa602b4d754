// Bulk-loads one project with 1,000,000 events, 10,000 keys, 10,000 apps and 1,000,000 runs in
// SQL, with the counters and totals the service keeps, then analyzes. Returns one app's id.
import type pg from 'pg';

export const SCALE = { events: 1_000_000, keys: 10_000, apps: 10_000, runs: 1_000_000 };

const ID = (prefix: string, seed: string) => `'${prefix}_' || substr(md5(random()::text || ${seed}), 1, 20)`;

export async function loadScaleProject(db: pg.Pool, projectId: string, consumerId: string): Promise<string> {
  await db.query(`
    INSERT INTO api_keys (id, project_id, created_by, name, secret_hash, key_preview, scope, created_at, updated_at)
    SELECT ${ID('papi', 'g')}, $1, $2, 'bulk ' || g, sha256(convert_to('bulk-' || g || random(), 'UTF8')),
           'sk-project-...bulk', ARRAY['key:read'], now_seconds() - make_interval(secs => g), now_seconds()
    FROM generate_series(1, ${SCALE.keys}) g`, [projectId, consumerId]);
  await db.query(`
    INSERT INTO apps (id, project_id, name, description, category, type, status, model_id, model_build_id, created_at, updated_at)
    SELECT ${ID('mapp', 'g')}, $1, 'bulk app ' || g, 'bulk', 'general', 'private', 'activated',
           'modi_4a1f0c9e2b7d58136e20', 'mlyi_1a0f9e8d7c6b5a493827', now_seconds() - make_interval(secs => g), now_seconds()
    FROM generate_series(1, ${SCALE.apps}) g`, [projectId]);
  await db.query(`
    INSERT INTO app_data_fields (id, app_id, project_id, position, name, type_id, placeholder, required)
    SELECT ${ID('madi', 'a.id')}, a.id, a.project_id, 0, 'text', 'mdti_fdd932b23e1fa82aa942', '', true FROM apps a WHERE a.project_id = $1`, [projectId]);
  await db.query(`
    INSERT INTO app_instructions (id, app_id, project_id, position, type, instruction)
    SELECT ${ID('miid', 'a.id')}, a.id, a.project_id, 0, 'system', 'Summarize.' FROM apps a WHERE a.project_id = $1`, [projectId]);
  // Numbered after the project's own events, older first; not chained (the bench reads no hash, and
  // this project's chain is not verified): each row's hash is a stand-in of the right shape, since
  // an event without one is refused (sql/migrations/0015). Each with its JSON as the writer stores
  // it (eventView's members, in its order, as JSON.stringify writes them).
  await db.query(`
    INSERT INTO events (id, project_id, type_id, related_table, related_id, origin, ip_address, details, created_at, sequence, actor_id, hash, body)
    SELECT e.id, $1, t.id, 'key', 'papi_00000000000000000000', 'api', '127.0.0.1', '{"name":"bulk"}', e.created_at, e.sequence, NULL, e.hash,
           '{"id":' || to_json(e.id)::text || ',"object":"event","type":{"id":' || to_json(t.id)::text || ',"name":' || to_json(t.name)::text
             || '},"related":{"table":"key","id":"papi_00000000000000000000"},"origin":"api","ip_address":"127.0.0.1","details":{"name":"bulk"},"created_at":'
             || unix_seconds(e.created_at) || ',"sequence":' || e.sequence || ',"actor":{"type":"key","id":null},"hash":"' || e.hash || '"}'
    FROM (SELECT ${ID('evnt', 'g')} AS id, now_seconds() - make_interval(secs => g) AS created_at, head.total + ${SCALE.events} - g + 1 AS sequence,
                 encode(sha256(g::text::bytea), 'hex') AS hash
          FROM generate_series(1, ${SCALE.events}) g,
               (SELECT coalesce((SELECT total FROM project_event_counts WHERE project_id = $1), 0) AS total) head) e,
         event_types t
    WHERE t.id = 'evty_0a1b5c2f7d93e4068b11'`, [projectId]);
  await db.query(`
    INSERT INTO project_event_counts AS c (project_id, total) VALUES ($1, ${SCALE.events})
    ON CONFLICT (project_id) DO UPDATE SET total = c.total + ${SCALE.events}`, [projectId]);
  await db.query(`
    WITH ids AS (SELECT array_agg(id ORDER BY id) AS app FROM apps WHERE project_id = $1)
    INSERT INTO runs (id, app_id, project_id, status, input_tokens, output_tokens, created_at)
    SELECT ${ID('run', 'g')}, ids.app[1 + g % ${SCALE.apps}], $1,
           CASE WHEN g % 10 = 0 THEN 'error' ELSE 'succeeded' END, 100, 40, now_seconds()
    FROM ids, generate_series(1, ${SCALE.runs}) g`, [projectId]);
  await db.query(`
    INSERT INTO app_totals (app_id, project_id, runs, ok_runs, measured_runs, input_tokens, output_tokens)
    SELECT app_id, project_id, count(*), count(*) FILTER (WHERE status <> 'error'),
           count(*) FILTER (WHERE status <> 'error' AND input_tokens IS NOT NULL),
           coalesce(sum(input_tokens) FILTER (WHERE status <> 'error'), 0),
           coalesce(sum(output_tokens) FILTER (WHERE status <> 'error'), 0)
    FROM runs WHERE project_id = $1 GROUP BY app_id, project_id`, [projectId]);
  await db.query(`
    UPDATE apps a SET runs_private = t.runs FROM app_totals t
    WHERE t.app_id = a.id AND t.project_id = a.project_id AND a.project_id = $1`, [projectId]);
  await db.query('VACUUM ANALYZE');
  // The load's dirty pages are written now, not by the checkpointer during the first measurement.
  await db.query('CHECKPOINT');
  const { rows } = await db.query('SELECT id FROM apps WHERE project_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1', [projectId]);
  return rows[0].id;
}
