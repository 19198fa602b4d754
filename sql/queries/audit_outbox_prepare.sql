-- The statement by which a change hands its event over (domain/audit.ts recordEvent), prepared
-- once per connection under a name of its own: it is run by EXECUTE in the change's COMMIT
-- message (sql/templates/audit_outbox_insert.sql), so it costs a change neither a round trip
-- nor planning (the PREPARE itself is the first change's round trip on each connection). An
-- unknown type name leaves type_id null, which fails the change instead of the drain.
PREPARE pms_outbox_insert (text, text, text, text, text, text, text, text, jsonb, bigint) AS
INSERT INTO audit_outbox (id, project_id, type_id, related_table, related_id, origin, actor_id, ip_address, details, created_at)
VALUES ($1, $2, (SELECT id FROM event_types WHERE name = $3), $4, $5, $6, $7, $8, $9, $10)
