-- Reminders before a turn deadline: a match may set `turn_reminder_secs`; a human seat's
-- pending turn then carries `remind_at` (its deadline less that much), and once it passes the
-- turn worker queues a "turn_reminder" notification for the seat's webhook and clears it, in
-- one transaction. The outbox row's `kind` tells the two notifications of one event apart.

ALTER TABLE matches ADD COLUMN turn_reminder_secs integer CHECK (turn_reminder_secs >= 1);

ALTER TABLE turns ADD COLUMN remind_at timestamptz;

CREATE INDEX turns_remind ON turns (remind_at) WHERE remind_at IS NOT NULL;

ALTER TABLE webhook_outbox ADD COLUMN kind text NOT NULL DEFAULT 'your_turn'
    CHECK (kind IN ('your_turn', 'turn_reminder'));

ALTER TABLE webhook_outbox DROP CONSTRAINT webhook_outbox_pkey,
    ADD PRIMARY KEY (match_id, seq, seat, kind);
