-- decisions.md, "Lists": newest first is the order in which the records were made, within one
-- second too; the id decides only exact ties. Keys and apps were stamped with the second alone
-- (now_seconds), so within a second their lists fell back to the ids' random order. They now keep
-- their transaction's start to the microsecond; the API still answers whole seconds, rounded down
-- (extract's numeric cast to bigint rounds half up, which would show a record made at .5 or later
-- as made in the next second), so a shown time is the second the record was made in, and the
-- lists' order agrees with it. Rows of before keep their whole seconds, for which both agree.
ALTER TABLE api_keys ALTER COLUMN created_at SET DEFAULT now();
ALTER TABLE apps ALTER COLUMN created_at SET DEFAULT now();

CREATE OR REPLACE FUNCTION unix_seconds(ts timestamptz) RETURNS bigint
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT floor(extract(epoch FROM ts))::bigint $$;
