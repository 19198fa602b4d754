-- The check of a change's key rides in its BEGIN (sql/templates/key_check_begin.sql), sent by the
-- simple query protocol, which plans every statement anew: the check written out there was
-- planned on every change, a third of PostgreSQL's time for a key creation. Behind a PL/pgSQL
-- function the check is planned once per connection and kept. The rule is still the view
-- api_key_usable.
CREATE FUNCTION key_usable_status(key_id text) RETURNS text LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT status FROM api_key_usable WHERE id = key_id);
END
$$;
