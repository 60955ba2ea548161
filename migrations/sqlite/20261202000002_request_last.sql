-- Idempotency moves onto the events, as on PostgreSQL (20261130000001_append_one_row.sql): the
-- first event of each request carries request_last, the seq of the request's last event, and a
-- unique index on (match_id, request_id) over those rows turns a retried request into a lookup.
-- The requests table's rows move onto their first events, and the table goes.

ALTER TABLE events ADD COLUMN request_last integer CHECK (request_last >= seq);

UPDATE events SET request_last = (
    SELECT r.last_seq FROM requests r
    WHERE r.match_id = events.match_id AND r.first_seq = events.seq
        AND r.request_id = events.request_id
)
WHERE request_id IS NOT NULL;

CREATE UNIQUE INDEX events_request ON events (match_id, request_id)
    WHERE request_last IS NOT NULL;

DROP TABLE requests;
