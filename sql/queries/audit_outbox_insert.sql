-- A change hands its event over (domain/audit.ts recordEvent). An unknown type name leaves type_id
-- null, which fails the change instead of the drain.
INSERT INTO audit_outbox (id, project_id, type_id, related_table, related_id, origin, actor_id, ip_address, details, created_at)
VALUES ($1, $2, (SELECT id FROM event_types WHERE name = $3), $4, $5, $6, $7, $8, $9, $10)
