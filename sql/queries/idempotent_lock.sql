-- Held by the request that runs under this key and value, on its connection: a second one finds
-- it taken (409); a process that dies lets go with its connection.
SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked
