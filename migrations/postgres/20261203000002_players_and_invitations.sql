-- Player accounts and invitations.
--
-- A seat taken with a player token (a JWT whose subject is the player) is bound to that
-- player's account, who then acts and views with the player token alone and finds the match in
-- their list of matches. The account id is the operator's; it is never shown to other players.
-- The index serves "the matches of this player" (ListMyMatches). It is not unique and spans
-- matches, so it is an index only: no constraint crosses matches, as the first migration asks.
--
-- A seat created `invited` is held for an invited player: only the holder of its invite code
-- (derived from the servers' shared key, never stored) may join it, and a match with invited
-- seats is not listed. Set at creation, never changed.

ALTER TABLE seats ADD COLUMN account text;
ALTER TABLE seats ADD COLUMN invited boolean NOT NULL DEFAULT false;

CREATE INDEX seats_account ON seats (account, match_id) WHERE account IS NOT NULL;
