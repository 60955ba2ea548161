-- Appends write one row per event and nothing else.
--
-- The head of a match (its version and last hash) is its last event, read through the events
-- primary key; an append is an INSERT of the next seqs that requires the previous event (or, for
-- the first event, the match row at version 0) with the expected hash, and the primary key
-- settles races. matches.version and matches.last_hash keep the head as of creation only; the
-- matches row is written again only when an append changes the status or the seats.
--
-- Idempotency moves onto the events: the first event of each request carries request_last, the
-- seq of the request's last event, and a unique index on (match_id, request_id) over those rows
-- turns a retried request into a lookup. The index leads with match_id, like every key here.

ALTER TABLE events ADD COLUMN request_last bigint CHECK (request_last >= seq);

UPDATE events e SET request_last = r.last_seq
FROM requests r
WHERE e.match_id = r.match_id AND e.seq = r.first_seq AND e.request_id = r.request_id;

CREATE UNIQUE INDEX events_request ON events (match_id, request_id)
    WHERE request_last IS NOT NULL;

DROP TABLE requests;

-- An event is inserted only after its predecessor, or for seq 1 after the match row was seen,
-- and matches are never deleted; the foreign key's row lock on the match for every event is
-- the cost of a guarantee the append already gives.
ALTER TABLE events DROP CONSTRAINT events_match_id_fkey;
