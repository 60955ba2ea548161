-- A live match's older events, packed: what `Store::pack_live` writes in place of a run of a
-- match's oldest event rows (crates/store/src/archive.rs's format, the run following the event
-- `first_seq - 1`, whose hash is `prev_hash`). The newest rows of a match stay rows, so an
-- append still checks its head against a row, and a match's blocks cover seq 1 to some seq
-- with no gap; the rows follow. Reads unpack the blocks they need, recomputing their chain, and
-- refuse a block whose events do not hash to its `last_hash`.
--
-- A request's events are never split between a block and the rows. Its id is no longer in the
-- request index once packed: a retry that does not find it there reads the match's blocks.
--
-- Archiving an ended match takes its blocks with its rows into the one `archives` row.
--
-- Distribution: keyed by match_id like every table, co-located with `matches`.

CREATE TABLE event_blocks (
    match_id  uuid   NOT NULL,
    last_seq  bigint NOT NULL,
    first_seq bigint NOT NULL CHECK (first_seq >= 1 AND first_seq <= last_seq),
    prev_hash bytea  NOT NULL CHECK (length(prev_hash) = 32),
    last_hash bytea  NOT NULL CHECK (length(last_hash) = 32),
    -- DEFLATE-compressed already.
    body      bytea  NOT NULL,
    PRIMARY KEY (match_id, last_seq)
);
