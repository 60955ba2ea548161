-- Player accounts and invitations (SQLite mirror of migrations/postgres).
--
-- A seat taken with a player token (a JWT whose subject is the player) is bound to that
-- player's account, who then acts and views with the player token alone and finds the match in
-- their list of matches. The account id is the operator's; it is never shown to other players.
-- The index serves "the matches of this player" (ListMyMatches).
--
-- A seat created `invited` is held for an invited player: only the holder of its invite code
-- (derived from the servers' shared key, never stored) may join it, and a match with invited
-- seats is not listed. Set at creation, never changed.

ALTER TABLE seats ADD COLUMN account text;
ALTER TABLE seats ADD COLUMN invited integer NOT NULL DEFAULT 0 CHECK (invited IN (0, 1));

CREATE INDEX seats_account ON seats (account, match_id) WHERE account IS NOT NULL;
