-- Seats held for an invitation, by match: ListMatches leaves out every match with one, and
-- without this index the check walks the seats' key filtering on `invited` (on PostgreSQL a
-- merge anti-join over all seats for a listing of every status: seconds at a million
-- matches). Seats held for an invitation are a small part of all seats, so the index stays
-- small.

CREATE INDEX seats_invited ON seats (match_id) WHERE invited;
