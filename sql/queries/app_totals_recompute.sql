-- The (app, project) totals from its runs, then the app's run counters from all its totals. $1 the
-- app, $2 the project that ran it, $3 the app's own. The other projects' totals are summed apart
-- from the app's row: on Citus they are on every shard, the app on its own's (docs/citus.md).
WITH sums AS (
  SELECT count(*) AS runs,
         count(*) FILTER (WHERE status <> 'error') AS ok_runs,
         count(*) FILTER (WHERE status <> 'error' AND input_tokens IS NOT NULL) AS measured_runs,
         coalesce(sum(input_tokens) FILTER (WHERE status <> 'error'), 0) AS input_tokens,
         coalesce(sum(output_tokens) FILTER (WHERE status <> 'error'), 0) AS output_tokens
  FROM runs WHERE app_id = $1 AND project_id = $2
), upserted AS (
  INSERT INTO app_totals (app_id, project_id, runs, ok_runs, measured_runs, input_tokens, output_tokens)
  SELECT $1, $2, runs, ok_runs, measured_runs, input_tokens, output_tokens FROM sums
  ON CONFLICT (app_id, project_id) DO UPDATE
    SET runs = EXCLUDED.runs, ok_runs = EXCLUDED.ok_runs, measured_runs = EXCLUDED.measured_runs,
        input_tokens = EXCLUDED.input_tokens, output_tokens = EXCLUDED.output_tokens
  RETURNING project_id, runs
), others AS (
  SELECT coalesce(sum(t.runs) FILTER (WHERE t.project_id = $3), 0) AS private,
         coalesce(sum(t.runs) FILTER (WHERE t.project_id <> $3), 0) AS public
  FROM app_totals t WHERE t.app_id = $1 AND t.project_id <> $2
)
UPDATE apps a
SET runs_private = o.private + CASE WHEN a.project_id = $2 THEN (SELECT runs FROM upserted) ELSE 0 END,
    runs_public = o.public + CASE WHEN a.project_id <> $2 THEN (SELECT runs FROM upserted) ELSE 0 END
FROM others o
WHERE a.id = $1 AND a.project_id = $3
