-- A data field's name has no length limit in the contract, but a btree entry does (about 2.7 kB):
-- the unique constraint on (app_id, name) made an app with a long, hardly compressible field name
-- fail in PostgreSQL, answered 500, and ahead of the plan's own answer. The names are unique by
-- the creation's own check (decisions.md, "Data field names must be unique."); the database keeps
-- the guarantee on the names' digests, whose entries have one small size.
ALTER TABLE app_data_fields DROP CONSTRAINT app_data_fields_app_id_name_key;
CREATE UNIQUE INDEX app_data_fields_app_id_name_digest ON app_data_fields (app_id, md5(name));
