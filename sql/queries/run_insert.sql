-- Idempotent by run id: a redelivered report stores nothing new. An app that does not exist is
-- refused as its foreign key would (run_app_known, sql/migrations/0048), on Citus too.
INSERT INTO runs (id, app_id, project_id, status, input_tokens, output_tokens)
VALUES (:id, run_app_known(:app_id), :project_id, :status, :input_tokens, :output_tokens)
ON CONFLICT (id, project_id) DO NOTHING
RETURNING id
