INSERT INTO app_instructions (id, app_id, position, type, instruction)
SELECT i.id, $1, i.position, i.type, i.instruction
FROM unnest($2::text[], $3::int[], $4::text[], $5::text[]) AS i (id, position, type, instruction)
