-- Keys the servers share: the key seat tokens, webhook secrets and idempotent match ids of
-- retried requests are derived from (HMAC-SHA256), so that a restarted server answers a
-- retried request with what the first answer held. Same shape as on PostgreSQL.

CREATE TABLE server_keys (
    name text NOT NULL,
    key  blob NOT NULL CHECK (length(key) = 32),
    PRIMARY KEY (name)
);
