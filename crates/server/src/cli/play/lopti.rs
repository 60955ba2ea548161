//! Lopti in words: its events, its actions (rules and votes included) and its view.

use serde_json::Value;

use super::story::{Story, and, number, only, strings, word, words};

fn cards(cards: &Value) -> String {
    let cards = strings(cards);
    if cards.is_empty() {
        "nothing".into()
    } else {
        cards.join(" ")
    }
}

/// A rank as its card label ("7", "J"); `None` for no rank.
fn label(value: &Value) -> Option<&'static str> {
    let name = value.as_str()?.strip_prefix("LOPTI_RANK_")?;
    let labels = [
        ("TWO", "2"),
        ("THREE", "3"),
        ("FOUR", "4"),
        ("FIVE", "5"),
        ("SIX", "6"),
        ("SEVEN", "7"),
        ("EIGHT", "8"),
        ("NINE", "9"),
        ("TEN", "10"),
        ("JACK", "J"),
        ("QUEEN", "Q"),
        ("KING", "K"),
        ("ACE", "A"),
    ];
    labels.iter().find(|(n, _)| *n == name).map(|(_, l)| *l)
}

fn rank(value: &Value) -> String {
    label(value).map_or_else(|| "no rank".into(), |l| format!("the {l}s"))
}

/// A custom rule's trigger → effect.
fn spec(spec: &Value) -> String {
    let trigger = match only(&spec["trigger"]) {
        Some(("rankPlayed", t)) => format!("when {} are played", rank(&t["rank"])),
        Some(("cardsPlayed", t)) => format!(
            "when {} or more cards are played at once",
            number(&t["atLeast"]).unwrap_or(0)
        ),
        Some(("pileBurned", _)) => "when the pile burns".into(),
        Some(("pilePickedUp", _)) => "when a player picks up the pile".into(),
        Some(("faceUpTaken", _)) => "when a player takes their face-up cards".into(),
        Some((other, _)) => format!("when {}", words(other)),
        None => "always".into(),
    };
    let effect = match only(&spec["effect"]) {
        Some(("nextPlayerSkips", _)) => "the next player skips a turn".into(),
        Some(("reverseDirection", _)) => "the direction of play reverses".into(),
        Some(("playerDraws", e)) => format!(
            "that player draws {} card(s)",
            number(&e["count"]).unwrap_or(0)
        ),
        Some(("othersDrawOne", _)) => "every other player draws a card".into(),
        Some(("burnPile", _)) => "the pile burns".into(),
        Some(("bonusPlay", _)) => "that player plays again".into(),
        Some((other, _)) => words(other),
        None => "nothing happens".into(),
    };
    format!("{trigger}, {effect}")
}

/// What a rule says: its enforced part or its table text.
fn body(body: &Value) -> String {
    match only(body) {
        Some(("enforced", s)) => spec(s),
        Some(("table", text)) => format!("\"{}\" (a table rule)", text.as_str().unwrap_or("")),
        _ => "nothing".into(),
    }
}

/// A change a Rule Vote may make.
fn change(story: &Story, change: &Value) -> String {
    match only(change) {
        Some(("removeRule", c)) => format!("remove rule #{}", number(&c["rule"]).unwrap_or(0)),
        Some(("restoreRule", c)) => {
            format!("bring back rule #{}", number(&c["rule"]).unwrap_or(0))
        }
        Some(("modifyRule", c)) => format!(
            "change rule #{} to: {}",
            number(&c["rule"]).unwrap_or(0),
            body(&c["to"])
        ),
        Some(("setHandSize", c)) => {
            format!("make the hand size {}", number(&c["size"]).unwrap_or(0))
        }
        Some(("setSpecial", c)) => {
            let special = special(story, &c["special"]);
            if c["off"] == true {
                format!("switch the {special} role off")
            } else {
                format!("give the {special} role to {}", rank(&c["rank"]))
            }
        }
        Some((other, _)) => words(other),
        None => "nothing".into(),
    }
}

fn special(story: &Story, special: &Value) -> String {
    special
        .as_str()
        .and_then(|s| story.catalogue.specials.get(s))
        .map(|e| e.name.clone())
        .or_else(|| word(special))
        .unwrap_or_else(|| "special".into())
}

fn timing(timing: &Value) -> &'static str {
    match timing.as_str() {
        Some("LOPTI_TIMING_NEXT_HAND") => "from the next hand",
        _ => "now",
    }
}

fn proposal(story: &Story, p: &Value) -> String {
    format!(
        "{} to {}, {}",
        story.does(&p["by"], "propose"),
        change(story, &p["change"]),
        timing(&p["timing"])
    )
}

