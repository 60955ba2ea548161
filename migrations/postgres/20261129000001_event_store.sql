-- The event store: matches, their seats, their hash-chained event logs, the request ids that
-- make appends idempotent, and state snapshots.
--
-- Distribution: every table has match_id leading its primary key, and no constraint spans two
-- matches (the only foreign keys join rows of the same match_id). The schema can therefore be
-- distributed by match_id (Citus: SELECT create_distributed_table('<table>', 'match_id') for each
-- table, co-located) without change. Keep it that way in later migrations.
--
-- Never edit this file once applied; add a new migration instead.

CREATE TABLE matches (
    match_id          uuid        NOT NULL,
    kind              text        NOT NULL,
    config            jsonb       NOT NULL,
    rules_version     integer     NOT NULL CHECK (rules_version >= 0),
    seat_count        smallint    NOT NULL CHECK (seat_count BETWEEN 0 AND 255),
    status            text        NOT NULL CHECK (status IN ('open', 'active', 'finished', 'abandoned')),
    -- The seed stays secret until the match is over; seed_hash is the public commitment.
    seed              bytea       NOT NULL CHECK (length(seed) = 32),
    seed_hash         bytea       NOT NULL CHECK (length(seed_hash) = 32),
    turn_timeout_secs integer     CHECK (turn_timeout_secs >= 0),
    -- The seq of the last event and its hash: appends compare-and-set these.
    version           bigint      NOT NULL DEFAULT 0 CHECK (version >= 0),
    last_hash         bytea       NOT NULL CHECK (length(last_hash) = 32),
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    PRIMARY KEY (match_id)
);

CREATE INDEX matches_status_kind ON matches (status, kind, match_id);

CREATE TABLE seats (
    match_id   uuid     NOT NULL REFERENCES matches (match_id),
    seat       smallint NOT NULL CHECK (seat BETWEEN 0 AND 255),
    player     text,
    -- SHA-256 of the seat token; the token itself is never stored.
    token_hash bytea    CHECK (length(token_hash) = 32),
    bot        text,
    PRIMARY KEY (match_id, seat)
);

CREATE TABLE events (
    match_id   uuid        NOT NULL REFERENCES matches (match_id),
    seq        bigint      NOT NULL CHECK (seq >= 1),
    kind       text        NOT NULL,
    actor      smallint    CHECK (actor BETWEEN 0 AND 255),
    request_id text,
    payload    jsonb       NOT NULL,
    at         timestamptz NOT NULL,
    prev_hash  bytea       NOT NULL CHECK (length(prev_hash) = 32),
    hash       bytea       NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (match_id, seq)
);

-- One row per client request id a match has accepted: its primary key is what turns a retried
-- append into a lookup instead of a second event.
CREATE TABLE requests (
    match_id   uuid   NOT NULL REFERENCES matches (match_id),
    request_id text   NOT NULL,
    first_seq  bigint NOT NULL,
    last_seq   bigint NOT NULL,
    PRIMARY KEY (match_id, request_id)
);

CREATE TABLE snapshots (
    match_id      uuid    NOT NULL REFERENCES matches (match_id),
    seq           bigint  NOT NULL CHECK (seq >= 0),
    rules_version integer NOT NULL,
    state         jsonb   NOT NULL,
    PRIMARY KEY (match_id, seq)
);
