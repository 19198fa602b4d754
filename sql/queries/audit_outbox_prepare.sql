-- The statement by which a change hands its event over (domain/audit.ts recordEvent), prepared
-- once per connection under a name of its own: it is run by EXECUTE in the change's COMMIT
-- message (sql/templates/audit_outbox_insert.sql), so it costs a change neither a round trip
-- nor planning (the PREPARE itself is the first change's round trip on each connection). The row
-- itself is hand_over_event's (sql/migrations/0017).
PREPARE pms_outbox_insert (text, text, text, text, text, text, text, text, jsonb, bigint) AS
SELECT hand_over_event($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
