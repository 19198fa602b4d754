-- A change's key check rides in its BEGIN, sent by the simple query protocol, which plans every
-- statement anew; inside a PL/pgSQL function its plan is kept per connection.
CREATE FUNCTION key_usable_status(key_id text) RETURNS text LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT status FROM api_key_usable WHERE id = key_id);
END
$$;
