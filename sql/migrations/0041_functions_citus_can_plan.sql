-- Functions as Citus can plan them, the same on one PostgreSQL. Citus refuses a function that is
-- not IMMUTABLE in a RETURNING clause: unix_seconds becomes IMMUTABLE with a body that is too (an
-- interval's epoch), so it is still inlined (0004). Nor can it plan a SQL function's statement on
-- its tables with parameters, nor an INSERT with a sub-select: PL/pgSQL, one lookup, then the row.
CREATE OR REPLACE FUNCTION unix_seconds(ts timestamptz) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT floor(extract(epoch FROM ts - '1970-01-01 00:00:00+00'::timestamptz))::bigint $$;

CREATE OR REPLACE FUNCTION hand_over_event(
  id text, project_id text, type text, related_table text, related_id text,
  origin text, actor_id text, ip_address text, details jsonb, created_at bigint
) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  type_id text := (SELECT t.id FROM event_types t WHERE t.name = $3);
BEGIN
  INSERT INTO audit_outbox (id, project_id, type_id, related_table, related_id, origin, actor_id, ip_address, details, created_at)
  VALUES ($1, $2, type_id, $4, $5, $6, $7, $8, $9, $10);
END
$$;
