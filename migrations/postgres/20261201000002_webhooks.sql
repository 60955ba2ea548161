-- "Your turn" webhooks: a seat may register one URL per match; appends that make a seat
-- awaited enqueue a notification for it in webhook_outbox, in the same statement as the event,
-- and a delivery worker posts it (signed, retried with back-off) until it is delivered or
-- given up. The outbox row is the delivery record.
--
-- Distribution: match_id leads both primary keys and no constraint spans matches.

CREATE TABLE webhooks (
    match_id   uuid        NOT NULL,
    seat       smallint    NOT NULL CHECK (seat BETWEEN 0 AND 255),
    url        text        NOT NULL,
    -- The HMAC-SHA256 key the payloads are signed with; shown to the seat once.
    secret     bytea       NOT NULL CHECK (length(secret) = 32),
    created_at timestamptz NOT NULL,
    PRIMARY KEY (match_id, seat)
);

CREATE TABLE webhook_outbox (
    match_id        uuid        NOT NULL,
    -- The event that made the seat awaited.
    seq             bigint      NOT NULL CHECK (seq >= 1),
    seat            smallint    NOT NULL CHECK (seat BETWEEN 0 AND 255),
    url             text        NOT NULL,
    -- The exact bytes posted and signed.
    body            text        NOT NULL,
    attempts        integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- When the next attempt is due; NULL once delivered or given up.
    next_attempt_at timestamptz,
    -- A worker that claimed the row owns it until then.
    lease_until     timestamptz,
    delivered_at    timestamptz,
    last_status     integer,
    last_error      text,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (match_id, seq, seat)
);

CREATE INDEX webhook_outbox_pending ON webhook_outbox (next_attempt_at)
    WHERE next_attempt_at IS NOT NULL;
