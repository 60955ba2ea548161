// How the web client shows each game: its creation options, its table, its legal actions as
// readable buttons and its history entries. One entry per game kind, keyed as the server names
// it; `field` is the game's key in the API's oneofs (`options.loveLetter`, `game.loveLetter`).
//
// Fields at their zero value may be missing from the JSON (seat 0 as `{}`), so every number is
// read with a default. Responses also carry enums at their zero value, `…_UNSPECIFIED`, which
// means "none" (no guess, no location, no rank): every enum is read through `present`, which
// makes that value absent, so it is never shown as if it were one.
"use strict";

(function () {
  const num = (x) => Number(x ?? 0);
  const present = (v) => (v && !String(v).endsWith("_UNSPECIFIED") ? v : undefined);
  // What a game message this page does not know yet looks like, its enums' zero values left out.
  const raw = (x) => JSON.stringify(x, (k, v) => (typeof v === "string" ? present(v) : v));
  const words = (s) => String(s).replace(/([A-Z])/g, " $1").toLowerCase();
  const title = (s) => String(s).split("-").map((w, i) => (i > 0 && ["von", "e"].includes(w) ? w : w.charAt(0).toUpperCase() + w.slice(1))).join(" ");
  const enumName = (prefix, v) => (present(v) ? String(v).replace(prefix, "").toLowerCase().replace(/_/g, " ") : "");
  const list = (xs) => (xs || []).join(", ");

  // Each game's GameInfo from ListGames, by kind: its cards and their texts (see `useCatalogue`).
  const catalogue = {};

  // ---- Love Letter ------------------------------------------------------------------------

  // The cards' roles, values and texts come from the server's catalogue (ListGames), which
  // app.js loads once into `catalogue`; without it a card shows its id.
  const LL_TARGETED = ["GUARD", "PRIEST", "BARON", "PRINCE", "KING"].map((r) => `LOVE_LETTER_ROLE_${r}`);
  let llEdition = null; // the catalogue's edition the maps below were built for
  let llCards = new Map(); // card id → its role's entry
  let llRoles = new Map(); // role → { role, value, name, count, effect }

  /** Reads the cards of the edition the match shown plays. */
  function llUse(ctx) {
    const editions = catalogue["love-letter"]?.catalogue?.loveLetter?.editions || [];
    const wanted = present(ctx?.game?.edition) || present(ctx?.view?.match?.options?.loveLetter?.edition);
    const edition = editions.find((e) => e.edition === wanted) || editions[0] || null;
    if (edition === llEdition) return;
    llEdition = edition;
    llCards = new Map();
    llRoles = new Map();
    for (const r of edition?.roles || []) {
      const entry = { role: r.role, value: num(r.value), name: r.name, count: num(r.count), effect: r.effect || "" };
      llRoles.set(r.role, entry);
      for (const card of r.cards || []) llCards.set(card, entry);
    }
  }
  const llRole = (card) => llCards.get(card) || { value: "", name: card, effect: "" };
  const llCardName = (card) => { const r = llRole(card); return r.role ? `${r.name} (${r.value})` : String(card); };
  const llGuess = (g) => llRoles.get(g)?.name || enumName("LOVE_LETTER_ROLE_", g);

  function llCard(h, card, small) {
    const { value, name, effect } = llRole(card);
    return h("div", { class: `card${small ? " small" : ""}${card.includes("♥") ? " red" : ""}`, title: effect ? `${name} (${value}): ${effect}` : null, dataset: { card } },
      h("div", { class: "value" }, value),
      h("div", { class: "name" }, name),
      h("div", { class: "id" }, card));
  }

  /** What each of these cards does, one line a role: the rules at hand beside the cards. */
  function llEffects(h, cards) {
    const roles = [...new Set(cards.map((c) => llRole(c)).filter((r) => r.effect))];
    return roles.length ? h("ul", { class: "effects small" }, roles.map((r) => h("li", {}, h("b", {}, `${r.name} (${r.value})`), `: ${r.effect}`))) : null;
  }

  const loveLetter = {
    name: "Love Letter",
    field: "loveLetter",
    minSeats: 2,
    maxSeats: 6,
    counting: true,
    scoreUnit: "tokens",
    optionsForm(h) {
      return h("div", { class: "row" },
        h("label", {}, "Edition", h("select", { name: "edition" },
          h("option", { value: "LOVE_LETTER_EDITION_2019" }, "2019 (21 cards, 2–6 players)"),
          h("option", { value: "LOVE_LETTER_EDITION_CLASSIC" }, "classic (16 cards, 2–4 players)"))),
        h("label", {}, "First player", h("input", { name: "firstPlayer", type: "number", min: 0, max: 5, placeholder: "drawn" })));
    },
    readOptions(box) {
      const o = { edition: box.querySelector("[name=edition]").value };
      const first = box.querySelector("[name=firstPlayer]").value;
      if (first !== "") o.firstPlayer = num(first);
      return { loveLetter: o };
    },
    describeOptions(o) {
      return o.edition === "LOVE_LETTER_EDITION_CLASSIC" ? "classic edition" : "2019 edition";
    },
    table(ctx) {
      llUse(ctx);
      const { h, game: g } = ctx;
      const turn = g.turn;
      const players = (g.players || []).map((p) => {
        const seat = p.seat ?? 0;
        return h("div", { class: `player${turn !== undefined && num(turn) === seat ? " turn" : ""}${p.out ? " out" : ""}` },
          h("h3", {}, ctx.name(seat),
            seat === ctx.seat ? h("span", { class: "badge you" }, "you") : null,
            turn !== undefined && num(turn) === seat ? h("span", { class: "badge turn" }, "turn") : null,
            p.out ? h("span", { class: "badge out" }, "out") : null,
            p.protected ? h("span", { class: "badge safe" }, "protected") : null),
          h("div", { class: "small" }, h("span", { class: "tokens" }, "♥".repeat(num(p.tokens)) || "–"), ` ${num(p.tokens)} of ${num(g.tokensToWin)} tokens · ${num(p.handCount)} in hand`),
          h("div", { class: "cards" }, (p.played || []).map((c) => llCard(h, c, true))));
      });
      const last = g.lastRound;
      return h("div", { class: "table" },
        h("div", { class: "center" },
          h("div", { class: "stat" }, "Round", h("b", {}, num(g.round))),
          h("div", { class: "stat" }, "Deck", h("b", { id: "deck-count" }, num(g.deckCount))),
          (g.faceUp || []).length ? h("div", {}, "Set aside face up", h("div", { class: "cards" }, g.faceUp.map((c) => llCard(h, c, true)))) : null,
          last ? h("div", { class: "small" }, h("b", {}, `Round ${num(last.round)}`), ` won by ${(last.winners || []).map((s) => ctx.name(s ?? 0)).join(" and ")}`,
            last.reason === "LOVE_LETTER_ROUND_END_DECK_EMPTY" ? " (the deck ran out" + ((last.hands || []).length ? ": " + last.hands.map((x) => `${ctx.name(x.seat ?? 0)} held ${llCardName(x.card)}`).join(", ") : "") + ")" : " (last one standing)",
            last.setAside ? `; the set-aside card was ${llCardName(last.setAside)}` : "") : null),
        h("div", { class: "players" }, players),
        ctx.seat !== undefined ? h("div", { class: "hand" },
          h("h3", {}, "Your hand"),
          h("div", { class: "cards", id: "hand" }, (g.hand || []).map((c) => llCard(h, c))),
          (g.chancellorChoice || []).length ? h("div", {}, h("h3", {}, "Drawn with the Chancellor: keep one card of these and your hand, the other two go to the bottom"),
            h("div", { class: "cards" }, g.chancellorChoice.map((c) => llCard(h, c)))) : null,
          llEffects(h, [...(g.hand || []), ...(g.chancellorChoice || [])])) : null);
    },
    rules(ctx) {
      llUse(ctx);
      const { h } = ctx;
      const roles = [...llRoles.values()];
      if (!roles.length) return null;
      return h("div", {},
        h("p", { class: "small" }, `The ${llEdition.edition === "LOVE_LETTER_EDITION_CLASSIC" ? "classic" : "2019"} deck: ${num(llEdition.cardCount)} cards. On your turn draw a card, then play one of your two; the last one standing, or the highest card when the deck runs out, wins the round and a token.`),
        h("ul", { class: "effects small" }, roles.map((r) => h("li", {}, h("b", {}, `${r.value} ${r.name}`), ` ×${r.count}: ${r.effect}`))));
    },
    action(a, ctx) {
      llUse(ctx);
      if (a.play) {
        const p = a.play;
        const group = `Play ${llCardName(p.card)}`;
        if (p.target === undefined) {
          const needs = LL_TARGETED.includes(llRole(p.card).role);
          return { group, label: needs ? "no one can be chosen" : "play it" };
        }
        const who = num(p.target) === ctx.seat ? "yourself" : ctx.name(num(p.target));
        return { group, label: present(p.guess) ? `${who}: ${llGuess(p.guess)}?` : `on ${who}` };
      }
      if (a.chancellorKeep) {
        const k = a.chancellorKeep;
        return { group: "Chancellor: keep", label: `${llCardName(k.keep)}; bottom ${list((k.bottom || []).map(llCardName))}` };
      }
      return { group: "", label: raw(a) };
    },
    event(e, ctx) {
      llUse(ctx);
      const n = (s) => ctx.name(num(s));
      const [kind, x] = Object.entries(e)[0] || ["?", {}];
      switch (kind) {
        case "roundStarted": return `Round ${num(x.round)} starts; ${n(x.firstPlayer)} plays first${(x.faceUp || []).length ? `; face up: ${list(x.faceUp.map(llCardName))}` : ""}.`;
        case "dealt": return `${n(x.seat)} was dealt ${llCardName(x.card)}.`;
        case "turnStarted": return `${n(x.seat)}'s turn.`;
        case "drew": return `${n(x.seat)} drew ${llCardName(x.card)}.`;
        case "played": return `${n(x.seat)} played ${llCardName(x.card)}${x.target !== undefined ? ` on ${n(x.target)}` : ""}${present(x.guess) ? `, naming ${llGuess(x.guess)}` : ""}.`;
        case "noEffect": return `${llCardName(x.card)} had no effect: everyone else is protected.`;
        case "guardGuess": return `${n(x.seat)} guessed ${llGuess(x.guess)} for ${n(x.target)}: ${x.hit ? "right!" : "wrong"}.`;
        case "priestSaw": return `${n(x.seat)} saw ${n(x.target)}'s ${llCardName(x.card)}.`;
        case "baronCompared": return `Baron: ${n(x.seat)} ${llCardName(x.seatCard)} against ${n(x.target)} ${llCardName(x.targetCard)}${x.loser !== undefined ? `; ${n(x.loser)} is out` : "; a tie"}.`;
        case "kingTraded": return `King: ${n(x.seat)} gave ${llCardName(x.seatGave)}, ${n(x.target)} gave ${llCardName(x.targetGave)}.`;
        case "princeDiscarded": return `Prince: ${n(x.target)} discarded ${llCardName(x.card)}.`;
        case "princeDrew": return `${n(x.target)} drew ${llCardName(x.card)}${x.fromSetAside ? " (the set-aside card)" : ""}.`;
        case "chancellorDrew": return `${n(x.seat)} drew ${list((x.cards || []).map(llCardName))} with the Chancellor.`;
        case "chancellorReturned": return `${n(x.seat)} returned ${num(x.count)} card(s) to the bottom.`;
        case "chancellorKept": return `${n(x.seat)} kept ${llCardName(x.kept)}.`;
        case "playerOut": return `${n(x.seat)} is out${(x.discarded || []).length ? `, discarding ${list(x.discarded.map(llCardName))}` : ""}.`;
        case "roundEnded": return `Round ${num(x.round)} ends: ${(x.winners || []).map(n).join(" and ")} won it.`;
        case "tokenGained": return `${n(x.seat)} gains a token${x.reason === "LOVE_LETTER_TOKEN_REASON_SPY_BONUS" ? " (Spy bonus)" : ""}: ${num(x.total)} now.`;
        case "matchEnded": return `The match is over: ${(x.winners || []).map(n).join(" and ")} won.`;
        default: return `${words(kind)} ${raw(x)}`;
      }
    },
  };

  // ---- Lopti ------------------------------------------------------------------------------

  const rank = (r) => ({ TWO: "2", THREE: "3", FOUR: "4", FIVE: "5", SIX: "6", SEVEN: "7", EIGHT: "8", NINE: "9", TEN: "10", JACK: "J", QUEEN: "Q", KING: "K", ACE: "A" })[String(r || "").replace("LOPTI_RANK_", "")] || "none";

  function loptiCard(h, card, small) {
    const suit = card.slice(-1);
    return h("div", { class: `card${small ? " small" : ""}${suit === "♥" || suit === "♦" ? " red" : ""}`, dataset: { card } },
      h("div", { class: "rank" }, card.slice(0, -1)), h("div", { class: "rank" }, suit));
  }

  function trigger(t) {
    t = t || {};
    if (t.rankPlayed) return `a ${rank(t.rankPlayed.rank)} is played`;
    if (t.cardsPlayed) return `${num(t.cardsPlayed.atLeast)}+ cards are played at once`;
    if (t.pileBurned) return "the pile burns";
    if (t.pilePickedUp) return "someone picks up the pile";
    if (t.faceUpTaken) return "someone takes their face-up cards";
    return "?";
  }

  function effect(e) {
    e = e || {};
    if (e.nextPlayerSkips) return "the next player skips a turn";
    if (e.reverseDirection) return "play reverses";
    if (e.playerDraws) return `the player draws ${num(e.playerDraws.count)}`;
    if (e.othersDrawOne) return "everyone else draws one";
    if (e.burnPile) return "the pile burns";
    if (e.bonusPlay) return "the player plays again";
    return "?";
  }

  const ruleSpec = (s) => `when ${trigger(s?.trigger)}, ${effect(s?.effect)}`;
  const ruleBody = (b) => (b?.table !== undefined ? `“${b.table}”` : ruleSpec(b?.enforced));

  function change(c) {
    c = c || {};
    if (c.removeRule) return `remove rule #${num(c.removeRule.rule)}`;
    if (c.restoreRule) return `restore rule #${num(c.restoreRule.rule)}`;
    if (c.modifyRule) return `change rule #${num(c.modifyRule.rule)} to ${ruleBody(c.modifyRule.to)}`;
    if (c.setHandSize) return `hand size ${num(c.setHandSize.size)}`;
    if (c.setSpecial) return `${enumName("LOPTI_SPECIAL_", c.setSpecial.special)} ${c.setSpecial.off ? "switched off" : `on ${rank(c.setSpecial.rank)}`}`;
    return "?";
  }

  const timing = (t) => (t === "LOPTI_TIMING_NEXT_HAND" ? "from next hand" : "now");

  function phaseText(p, ctx) {
    p = p || {};
    const n = (s) => ctx.name(num(s));
    if (p.ruleCreation) return `${n(p.ruleCreation.winner)} won the last hand and may create a rule.`;
    if (p.proposal) return "Anyone may propose a rule change for this hand's vote.";
    if (p.voting) return `Vote: ${change(p.voting.proposal?.change)} (${timing(p.voting.proposal?.timing)}), proposed by ${n(p.voting.proposal?.by)}; ${(p.voting.voted || []).length} voted.`;
    if (p.roshambo) { const r = p.roshambo; return `Roshambo: ${n(r.challenger)} ${num(r.challengerWins)} – ${num(r.defenderWins)} ${n(r.defender)} after ${num(r.decisive)} decisive throws.`; }
    if (p.swap) return "Swap: trade a card in hand with a face-up card, or keep them.";
    if (p.play) return `${n(p.play.seat)} is on turn${num(p.play.playsLeft) > 1 ? ` (${num(p.play.playsLeft)} plays left)` : ""}.`;
    if (p.over) return "The session is over.";
    return "";
  }

  const loptiData = () => catalogue.lopti?.catalogue?.lopti || {};

  const lopti = {
    name: "Lopti",
    field: "lopti",
    minSeats: 2,
    maxSeats: 5,
    scoreUnit: "hands won",
    optionsForm(h) {
      return h("div", { class: "row" },
        h("label", {}, "Hands in the session", h("input", { name: "hands", type: "number", min: 1, max: 15, value: 3 })));
    },
    readOptions(box) {
      return { lopti: { hands: num(box.querySelector("[name=hands]").value) } };
    },
    describeOptions(o) {
      const hands = num(o.hands) || 3;
      return `${hands} hand${hands === 1 ? "" : "s"}`;
    },
    rules(ctx) {
      const { h } = ctx;
      const d = loptiData();
      if (!d.turn) return null;
      const base = ctx.game?.baseRules || d.baseRules || {};
      const now = { LOPTI_SPECIAL_RESET: base.reset, LOPTI_SPECIAL_PASS: base.pass, LOPTI_SPECIAL_LOW: base.low, LOPTI_SPECIAL_BURN: base.burn };
      return h("div", { class: "small" },
        h("p", {}, d.turn),
        h("h3", {}, "Special ranks"),
        h("ul", { class: "effects" }, (d.specials || []).map((x) => {
          const rankNow = present(now[x.special]) ?? (x.special in now ? undefined : x.rank);
          return h("li", {}, h("b", {}, `${rankNow ? rank(rankNow) : "off"}: ${x.name}`), `. ${x.effect}`);
        })),
        h("h3", {}, "The Rule Vote"),
        h("p", {}, d.ruleVote),
        h("p", {}, d.roshambo),
        h("h3", {}, "New rules"),
        h("p", {}, d.ruleCreation));
    },
    table(ctx) {
      const { h, game: g } = ctx;
      const onTurn = g.phase?.play ? num(g.phase.play.seat) : undefined;
      const base = g.baseRules || {};
      return h("div", { class: "table" },
        h("div", { class: "center" },
          h("div", { class: "stat" }, "Hand", h("b", {}, `${Math.min(num(g.hand) + 1, num(g.hands))} of ${num(g.hands)}`)),
          h("div", { class: "stat" }, "Draw pile", h("b", {}, num(g.drawPile))),
          h("div", { class: "stat" }, "Out of play", h("b", {}, num(g.outOfHand))),
          h("div", {}, "Pile", (g.pile || []).length ? h("div", { class: "pile" }, g.pile.slice(-8).map((c) => loptiCard(h, c, true))) : h("div", { class: "muted" }, "empty"),
            present(g.playAtMost) ? h("div", { class: "small" }, `next play: ${rank(g.playAtMost)} or lower`) : null,
            g.passObligation ? h("div", { class: "small" }, "pass obligation: pass on or pick up") : null),
          (g.passChain || []).length ? h("div", {}, "Passes", h("div", { class: "cards" }, g.passChain.map((c) => loptiCard(h, c, true)))) : null,
          h("div", { class: "small" },
            h("div", {}, h("b", {}, phaseText(g.phase, ctx))),
            // Each hand opens with the table's one Rule Vote: say what it is while it is on.
            (g.phase?.proposal || g.phase?.voting) && loptiData().ruleVote ? h("div", { class: "muted", id: "rule-vote" }, loptiData().ruleVote) : null,
            h("div", {}, `${g.clockwise ? "clockwise" : "counter-clockwise"} · hand size ${num(base.handSize)} · reset ${rank(base.reset)} · pass ${rank(base.pass)} · low ${rank(base.low)} · burn ${rank(base.burn)}`),
            num(g.pendingSkips) ? h("div", {}, `${num(g.pendingSkips)} turn(s) to skip`) : null)),
        h("div", { class: "players" }, (g.seats || []).map((s) => {
          const seat = s.seat ?? 0;
          return h("div", { class: `player${onTurn === seat ? " turn" : ""}` },
            h("h3", {}, ctx.name(seat), seat === ctx.seat ? h("span", { class: "badge you" }, "you") : null,
              onTurn === seat ? h("span", { class: "badge turn" }, "turn") : null,
              num(g.dealer) === seat ? h("span", { class: "badge" }, "dealer") : null),
            h("div", { class: "small" }, `${num(s.inHand)} in hand · ${num(s.faceDown)} face down · ${num(s.handsWon)} hand(s) won`),
            h("div", { class: "cards" }, (s.faceUp || []).map((c) => loptiCard(h, c, true)),
              Array.from({ length: num(s.faceDown) }, () => h("div", { class: "card small back" }))));
        })),
        ctx.seat !== undefined ? h("div", { class: "hand" }, h("h3", {}, "Your hand"),
          h("div", { class: "cards", id: "hand" }, (g.yourHand || []).map((c) => loptiCard(h, c)))) : null,
        (g.rules || []).length ? h("div", {}, h("h3", {}, "Rules of this session"),
          h("ul", {}, g.rules.map((r) => h("li", {}, `#${num(r.id)} by ${ctx.name(num(r.creator))}: ${ruleBody(r.body)}`,
            present(r.status) && r.status !== "LOPTI_RULE_STATUS_ACTIVE" ? ` (${enumName("LOPTI_RULE_STATUS_", r.status)})` : "")))) : null,
        (g.scheduled || []).length ? h("p", { class: "small" }, "Next hand: ", list(g.scheduled.map(change))) : null);
    },
    action(a) {
      const [kind, x] = Object.entries(a)[0] || ["?", {}];
      switch (kind) {
        case "play": return { group: "Play", label: list(x.cards) };
        case "playFaceDown": return { group: "Play blind", label: `face-down card ${num(x.index) + 1}` };
        case "pickUp": return { group: "", label: "Pick up the pile" };
        case "swap": return { group: "Swap", label: `${x.hand} ⇄ ${x.faceUp}` };
        case "keepCards": return { group: "", label: "Keep the cards as dealt" };
        case "createRule": return { group: "Create a rule", label: x.rule ? ruleSpec(x.rule) : `“${x.tableRule}”` };
        case "skipRule": return { group: "", label: "Create no rule" };
        case "propose": return { group: "Propose", label: `${change(x.change)} (${timing(x.timing)})` };
        case "declineProposal": return { group: "", label: "Propose nothing" };
        case "vote": return { group: "Vote", label: enumName("LOPTI_BALLOT_", x.ballot) };
        case "roshamboThrow": return { group: "Throw", label: enumName("LOPTI_THROW_", x.choice) };
        case "cancelRule": return { group: "Cancel your rule", label: `#${num(x.rule)}` };
        default: return { group: "", label: words(kind) };
      }
    },
    extraActions(ctx, actions, act) {
      // A table rule is free text, so no list of legal actions can hold it.
      if (!actions.some((a) => a.lopti?.createRule)) return null;
      const { h } = ctx;
      const text = h("input", { id: "table-rule", maxlength: 280, placeholder: "a table rule, in your words" });
      const create = h("button", { class: "action", type: "button", disabled: true, onclick: () => text.value.trim() && act({ lopti: { createRule: { tableRule: text.value.trim() } } }) }, "Create");
      // Nothing to create until there are words.
      text.addEventListener("input", () => { create.disabled = !text.value.trim(); });
      return h("div", { class: "group" }, h("span", { class: "label" }, "Or a table rule"), text, create);
    },
    event(e, ctx) {
      const n = (s) => ctx.name(num(s));
      const [kind, x] = Object.entries(e)[0] || ["?", {}];
      switch (kind) {
        case "handStarted": return `Hand ${num(x.hand) + 1} starts; ${n(x.dealer)} deals, ${n(x.opener)} opens.`;
        case "dealt": return `${n(x.seat)} got ${list(x.faceUp)} face up, ${num(x.faceDown)} face down, ${num(x.inHand)} in hand.`;
        case "yourHand": return `Your hand: ${list(x.cards)}.`;
        case "swapped": return `${n(x.seat)} took ${x.toHand} into hand and put ${x.toFaceUp} face up.`;
        case "keptCards": return `${n(x.seat)} kept the cards.`;
        case "turnStarted": return `${n(x.seat)}'s turn.`;
        case "played": return `${n(x.seat)} played ${list(x.cards)}${x.source === "LOPTI_SOURCE_FACE_DOWN" ? " blind" : ""}${x.bonus ? " (bonus play)" : ""}.`;
        case "faceDownFailed": return `${n(x.seat)} turned ${x.card}: not playable, so they pick up.`;
        case "pickedUp": return `${n(x.seat)} picked up ${(x.cards || []).length} card(s).`;
        case "drew": return `${n(x.seat)} drew ${num(x.count)}.`;
        case "youDrew": return `You drew ${list(x.cards)}.`;
        case "burned": return `The pile burns (${enumName("LOPTI_BURN_CAUSE_", x.cause)}).`;
        case "mustPickUpOrPass": return `${n(x.seat)} must pass on or pick up.`;
        case "faceUpTaken": return `${n(x.seat)} took their face-up cards.`;
        case "ruleFired": return `Rule #${num(x.rule)} fires for ${n(x.seat)}.`;
        case "turnSkipped": return `${n(x.seat)} skips a turn.`;
        case "directionReversed": return "Play reverses.";
        case "bonusPlayGranted": return `${n(x.seat)} plays again.`;
        case "bonusPlayDropped": return `Rule #${num(x.rule)} would give ${n(x.seat)} a bonus play, but a pass is pending: no bonus play.`;
        case "handWon": return `${n(x.seat)} went out first and wins hand ${num(x.hand) + 1}!`;
        case "ruleCreated": return `${n(x.creator)} created rule #${num(x.id)}: ${ruleBody(x.body)}.`;
        case "ruleSkipped": return `${n(x.seat)} created no rule.`;
        case "ruleCancelled": return `${n(x.by)} cancelled rule #${num(x.rule)}.`;
        case "proposed": return `${n(x.by)} proposes: ${change(x.change)} (${timing(x.timing)}).`;
        case "proposalDeclined": return `${n(x.seat)} proposes nothing.`;
        case "voted": return `${n(x.seat)} voted.`;
        case "voteCounted": return `Vote: ${num(x.yes)} yes — ${enumName("LOPTI_VOTE_RESULT_", x.result)}.`;
        case "roshamboStarted": return `Roshambo: ${n(x.challenger)} against ${n(x.defender)}.`;
        case "throwCommitted": return `${n(x.seat)} threw.`;
        case "throwsRevealed": return `${enumName("LOPTI_THROW_", x.throws?.challenger)} against ${enumName("LOPTI_THROW_", x.throws?.defender)}: ${num(x.challengerWins)}–${num(x.defenderWins)}.`;
        case "roshamboWon": return `${n(x.seat)} wins the Roshambo.`;
        case "changeApplied": return `Now: ${change(x)}.`;
        case "changeScheduled": return `Next hand: ${change(x)}.`;
        case "changeLapsed": return `Lapsed: ${change(x)}.`;
        case "matchOver": return `The session is over: ${(x.winners || []).map(n).join(" and ")} won.`;
        default: return `${words(kind)} ${raw(x)}`;
      }
    },
  };

  // ---- Amori e Intrighi -------------------------------------------------------------------

  // The board's locations in order, their actions, the gentlemen, the daughters and the event
  // cards come from the server's catalogue (ListGames).
  const amoriData = () => catalogue["amori-e-intrighi"]?.catalogue?.amori || {};
  const byId = (xs, key = "id") => new Map((xs || []).map((x) => [x[key], x]));
  const LOCATIONS = ["THEATER", "TAVERN", "BOULEVARD", "POORHOUSE", "PARK", "TAILOR"].map((l) => `AMORI_LOCATION_${l}`);
  const locInfo = (l) => byId(amoriData().locations, "location").get(l);
  const loc = (l) => locInfo(l)?.name || title(enumName("AMORI_LOCATION_", l).replace(/ /g, "-")) || "home";
  const attr = (a) => enumName("AMORI_ATTRIBUTE_", a);
  // A card's id is its gentleman's or event's id, a dash and its number ("bodo-3").
  const cardKind = (id) => String(id).replace(/-\d+$/, "");
  const gentleman = (id) => byId(amoriData().gentlemen).get(cardKind(id));
  const eventCard = (id) => byId(amoriData().eventCards).get(cardKind(id));
  const gentName = (id) => gentleman(id)?.name || title(cardKind(id));
  const daughterName = (id) => byId(amoriData().daughters).get(id)?.name || title(id);
  const cardName = (id) => gentleman(id)?.name || eventCard(id)?.name || title(cardKind(id));
  const needs = (m) => `R${num(m?.reputation)} B${num(m?.beauty)} E${num(m?.education)}`;
  const pips = (v) => "●".repeat(num(v)) + "○".repeat(Math.max(0, 5 - num(v)));

  function attributes(h, a) {
    a = a || {};
    return h("div", { class: "attrs" },
      h("span", { title: "Reputation" }, "R ", h("span", { class: "pips" }, pips(a.reputation))),
      h("span", { title: "Beauty" }, "B ", h("span", { class: "pips" }, pips(a.beauty))),
      h("span", { title: "Education" }, "E ", h("span", { class: "pips" }, pips(a.education))));
  }

  /** A gentleman's card shows what a daughter needs to marry him and what he scores; an event
   *  card's text is its tooltip and is listed beside the hand. */
  function amoriCard(h, id, kind) {
    const g = gentleman(id);
    const e = eventCard(id);
    const tip = g ? `${g.name}: marries a daughter with at least ${needs(g.minimums)} (Reputation, Beauty, Education); ${num(g.victoryPoints)} VP` : e ? `${e.name}: ${e.effect}` : null;
    return h("div", { class: `card small ${kind}`, title: tip, dataset: { card: id } },
      h("div", { class: "name" }, cardName(id)),
      g ? h("div", { class: "id" }, `${needs(g.minimums)} · ${num(g.victoryPoints)} VP`) : null);
  }

  function eventEffects(h, cards) {
    const kinds = [...new Set(cards.map(eventCard).filter(Boolean))];
    return kinds.length ? h("ul", { class: "effects small" }, kinds.map((e) => h("li", {}, h("b", {}, e.name), `: ${e.effect}`))) : null;
  }

  function amoriPhase(p, ctx) {
    p = p || {};
    const n = (s) => ctx.name(num(s));
    if (p.visit) return "choose where the daughter goes";
    if (p.actionOrIntrigue) return `at the ${loc(p.actionOrIntrigue.location)}: the location's action or an intrigue`;
    if (p.chooseGentleman) return `${n(p.chooseGentleman.seat)} chooses a gentleman at the ${loc(p.chooseGentleman.location)}`;
    if (p.intrigueSpoils) return `${n(p.intrigueSpoils.taker)} takes a card from ${n(p.intrigueSpoils.victim)}`;
    if (p.suitorLimit) return `${n(p.suitorLimit.seat)} must give up a gentleman for ${cardName(p.suitorLimit.incoming)}`;
    if (p.reaction) return `${n(p.reaction.target)} answers ${cardName(p.reaction.card)} from ${n(p.reaction.attacker)}`;
    if (p.events) return "event cards, or end the turn";
    if (p.discard) return `${n(p.discard.seat)} discards down to 5`;
    if (p.over) return "the match is over";
    return "";
  }

  const amori = {
    name: "Amori e Intrighi",
    field: "amori",
    minSeats: 2,
    maxSeats: 4,
    scoreUnit: "VP",
    optionsForm(h) {
      return h("div", { class: "row" },
        h("label", {}, "Starting player", h("input", { name: "startingPlayer", type: "number", min: 0, max: 3, placeholder: "drawn" })));
    },
    readOptions(box) {
      const v = box.querySelector("[name=startingPlayer]").value;
      return { amori: v === "" ? {} : { startingPlayer: num(v) } };
    },
    describeOptions(o) {
      return o.startingPlayer !== undefined ? `seat ${num(o.startingPlayer)} starts` : "";
    },
    rules(ctx) {
      const { h } = ctx;
      const d = amoriData();
      if (!(d.gentlemen || []).length) return null;
      const two = num(ctx.view?.match?.seatCount) === 2;
      return h("div", { class: "small" },
        h("p", {}, d.turn),
        h("h3", {}, "Gentlemen"),
        h("p", { class: "muted" }, `A daughter marries a gentleman once she holds ${num(d.cardsToMarry)} of his cards and has at least his Reputation, Beauty and Education.`),
        h("ul", { class: "effects" }, d.gentlemen.filter((g) => !(two && g.brown)).map((g) =>
          h("li", {}, h("b", {}, g.name), `: needs ${needs(g.minimums)}; ${num(g.victoryPoints)} VP`))),
        h("h3", {}, "Event cards"),
        h("ul", { class: "effects" }, (d.eventCards || []).map((e) =>
          h("li", {}, h("b", {}, e.name), ` ×${num(e.count)}${e.reaction ? " (an answer)" : e.hostile ? " (hostile: may be answered)" : ""}: ${e.effect}`))),
        h("h3", {}, "Locations"),
        h("ul", { class: "effects" }, (d.locations || []).map((l) => h("li", {}, h("b", {}, l.name), `: ${l.action}`))),
        (d.dice || []).length ? h("ul", { class: "effects" }, d.dice.map((x) => h("li", {}, h("b", {}, `${x.name} die`), `: ${x.effect}`))) : null);
    },
    table(ctx) {
      const { h, game: g } = ctx;
      const current = num(g.current);
      const decks = new Map((g.locationDecks || []).map((d) => [d.location, d]));
      const board = h("div", { class: "board" }, LOCATIONS.map((key) => {
        const deck = decks.get(key) || {};
        const here = (g.players || []).filter((p) => p.location === key);
        const about = locInfo(key);
        return h("div", { class: "location" },
          h("h3", {}, loc(key)),
          about ? h("div", { class: "small muted" }, about.action) : null,
          about && !num(about.deckSize) ? null : h("div", { class: "small" }, `${num(deck.size)} gentleman card(s)`),
          (deck.cards || []).length ? h("div", { class: "cards" }, deck.cards.map((c) => amoriCard(h, c, "gent"))) : null,
          h("div", {}, here.map((p) => h("span", { class: `pawn p${num(p.seat)}` }, p.active?.daughter ? daughterName(p.active.daughter) : ctx.name(num(p.seat))))));
      }));
      const players = (g.players || []).map((p) => {
        const seat = num(p.seat);
        return h("div", { class: `player${seat === current ? " turn" : ""}` },
          h("h3", {}, h("span", { class: `pawn p${seat}` }, ctx.name(seat)),
            seat === ctx.seat ? h("span", { class: "badge you" }, "you") : null,
            seat === current ? h("span", { class: "badge turn" }, "turn") : null),
          p.active ? h("div", {}, h("b", {}, daughterName(p.active.daughter)), ` at ${loc(p.location)}`, attributes(h, p.active.attributes),
            (p.active.suitors || []).length ? h("div", { class: "cards" }, p.active.suitors.map((c) => amoriCard(h, c, "gent"))) : h("div", { class: "small muted" }, "no suitors yet")) : null,
          h("div", { class: "small" }, `${num(p.faceDown)} daughter(s) waiting · ${num(p.handSize)} event card(s)`),
          (p.brides || []).length ? h("div", { class: "small" }, "Married: ", list(p.brides.map((b) => `${daughterName(b.daughter)} to ${gentName(b.husband)}`))) : null,
          (p.keptForPoints || []).length ? h("div", { class: "small" }, "Kept for points: ", list(p.keptForPoints.map(cardName))) : null,
          (p.hand || []).length ? h("div", { class: "cards", id: seat === ctx.seat ? "hand" : null }, p.hand.map((c) => amoriCard(h, c, "event"))) : null,
          seat === ctx.seat ? eventEffects(h, p.hand || []) : null);
      });
      const scoring = g.scoring;
      return h("div", { class: "table" },
        h("div", { class: "center" },
          h("div", { class: "stat" }, "Turn", h("b", {}, num(g.turn))),
          h("div", { class: "stat" }, "Gentlemen", h("b", {}, num(g.mainDeckSize))),
          h("div", { class: "stat" }, "Events", h("b", {}, num(g.eventDeckSize))),
          h("div", {}, h("b", {}, `${ctx.name(current)}'s turn: ${amoriPhase(g.phase, ctx)}`), g.finalRound ? h("div", { class: "small" }, "Final round!") : null)),
        board,
        h("div", { class: "players" }, players),
        scoring ? h("div", {}, h("h3", {}, "Scoring"), h("ul", {}, (scoring.totals || []).map((t, s) =>
          h("li", {}, `${ctx.name(s)}: ${t} VP (marriages ${num(scoring.marriagePoints?.[s])}, events ${num(scoring.eventPoints?.[s])})`)))) : null);
    },
    action(a, ctx) {
      const [kind, x] = Object.entries(a)[0] || ["?", {}];
      const n = (s) => ctx.name(num(s));
      switch (kind) {
        case "visit": return { group: "Go to", label: loc(x.location) };
        case "locationAction": {
          const at = present(ctx.game?.phase?.actionOrIntrigue?.location);
          const what = at ? ` at the ${loc(at)}${locInfo(at) ? `: ${locInfo(at).action}` : ""}` : "";
          return { group: "", label: present(x.choice) ? `Location action: +1 ${attr(x.choice)}` : `Location action${what}` };
        }
        case "intrigue": return { group: "Intrigue against", label: n(x.target) };
        case "take": return { group: "Take", label: cardName(x.card) };
        case "giveUp": return { group: "Give up", label: gentName(x.gentleman) };
        case "playEvent": return { group: "Play event", label: `${cardName(x.card)}${x.target !== undefined ? ` → ${n(x.target)}` : ""}${present(x.location) ? ` (${loc(x.location)})` : ""}` };
        case "react": return { group: "", label: `Answer with ${cardName(x.card)}` };
        case "pass": return { group: "", label: "Let it happen" };
        case "endTurn": return { group: "", label: "End turn (draw an event)" };
        case "discard": return { group: "Discard", label: cardName(x.card) };
        default: return { group: "", label: words(kind) };
      }
    },
    event(e, ctx) {
      const n = (s) => ctx.name(num(s));
      const [kind, x] = Object.entries(e)[0] || ["?", {}];
      switch (kind) {
        case "setUp": return `The table is set; ${n(x.startingPlayer)} starts.`;
        case "handDealt": return `${n(x.seat)} got ${list((x.cards || []).map(cardName))}.`;
        case "turnStarted": return `Turn ${num(x.turn)}: ${n(x.seat)}.`;
        case "visited": return `${n(x.seat)}'s daughter went to the ${loc(x.location)}.`;
        case "attributeChanged": return `${n(x.seat)}'s ${attr(x.attribute)} is now ${num(x.value)}.`;
        case "rolled": return `${enumName("AMORI_DIE_", x.die)} die for ${n(x.seat)}: ${enumName("AMORI_DIE_FACE_", x.face)}.`;
        case "deckShown": return `You see at the ${loc(x.location)}: ${list((x.cards || []).map(cardName))}.`;
        case "tookFromLocation": return `${n(x.seat)} took ${cardName(x.card)} at the ${loc(x.location)}.`;
        case "locationDeckRefilled": return `The ${loc(x.location)} deck is refilled.`;
        case "intrigued": return `${n(x.seat)} intrigues against ${n(x.target)}.`;
        case "tookFromRival": return `${n(x.seat)} took ${cardName(x.card)} from ${n(x.from)}.`;
        case "drewFromMainDeck": return `${n(x.seat)} drew ${cardName(x.card)}.`;
        case "gaveUp": return `${n(x.seat)} gave up ${gentName(x.gentleman)}.`;
        case "suitorJoined": return `${cardName(x.card)} courts ${n(x.seat)}'s daughter.`;
        case "married": return `${daughterName(x.daughter)} (${n(x.seat)}) married ${gentName(x.gentleman)}!`;
        case "gentlemenDiscarded": return `Discarded: ${list((x.cards || []).map(cardName))}.`;
        case "gentlemenRetired": return `Retired: ${list((x.cards || []).map(cardName))}.`;
        case "daughterRevealed": return `${n(x.seat)}'s next daughter is ${daughterName(x.daughter)}.`;
        case "mainDeckReshuffled": return `The gentleman deck is reshuffled (${num(x.size)}).`;
        case "eventPlayed": return `${n(x.seat)} played ${cardName(x.card)}${x.target !== undefined ? ` at ${n(x.target)}` : ""}${present(x.location) ? ` (${loc(x.location)})` : ""}.`;
        case "reacted": return `${n(x.seat)} answered with ${cardName(x.card)}.`;
        case "passed": return `${n(x.seat)} let it happen.`;
        case "eventDeckReshuffled": return `The event deck is reshuffled (${num(x.size)}).`;
        case "eventDrawn": return `${n(x.seat)} drew ${cardName(x.card)}.`;
        case "eventDrawnFaceDown": return `${n(x.seat)} drew an event card.`;
        case "eventDiscarded": return `${n(x.seat)} discarded ${cardName(x.card)}.`;
        case "finalRound": return `${n(x.seat)} married a third daughter: final round!`;
        case "gameOver": return `Game over: ${(x.scoring?.totals || []).map((t, s) => `${n(s)} ${t}`).join(", ")} VP.`;
        default: return `${words(kind)} ${raw(x)}`;
      }
    },
  };

  window.MissiveGames = { "love-letter": loveLetter, lopti, "amori-e-intrighi": amori };
  /** Takes the games' catalogue (ListGames' `games`): their cards and texts. */
  function useCatalogue(games) {
    for (const g of games || []) catalogue[g.kind] = g;
    llEdition = undefined; // rebuilt from the new catalogue when next shown
  }

  window.MissiveKit = { present, raw, useCatalogue };
})();
