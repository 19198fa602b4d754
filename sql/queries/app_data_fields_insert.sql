INSERT INTO app_data_fields (id, app_id, position, name, type_id, placeholder, required)
SELECT f.id, $1, f.position, f.name, f.type_id, f.placeholder, f.required
FROM unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::boolean[])
  AS f (id, position, name, type_id, placeholder, required)
