-- The fixed catalogue of data and instruction types (seeded by migrations).
SELECT 'data' AS kind, id, name FROM data_types
UNION ALL
SELECT 'instruction' AS kind, name AS id, name FROM instruction_types
