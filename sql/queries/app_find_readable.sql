-- One app as project $2 may read it: its own in any status, or another project's activated
-- public app with the instructions and the owner's private run count hidden.
SELECT a.id, a.name, a.description, a.type, a.status, coalesce(a.logo_file_id, '') AS logo,
       a.model_id, a.model_build_id,
       (SELECT coalesce(json_agg(json_build_object(
                 'id', f.id, 'name', f.name, 'type', f.type_id, 'placeholder', f.placeholder, 'required', f.required)
               ORDER BY f.position), '[]'::json)
        FROM app_data_fields f WHERE f.app_id = a.id) AS data,
       CASE WHEN a.project_id = $2 THEN
         (SELECT coalesce(json_agg(json_build_object('id', i.id, 'type', i.type, 'instruction', i.instruction)
                 ORDER BY i.position), '[]'::json)
          FROM app_instructions i WHERE i.app_id = a.id)
       END AS instruction,
       CASE WHEN a.project_id = $2 THEN a.runs_private ELSE 0 END AS runs_private,
       a.runs_public,
       app_tokens(t) AS tokens,
       unix_seconds(a.created_at) AS created_at, unix_seconds(a.updated_at) AS updated_at
FROM apps a
LEFT JOIN app_totals t ON t.app_id = a.id AND t.project_id = $2
WHERE a.id = $1 AND a.deleted_at IS NULL
  AND (a.project_id = $2 OR (a.type = 'public' AND a.status = 'activated'))
