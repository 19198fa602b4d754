-- unix_seconds declared STABLE, as extract() is: a SQL function declared stricter than its body
-- is never inlined, so every timestamp read went through the function executor.
CREATE OR REPLACE FUNCTION unix_seconds(ts timestamptz) RETURNS bigint
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT extract(epoch FROM ts)::bigint $$;
