SELECT count(*) AS total FROM projects
