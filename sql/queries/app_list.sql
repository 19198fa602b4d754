-- One page of the project's own apps, newest first, with the stored totals of the reading
-- project, and the total summed from the counter rows, in one round trip (an empty page: one null row).
SELECT c.total, a.*
FROM (SELECT coalesce((SELECT sum(apps) FROM project_counts WHERE project_id = $1), 0)::bigint AS total) c
LEFT JOIN LATERAL (
  SELECT a.id, a.name, a.description, a.type, a.status, a.model_id, a.model_build_id,
         a.runs_private, a.runs_public, app_tokens(t.app_id, t.ok_runs, t.measured_runs, t.input_tokens, t.output_tokens) AS tokens,
         unix_seconds(a.created_at) AS created_at, unix_seconds(a.updated_at) AS updated_at
  FROM apps a
  LEFT JOIN app_totals t ON t.app_id = a.id AND t.project_id = a.project_id
  WHERE a.project_id = $1 AND a.deleted_at IS NULL
  ORDER BY a.created_at DESC, a.id DESC
  LIMIT $2 OFFSET $3
) a ON true
