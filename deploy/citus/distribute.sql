-- Distributes Missive's PostgreSQL schema over a Citus cluster. Run once on the coordinator,
-- after `missive migrate` has created the tables (empty or not: create_distributed_table
-- copies existing rows into the shards), with no server running. Each step is skipped when its
-- table is already distributed, so the script can be run again after a failure:
--
--   psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f deploy/citus/distribute.sql
--
-- Every table of a match is distributed by match_id and co-located with `matches`, so all of a
-- match's rows live on one worker and every statement about one match is routed there whole.
-- deploy/citus/README.md says what this rests on and what was verified;
-- crates/store/tests/citus.rs fails when a migration adds a table that fits neither list below.

CREATE EXTENSION IF NOT EXISTS citus;

-- Keys every server reads (crates/server/src/auth.rs, `Keys`): a handful of rows, primary key
-- `name`, copied to every worker.
SELECT create_reference_table('server_keys')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'server_keys'::regclass);

-- The match row first: the tables below are co-located with it, and `seats` and `snapshots`
-- keep their foreign keys to it (both on match_id, so Citus accepts them).
SELECT create_distributed_table('matches', 'match_id')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'matches'::regclass);

SELECT create_distributed_table('seats', 'match_id', colocate_with => 'matches')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'seats'::regclass);
SELECT create_distributed_table('events', 'match_id', colocate_with => 'matches')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'events'::regclass);
SELECT create_distributed_table('snapshots', 'match_id', colocate_with => 'matches')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'snapshots'::regclass);
SELECT create_distributed_table('archives', 'match_id', colocate_with => 'matches')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'archives'::regclass);
SELECT create_distributed_table('event_blocks', 'match_id', colocate_with => 'matches')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'event_blocks'::regclass);
SELECT create_distributed_table('turns', 'match_id', colocate_with => 'matches')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'turns'::regclass);
SELECT create_distributed_table('webhooks', 'match_id', colocate_with => 'matches')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'webhooks'::regclass);
SELECT create_distributed_table('webhook_outbox', 'match_id', colocate_with => 'matches')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'webhook_outbox'::regclass);

-- Local tables (they stay on the coordinator, undistributed):
-- local: _sqlx_migrations (written by sqlx's migrator, not by a migration file: the list of
--        migrations applied, read and written only by `missive migrate` and at server start)
