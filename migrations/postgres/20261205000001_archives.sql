-- Finished matches' logs, archived: a match that ended (finished or abandoned) some time ago
-- has its event rows and snapshots replaced, in one transaction, by one row here holding every
-- event, compressed, and the last hash its events must chain to (crates/store/src/archive.rs).
-- An event row costs about 410 bytes with its indexes; an archived event, about 57.
--
-- matches.archived marks the match; `version` and `last_hash` are then its final head, since
-- there is no last event row left to read it from. `matches_to_archive` finds the matches still
-- to archive, oldest ending first, without visiting those already archived.
--
-- Distribution: keyed by match_id like every table, co-located with `matches`.

ALTER TABLE matches ADD COLUMN archived boolean NOT NULL DEFAULT false;

CREATE TABLE archives (
    match_id  uuid   NOT NULL,
    events    bigint NOT NULL CHECK (events >= 0),
    last_hash bytea  NOT NULL CHECK (length(last_hash) = 32),
    -- DEFLATE-compressed already.
    body      bytea  NOT NULL,
    PRIMARY KEY (match_id)
);

CREATE INDEX matches_to_archive ON matches (updated_at)
    WHERE status IN ('finished', 'abandoned') AND NOT archived;
