-- Open matches can be cancelled by their creator and expire when nobody joins them: both end
-- the match (status 'abandoned', by a `closed` event). The cap on a creator's matches now
-- counts only their open matches, the ones a creator can still act on; a started match ends
-- by play.
--
-- `matches_creator_open` counts a creator's open matches (the cap, before each creation by a
-- client with one) and replaces `matches_creator_unfinished`, which also held active matches.
-- `matches_open_idle` finds the open matches idle longest (an open match's row is written by
-- each of its events, so `updated_at` is its last event's time), for the expiry worker's
-- bounded look. Open matches are a small part of all matches, so both stay small.

CREATE INDEX matches_creator_open ON matches (creator)
    WHERE creator IS NOT NULL AND status = 'open';

CREATE INDEX matches_open_idle ON matches (updated_at) WHERE status = 'open';

DROP INDEX matches_creator_unfinished;
