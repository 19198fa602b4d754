-- One drain at a time, to the end of its transaction: a second waits, then takes what the first
-- left, so events are numbered in the order their rows were taken and never taken twice.
SELECT pg_advisory_xact_lock(hashtextextended('audit_outbox drain', 0))
