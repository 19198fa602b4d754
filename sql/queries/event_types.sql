-- The event types' fixed ids (seeded by the first migration), read once per process.
SELECT id, name FROM event_types
