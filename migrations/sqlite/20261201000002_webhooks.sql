-- "Your turn" webhooks (SQLite mirror of migrations/postgres). Outbox times are integer
-- microseconds since the Unix epoch, so that due rows can be found by comparison.

CREATE TABLE webhooks (
    match_id   text    NOT NULL,
    seat       integer NOT NULL CHECK (seat BETWEEN 0 AND 255),
    url        text    NOT NULL,
    secret     blob    NOT NULL CHECK (length(secret) = 32),
    created_at integer NOT NULL,
    PRIMARY KEY (match_id, seat)
);

CREATE TABLE webhook_outbox (
    match_id        text    NOT NULL,
    seq             integer NOT NULL CHECK (seq >= 1),
    seat            integer NOT NULL CHECK (seat BETWEEN 0 AND 255),
    url             text    NOT NULL,
    body            text    NOT NULL,
    attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at integer,
    lease_until     integer,
    delivered_at    integer,
    last_status     integer,
    last_error      text,
    created_at      integer NOT NULL,
    PRIMARY KEY (match_id, seq, seat)
);

CREATE INDEX webhook_outbox_pending ON webhook_outbox (next_attempt_at)
    WHERE next_attempt_at IS NOT NULL;
