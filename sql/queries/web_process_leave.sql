-- A web process that stops says so, so that the others size their leases without it at once.
DELETE FROM web_processes WHERE id = $1
