-- A disabled consumer's keys no longer authenticate (owners_active, sql/migrations/0010). On one
-- PostgreSQL the consumer's trigger has done it already and this finds nothing; on Citus, where
-- the keys are on every node, release drops that trigger and this does it (docs/citus.md).
UPDATE api_keys SET owners_active = false
WHERE created_by = $1 AND status <> 'revoked' AND owners_active
