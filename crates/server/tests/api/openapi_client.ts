// A Love Letter match between two seats, played by a client generated from /openapi.json
// alone: openapi-typescript's types for every path, body and answer, openapi-fetch's calls.
// Run by openapi.rs, which puts the server's address in place of __BASE_URL__; prints a JSON
// summary on its last line.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";

type GameAction = components["schemas"]["missive.v1.GameAction"];

const client = createClient<paths>({ baseUrl: "__BASE_URL__" });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function fail(what: string, error: unknown): never {
  throw new Error(`${what}: ${JSON.stringify(error)}`);
}

async function play(): Promise<string> {
  const created = await client.POST("/v1/matches", {
    body: {
      options: { loveLetter: { edition: "LOVE_LETTER_EDITION_2019" } },
      seatCount: 2,
      requestId: `create-${Date.now()}-${Math.random()}`,
    },
  });
  if (!created.data) fail("CreateMatch", created.error);
  const matchId = created.data.match?.matchId ?? fail("CreateMatch", "no match id");

  const tokens: string[] = [];
  for (const player of ["ann", "bob"]) {
    const joined = await client.POST("/v1/matches/{matchId}/join", {
      params: { path: { matchId } },
      body: { player, requestId: `join-${player}-${matchId}` },
    });
    if (!joined.data) fail("JoinMatch", joined.error);
    tokens[joined.data.seat] = joined.data.seatToken;
  }

  let acts = 0;
  for (let round = 0; round < 5000; round++) {
    const info = await client.GET("/v1/matches/{matchId}", { params: { path: { matchId } } });
    if (!info.data) fail("GetMatch", info.error);
    const status = info.data.match?.status;
    if (status !== "MATCH_STATUS_ACTIVE") {
      return JSON.stringify({ matchId, status, acts });
    }
    // Each seat plays the first of its legal actions when the match waits for it.
    for (const [seat, token] of tokens.entries()) {
      const viewed = await client.GET("/v1/matches/{matchId}/view", {
        params: { path: { matchId }, query: { seat } },
        headers: bearer(token),
      });
      if (!viewed.data) fail("GetView", viewed.error);
      const legal: GameAction[] = viewed.data.view?.legalActions ?? [];
      if (legal.length === 0) continue;
      const acted = await client.POST("/v1/matches/{matchId}/act", {
        params: { path: { matchId } },
        headers: bearer(token),
        body: { action: legal[0], requestId: `act-${seat}-${viewed.data.view?.version}` },
      });
      if (!acted.data) fail("Act", acted.error);
      acts++;
    }
  }
  fail("the match", "did not end within 5000 rounds");
}

console.log(await play());
