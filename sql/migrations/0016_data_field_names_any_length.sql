-- A data field's name has no length limit, but a btree entry does: a unique (app_id, name) failed
-- long names with a 500. Uniqueness is checked on creation; the database keeps it on digests.
ALTER TABLE app_data_fields DROP CONSTRAINT app_data_fields_app_id_name_key;
CREATE UNIQUE INDEX app_data_fields_app_id_name_digest ON app_data_fields (app_id, md5(name));
