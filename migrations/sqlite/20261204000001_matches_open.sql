-- Open matches in match_id order (SQLite mirror of migrations/postgres, which has the same
-- index for ListMatches of open matches of any kind after a cursor). SQLite plans its
-- statement once, with the filters written `?1 IS NULL OR status = ?1`, so its ListMatches
-- walks the primary key and does not use this index (nor `matches_status_kind`); it is kept
-- for the same indexes on both backends.

CREATE INDEX matches_open ON matches (match_id) WHERE status = 'open';
