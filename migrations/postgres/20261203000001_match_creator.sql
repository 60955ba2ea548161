-- Who created each match: the client the server keyed its limits by when the match was made
-- (`player:<id>` or `addr:<address>`), NULL for matches made before this column existed or by
-- the store's own tools. The server counts a creator's unfinished matches to cap them.
--
-- Adding a nullable column without a default only changes the catalogue. The index is partial
-- (unfinished matches with a creator) so that it stays the size of the open games, not of the
-- history.

ALTER TABLE matches ADD COLUMN creator text;

CREATE INDEX matches_creator_unfinished ON matches (creator)
    WHERE creator IS NOT NULL AND status IN ('open', 'active');