pub(super) fn event(story: &Story, kind: &str, e: &Value) -> Option<String> {
    let seat = &e["seat"];
    Some(match kind {
        "handStarted" => format!(
            "hand {} begins: {} the cards, {} first.",
            number(&e["hand"]).unwrap_or(0) + 1,
            story.does(&e["dealer"], "deal"),
            story.does(&e["opener"], "play")
        ),
        "dealt" => format!(
            "{} {} card(s) in hand, {} face down, and face up {}; {} left to draw.",
            story.does(seat, "get"),
            number(&e["inHand"]).unwrap_or(0),
            number(&e["faceDown"]).unwrap_or(0),
            cards(&e["faceUp"]),
            number(&e["drawPile"]).unwrap_or(0)
        ),
        "yourHand" => format!("your hand is {}.", cards(&e["cards"])),
        "swapped" => format!(
            "{} {} into the hand and {} face up.",
            story.does(seat, "swap"),
            e["toHand"].as_str().unwrap_or(""),
            e["toFaceUp"].as_str().unwrap_or("")
        ),
        "keptCards" => format!(
            "{} {} cards as dealt.",
            story.does(seat, "keep"),
            story.own(seat)
        ),
        "turnStarted" => format!("it is {} turn.", story.whose(seat)),
        "played" => format!(
            "{} {}{}{}.",
            story.does(seat, "play"),
            cards(&e["cards"]),
            if e["source"] == "LOPTI_SOURCE_FACE_DOWN" {
                ", turned from face down"
            } else {
                ""
            },
            if e["bonus"] == true {
                " (a bonus play)"
            } else {
                ""
            }
        ),
        "faceDownFailed" => format!(
            "{} {} face down, which can't be played: it joins the pile.",
            story.does(seat, "turn"),
            e["card"].as_str().unwrap_or("")
        ),
        "pickedUp" => format!(
            "{} the pile ({} card(s)).",
            story.does(seat, "pick up"),
            strings(&e["cards"]).len()
        ),
        // The player's own draw is told with its cards (`youDrew`).
        "drew" if story.who(seat) == "you" => return None,
        "drew" => format!(
            "{} {} card(s).",
            story.does(seat, "draw"),
            number(&e["count"]).unwrap_or(0)
        ),
        "youDrew" => format!("you draw {}.", cards(&e["cards"])),
        "burned" => {
            let cause = match e["cause"].as_str() {
                Some("LOPTI_BURN_CAUSE_BURN_RANK") => "a burn card",
                Some("LOPTI_BURN_CAUSE_FOUR_OF_A_RANK") => "four of a rank",
                Some("LOPTI_BURN_CAUSE_FOUR_PASSES") => "four chained passes",
                Some("LOPTI_BURN_CAUSE_CUSTOM_RULE") => "a custom rule",
                _ => "a burn",
            };
            format!(
                "the pile burns ({cause}): {} card(s) leave the game, and {} again.",
                strings(&e["cards"]).len(),
                story.does(seat, "play")
            )
        }
        "mustPickUpOrPass" => format!(
            "{} must pick up the pile or pass it on with a pass card.",
            story.who(seat)
        ),
        "faceUpTaken" => format!(
            "{} {} face-up cards into the hand: {}.",
            story.does(seat, "take"),
            story.own(seat),
            cards(&e["cards"])
        ),
        "ruleFired" => format!(
            "rule #{} fires for {}.",
            number(&e["rule"]).unwrap_or(0),
            story.who(seat)
        ),
        "turnSkipped" => format!("{} a turn.", story.does(seat, "skip")),
        "directionReversed" => "the direction of play reverses.".into(),
        "bonusPlayGranted" => format!("{} a bonus play.", story.does(seat, "get")),
        "bonusPlayDropped" => format!(
            "rule #{}'s bonus play is dropped: a pass is pending.",
            number(&e["rule"]).unwrap_or(0)
        ),
        "handWon" => format!(
            "{} hand {}!",
            story.does(seat, "win"),
            number(&e["hand"]).unwrap_or(0) + 1
        ),
        "ruleCreated" => format!(
            "{} rule #{}: {}.",
            story.does(&e["creator"], "create"),
            number(&e["id"]).unwrap_or(0),
            body(&e["body"])
        ),
        "ruleSkipped" => format!("{} no rule.", story.does(seat, "create")),
        "ruleCancelled" => format!(
            "{} rule #{}.",
            story.does(&e["by"], "cancel"),
            number(&e["rule"]).unwrap_or(0)
        ),
        "proposed" => format!("{}; the table votes.", proposal(story, e)),
        "proposalDeclined" => format!("{} to propose a change.", story.does(seat, "decline")),
        "voted" => format!("{} voted.", story.does(seat, "have")),
        "voteCounted" => {
            let ballots: Vec<String> = e["ballots"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
                .filter_map(|(s, b)| Some(format!("{} {}", story.who(&Value::from(s)), word(b)?)))
                .collect();
            format!(
                "the vote is counted: {} yes ({}); the change {}.",
                number(&e["yes"]).unwrap_or(0),
                and(&ballots),
                match e["result"].as_str() {
                    Some("LOPTI_VOTE_RESULT_PASSED") => "passes",
                    Some("LOPTI_VOTE_RESULT_TIED") => "is tied: Roshambo decides",
                    _ => "fails",
                }
            )
        }
        "roshamboStarted" => format!(
            "Roshambo: {} against {}.",
            story.who(&e["challenger"]),
            story.who(&e["defender"])
        ),
        "throwCommitted" => format!("{} a throw.", story.does(seat, "commit")),
        "throwsRevealed" => format!(
            "the throws: {} against {}; {} to {} after {} decisive throw(s).",
            word(&e["throws"]["challenger"]).unwrap_or_default(),
            word(&e["throws"]["defender"]).unwrap_or_default(),
            number(&e["challengerWins"]).unwrap_or(0),
            number(&e["defenderWins"]).unwrap_or(0),
            number(&e["decisive"]).unwrap_or(0)
        ),
        "roshamboWon" => format!("{} the Roshambo.", story.does(seat, "win")),
        "changeApplied" => format!("from now on: {}.", change(story, e)),
        "changeScheduled" => format!("from the next hand: {}.", change(story, e)),
        "changeLapsed" => format!("this change lapses: {}.", change(story, e)),
        "matchOver" => format!("the session is over: {} won.", story.seats(&e["winners"])),
        _ => return None,
    })
}

pub(super) fn action(story: &Story, kind: &str, a: &Value) -> String {
    match kind {
        "swap" => format!(
            "swap {} from your hand with {} face up",
            a["hand"].as_str().unwrap_or(""),
            a["faceUp"].as_str().unwrap_or("")
        ),
        "keepCards" => "keep your cards as dealt".into(),
        "createRule" => {
            let mut s = format!("create the rule: {}", spec(&a["rule"]));
            if let Some(text) = a["tableRule"].as_str() {
                s += &format!(", and the table rule \"{text}\"");
            }
            s
        }
        "skipRule" => "create no rule".into(),
        "propose" => format!(
            "propose to {}, {}",
            change(story, &a["change"]),
            timing(&a["timing"])
        ),
        "declineProposal" => "propose no change".into(),
        "vote" => format!(
            "vote {}",
            word(&a["ballot"]).unwrap_or_else(|| "abstain".into())
        ),
        "roshamboThrow" => format!("throw {}", word(&a["choice"]).unwrap_or_else(|| "?".into())),
        "play" => format!("play {}", cards(&a["cards"])),
        "playFaceDown" => format!(
            "turn face-down card {} and play it",
            number(&a["index"]).unwrap_or(0) + 1
        ),
        "pickUp" => "pick up the pile".into(),
        "cancelRule" => format!("cancel your rule #{}", number(&a["rule"]).unwrap_or(0)),
        other => words(other),
    }
}

pub(super) fn view(story: &Story, v: &Value) -> String {
    let mut out = format!(
        "  hand {} of {}; {} card(s) to draw; pile: {}",
        number(&v["hand"]).unwrap_or(0) + 1,
        number(&v["hands"]).unwrap_or(0),
        number(&v["drawPile"]).unwrap_or(0),
        cards(&v["pile"]),
    );
    if v["passObligation"] == true {
        out += " (a pass is pending: pick up or pass it on)";
    }
    if let Some(low) = label(&v["playAtMost"]) {
        out += &format!(" (play a {low} or lower)");
    }
    out += "\n";
    for s in v["seats"].as_array().into_iter().flatten() {
        out += &format!(
            "  {}: {} in hand, face up {}, {} face down, {} hand(s) won\n",
            story.who(&s["seat"]),
            number(&s["inHand"]).unwrap_or(0),
            cards(&s["faceUp"]),
            number(&s["faceDown"]).unwrap_or(0),
            number(&s["handsWon"]).unwrap_or(0)
        );
    }
    let base = &v["baseRules"];
    let specials: Vec<String> = ["reset", "pass", "low", "burn"]
        .iter()
        .filter_map(|key| {
            let rank = format!("{}s", label(&base[*key])?);
            let name = format!("LOPTI_SPECIAL_{}", key.to_uppercase());
            let entry = story.catalogue.specials.get(&name);
            Some(format!(
                "{rank}: {}",
                entry.map_or_else(|| (*key).to_owned(), |e| e.name.clone())
            ))
        })
        .collect();
    out += &format!(
        "  hand size {}; special ranks: {}\n",
        number(&base["handSize"]).unwrap_or(0),
        specials.join(", ")
    );
    for rule in v["rules"].as_array().into_iter().flatten() {
        if rule["status"] == "LOPTI_RULE_STATUS_ACTIVE" {
            out += &format!(
                "  rule #{} by {}: {}\n",
                number(&rule["id"]).unwrap_or(0),
                story.who(&rule["creator"]),
                body(&rule["body"])
            );
        }
    }
    if let Some((phase, p)) = only(&v["phase"]) {
        let line = match phase {
            "voting" => format!("the vote: {}", proposal(story, &p["proposal"])),
            "roshambo" => format!(
                "Roshambo, {} to {}",
                number(&p["challengerWins"]).unwrap_or(0),
                number(&p["defenderWins"]).unwrap_or(0)
            ),
            "ruleCreation" => format!("{} a rule", story.does(&p["winner"], "create")),
            other => words(other),
        };
        out += &format!("  now: {line}\n");
    }
    let hand = strings(&v["yourHand"]);
    if !hand.is_empty() {
        out += &format!("  your hand: {}\n", hand.join(" "));
    }
    out
}
