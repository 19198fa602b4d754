-- One app as project $2 may read it: its own in any status, or another project's activated
-- public app with the instructions and the owner's private run count hidden. The app's parts are
-- joined by its project too, and the reader's totals are read apart: on Citus the app and its
-- parts are on its owner's shard, the totals on the reader's (docs/citus.md).
SELECT a.id, a.name, a.description, a.type, a.status, coalesce(a.logo_file_id, '') AS logo,
       a.model_id, a.model_build_id,
       (SELECT coalesce(json_agg(json_build_object(
                 'id', f.id, 'name', f.name, 'type', f.type_id, 'placeholder', f.placeholder, 'required', f.required)
               ORDER BY f.position), '[]'::json)
        FROM app_data_fields f WHERE f.app_id = a.id AND f.project_id = a.project_id) AS data,
       CASE WHEN a.project_id = $2 THEN
         (SELECT coalesce(json_agg(json_build_object('id', i.id, 'type', i.type, 'instruction', i.instruction)
                 ORDER BY i.position), '[]'::json)
          FROM app_instructions i WHERE i.app_id = a.id AND i.project_id = a.project_id)
       END AS instruction,
       CASE WHEN a.project_id = $2 THEN a.runs_private ELSE 0 END AS runs_private,
       a.runs_public,
       app_tokens(t.app_id, t.ok_runs, t.measured_runs, t.input_tokens, t.output_tokens) AS tokens,
       unix_seconds(a.created_at) AS created_at, unix_seconds(a.updated_at) AS updated_at
FROM apps a
LEFT JOIN (SELECT * FROM app_totals WHERE project_id = $2 AND app_id = $1) t ON t.app_id = a.id
WHERE a.id = $1 AND a.deleted_at IS NULL
  AND (a.project_id = $2 OR (a.type = 'public' AND a.status = 'activated'))
