-- Keys the servers share: the key seat tokens, webhook secrets and idempotent match ids of
-- retried requests are derived from (HMAC-SHA256), so that every replica, and a restarted
-- server, answers a retried request with what the first answer held.
--
-- Distribution: the one table not keyed by match_id. It holds a handful of rows that every
-- node reads: a reference table (Citus: SELECT create_reference_table('server_keys')).

CREATE TABLE server_keys (
    name text  NOT NULL,
    key  bytea NOT NULL CHECK (length(key) = 32),
    PRIMARY KEY (name)
);
