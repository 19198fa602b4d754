-- An app's tokens from its totals' columns: on Citus a shard's rows have the shard table's own row
-- type, which app_tokens(app_totals) of 0002 does not take. The same rule.
CREATE FUNCTION app_tokens(app_id text, ok_runs bigint, measured_runs bigint, input_tokens bigint, output_tokens bigint) RETURNS json
  LANGUAGE sql IMMUTABLE
  AS $$
    SELECT CASE
      WHEN app_id IS NULL OR ok_runs = 0 THEN json_build_object('input', 0, 'output', 0, 'total', 0)
      WHEN measured_runs = 0 THEN NULL
      ELSE json_build_object('input', input_tokens, 'output', output_tokens, 'total', input_tokens + output_tokens)
    END
  $$;
