-- The same indexes as on PostgreSQL (migrations/postgres, same name): a creator's open matches,
-- counted for the cap, and the open matches idle longest, which expire. The statements spell
-- out `status = 'open'` as the indexes' conditions do, so SQLite uses them.

CREATE INDEX matches_creator_open ON matches (creator)
    WHERE creator IS NOT NULL AND status = 'open';

CREATE INDEX matches_open_idle ON matches (updated_at) WHERE status = 'open';

DROP INDEX matches_creator_unfinished;
