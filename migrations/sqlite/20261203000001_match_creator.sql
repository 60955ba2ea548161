-- Who created each match: the client the server keyed its limits by when the match was made
-- (`player:<id>` or `addr:<address>`), NULL for matches made before this column existed or by
-- the store's own tools. The server counts a creator's unfinished matches to cap them.
-- The same column and partial index as on PostgreSQL.

ALTER TABLE matches ADD COLUMN creator text;

CREATE INDEX matches_creator_unfinished ON matches (creator)
    WHERE creator IS NOT NULL AND status IN ('open', 'active');
