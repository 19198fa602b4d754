-- Whether any handed-over event waits for the drain (the worker's sweep for lost wake-ups).
SELECT EXISTS (SELECT 1 FROM audit_outbox) AS pending
