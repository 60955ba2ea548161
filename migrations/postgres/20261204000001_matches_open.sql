-- Open matches in match_id order: ListMatches of open matches of any kind, a page at a time
-- after a cursor. `matches_status_kind` leads with the kind, so it gives this order only for
-- one kind; without this index the listing walks `matches_pkey` and filters on the status.
-- Open matches are a small part of all matches, so the index stays small.

CREATE INDEX matches_open ON matches (match_id) WHERE status = 'open';
