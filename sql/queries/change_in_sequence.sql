-- For a change that reads many projects' shards and then writes a reference table (a consumer's
-- disable): on Citus both go over one connection per node, as it requires of such a transaction;
-- on one PostgreSQL the setting is a name and nothing more (docs/citus.md).
SELECT set_config('citus.multi_shard_modify_mode', 'sequential', true)
