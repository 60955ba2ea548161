-- Turn deadlines and bot turns: one row per seat the server must act for if the seat does not.
--
-- A row is written by the same statement as the event that makes its seat awaited, so a commit
-- can never lose a deadline. `version` is the seq after which the seat is awaited: the row is
-- played with that expected version, so a seat that acted since makes it a no-op. `bot` names
-- the strategy of a bot seat (due at once); NULL is a human seat's deadline. `lease_until` is
-- set by the replica that claimed the row; an expired lease lets another claim it again.
--
-- Keyed by match_id first, like every table; the due_at index serves the claim query.

CREATE TABLE turns (
    match_id    uuid        NOT NULL,
    seat        smallint    NOT NULL CHECK (seat BETWEEN 0 AND 255),
    version     bigint      NOT NULL CHECK (version >= 0),
    due_at      timestamptz NOT NULL,
    bot         text,
    lease_until timestamptz,
    PRIMARY KEY (match_id, seat)
);

CREATE INDEX turns_due ON turns (due_at);
