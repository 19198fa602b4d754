-- Claims take turns (one short statement each), so the leases one counts are all there are. Not
-- waiting for the WAL flush: a claim lost with a crash is a delivery claimed again, sent at least once.
SELECT pg_advisory_xact_lock(7301992), set_config('synchronous_commit', 'off', true)
