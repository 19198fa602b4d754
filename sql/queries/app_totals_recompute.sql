-- The (app, project) totals from its runs, then the app's run counters from all its totals.
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
)
UPDATE apps a
SET runs_private = coalesce((SELECT sum(t.runs) FROM app_totals t WHERE t.app_id = a.id AND t.project_id = a.project_id AND t.project_id <> $2), 0)
                   + CASE WHEN a.project_id = $2 THEN (SELECT runs FROM upserted) ELSE 0 END,
    runs_public = coalesce((SELECT sum(t.runs) FROM app_totals t WHERE t.app_id = a.id AND t.project_id <> a.project_id AND t.project_id <> $2), 0)
                  + CASE WHEN a.project_id <> $2 THEN (SELECT runs FROM upserted) ELSE 0 END
WHERE a.id = $1
