-- Newest first means creation order within a second too, the id deciding only exact ties, so keys
-- and apps keep their transaction's start to the microsecond. The API still answers whole seconds,
-- rounded down (a cast to bigint would round half up), so shown times agree with the order.
ALTER TABLE api_keys ALTER COLUMN created_at SET DEFAULT now();
ALTER TABLE apps ALTER COLUMN created_at SET DEFAULT now();

CREATE OR REPLACE FUNCTION unix_seconds(ts timestamptz) RETURNS bigint
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT floor(extract(epoch FROM ts))::bigint $$;
