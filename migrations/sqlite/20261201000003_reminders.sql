-- Reminders before a turn deadline (SQLite mirror of migrations/postgres). SQLite cannot
-- change a primary key in place, so the outbox is rebuilt with `kind` in its key.

ALTER TABLE matches ADD COLUMN turn_reminder_secs integer CHECK (turn_reminder_secs >= 1);

ALTER TABLE turns ADD COLUMN remind_at integer;

CREATE INDEX turns_remind ON turns (remind_at) WHERE remind_at IS NOT NULL;

CREATE TABLE webhook_outbox_new (
    match_id        text    NOT NULL,
    seq             integer NOT NULL CHECK (seq >= 1),
    seat            integer NOT NULL CHECK (seat BETWEEN 0 AND 255),
    kind            text    NOT NULL DEFAULT 'your_turn'
                            CHECK (kind IN ('your_turn', 'turn_reminder')),
    url             text    NOT NULL,
    body            text    NOT NULL,
    attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at integer,
    lease_until     integer,
    delivered_at    integer,
    last_status     integer,
    last_error      text,
    created_at      integer NOT NULL,
    PRIMARY KEY (match_id, seq, seat, kind)
);

INSERT INTO webhook_outbox_new (match_id, seq, seat, url, body, attempts, next_attempt_at,
        lease_until, delivered_at, last_status, last_error, created_at)
    SELECT match_id, seq, seat, url, body, attempts, next_attempt_at, lease_until,
        delivered_at, last_status, last_error, created_at
    FROM webhook_outbox;

DROP TABLE webhook_outbox;

ALTER TABLE webhook_outbox_new RENAME TO webhook_outbox;

CREATE INDEX webhook_outbox_pending ON webhook_outbox (next_attempt_at)
    WHERE next_attempt_at IS NOT NULL;
