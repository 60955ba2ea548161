//! Love Letter in words: its events, its actions and its view.

use serde_json::Value;

use super::story::{Story, and, number, strings, word};

fn cards(story: &Story, cards: &Value) -> String {
    let named: Vec<String> = strings(cards)
        .iter()
        .map(|c| story.role_card(&Value::String(c.clone())))
        .collect();
    and(&named)
}

/// A role named by a Guard: "the Priest".
fn role(story: &Story, role: &Value) -> Option<String> {
    let name = role.as_str()?;
    match story.catalogue.roles.get(name) {
        Some(entry) => Some(format!("the {}", entry.name)),
        None => word(role).map(|w| format!("the {w}")),
    }
}

pub(super) fn event(story: &Story, kind: &str, e: &Value) -> Option<String> {
    let seat = &e["seat"];
    let target = &e["target"];
    Some(match kind {
        "roundStarted" => {
            let mut s = format!(
                "round {} begins; {} first.",
                number(&e["round"]).unwrap_or(0),
                story.does(&e["firstPlayer"], "play")
            );
            if !strings(&e["faceUp"]).is_empty() {
                s += &format!(" Set aside face up: {}.", cards(story, &e["faceUp"]));
            }
            s
        }
        "dealt" => format!(
            "{} dealt {}.",
            are(story, seat),
            story.role_card(&e["card"])
        ),
        "turnStarted" => format!("it is {} turn.", story.whose(seat)),
        "drew" => format!(
            "{} {}.",
            story.does(seat, "draw"),
            story.role_card(&e["card"])
        ),
        "played" => {
            let mut s = format!(
                "{} {}",
                story.does(seat, "play"),
                story.role_card(&e["card"])
            );
            if target.is_number() {
                s += &format!(" on {}", story.who(target));
            }
            if let Some(guess) = role(story, &e["guess"]) {
                s += &format!(", naming {guess}");
            }
            s + "."
        }
        "noEffect" => format!(
            "{} has no effect: no one else can be chosen.",
            story.role_card(&e["card"])
        ),
        "guardGuess" => format!(
            "{} Guard names {} against {}: {}",
            story.whose(seat),
            role(story, &e["guess"]).unwrap_or_else(|| "a role".into()),
            story.who(target),
            if e["hit"] == true {
                "a hit!"
            } else {
                "a miss."
            }
        ),
        "priestSaw" => format!(
            "{} at {} hand: {}.",
            story.does(seat, "look"),
            story.whose(target),
            story.role_card(&e["card"])
        ),
        "baronCompared" => {
            let outcome = if e["loser"].is_number() {
                format!("{} out.", are(story, &e["loser"]))
            } else {
                "a tie: nobody goes out.".into()
            };
            format!(
                "{} hands with {}: {} {}, {} {}; {outcome}",
                story.does(seat, "compare"),
                story.who(target),
                story.who(seat),
                holding(story, seat, &e["seatCard"]),
                story.who(target),
                holding(story, target, &e["targetCard"]),
            )
        }
        "kingTraded" => format!(
            "{} hands with {}: {} {} for {}.",
            story.does(seat, "trade"),
            story.who(target),
            story.does(seat, "give"),
            story.role_card(&e["seatGave"]),
            story.role_card(&e["targetGave"]),
        ),
        "princeDiscarded" => format!(
            "{} Prince makes {} discard {}.",
            story.whose(seat),
            story.who(target),
            story.role_card(&e["card"])
        ),
        "princeDrew" => format!(
            "{} {}{}.",
            story.does(&e["target"], "draw"),
            story.role_card(&e["card"]),
            if e["fromSetAside"] == true {
                " (the set-aside card: the deck was empty)"
            } else {
                ""
            }
        ),
        "chancellorDrew" => format!(
            "with the Chancellor {} {}.",
            story.does(seat, "draw"),
            cards(story, &e["cards"])
        ),
        "chancellorReturned" => format!(
            "{} {} card(s) to the bottom of the deck.",
            story.does(seat, "return"),
            number(&e["count"]).unwrap_or(0)
        ),
        "chancellorKept" => format!(
            "{} {} and {} {} on the bottom.",
            story.does(seat, "keep"),
            story.role_card(&e["kept"]),
            story.does(seat, "put"),
            cards(story, &e["bottom"])
        ),
        "playerOut" => {
            let mut s = format!("{} out of the round", are(story, seat));
            if !strings(&e["discarded"]).is_empty() {
                s += &format!(", discarding {}", cards(story, &e["discarded"]));
            }
            s + "."
        }
        "roundEnded" => {
            let why = match e["reason"].as_str() {
                Some("LOVE_LETTER_ROUND_END_DECK_EMPTY") => "the deck ran out",
                _ => "only one player was left",
            };
            let mut s = format!("round {} ends: {why}.", number(&e["round"]).unwrap_or(0));
            for hand in e["hands"].as_array().into_iter().flatten() {
                s += &format!(
                    " {} {}.",
                    story.does(&hand["seat"], "hold"),
                    story.role_card(&hand["card"])
                );
            }
            if e["setAside"].is_string() {
                s += &format!(
                    " The set-aside card was {}.",
                    story.role_card(&e["setAside"])
                );
            }
            s + &format!(" Won by {}.", story.seats(&e["winners"]))
        }
        "tokenGained" => format!(
            "{} a favour token{} ({} in all).",
            story.does(seat, "gain"),
            if e["reason"] == "LOVE_LETTER_TOKEN_REASON_SPY_BONUS" {
                " for the Spy"
            } else {
                ""
            },
            number(&e["total"]).unwrap_or(0)
        ),
        "matchEnded" => format!("the match is over: {} won.", story.seats(&e["winners"])),
        _ => return None,
    })
}

/// "you are" / "bob (seat 1) is".
fn are(story: &Story, seat: &Value) -> String {
    story.does(seat, "are")
}

fn holding(story: &Story, seat: &Value, card: &Value) -> String {
    format!(
        "{} {}",
        verb_only(story, seat, "hold"),
        story.role_card(card)
    )
}

/// The verb alone, agreeing with the seat ("hold" / "holds").
fn verb_only(story: &Story, seat: &Value, verb: &str) -> String {
    let full = story.does(seat, verb);
    full.rsplit(' ').next().unwrap_or(verb).to_owned()
}

pub(super) fn action(story: &Story, kind: &str, a: &Value) -> String {
    match kind {
        "play" => {
            let mut s = format!("play {}", story.role_card(&a["card"]));
            if a["target"].is_number() {
                match story.who(&a["target"]).as_str() {
                    "you" => s += " on yourself",
                    other => s += &format!(" on {other}"),
                }
            }
            if let Some(guess) = role(story, &a["guess"]) {
                s += &format!(", naming {guess}");
            }
            s
        }
        "chancellorKeep" => format!(
            "keep {}, put {} on the bottom (the last at the very bottom)",
            story.role_card(&a["keep"]),
            cards(story, &a["bottom"])
        ),
        other => super::story::words(other),
    }
}

pub(super) fn view(story: &Story, v: &Value) -> String {
    let mut out = format!(
        "  round {}, {} card(s) left in the deck; {} favour tokens win.\n",
        number(&v["round"]).unwrap_or(0),
        number(&v["deckCount"]).unwrap_or(0),
        number(&v["tokensToWin"]).unwrap_or(0)
    );
    if !strings(&v["faceUp"]).is_empty() {
        out += &format!("  set aside face up: {}\n", cards(story, &v["faceUp"]));
    }
    for player in v["players"].as_array().into_iter().flatten() {
        let mut state = Vec::new();
        if player["out"] == true {
            state.push("out".to_owned());
        }
        if player["protected"] == true {
            state.push("protected by the Handmaid".to_owned());
        }
        out += &format!(
            "  {}: {} token(s){}; played {}\n",
            story.who(&player["seat"]),
            number(&player["tokens"]).unwrap_or(0),
            if state.is_empty() {
                String::new()
            } else {
                format!(", {}", state.join(", "))
            },
            if strings(&player["played"]).is_empty() {
                "nothing yet".to_owned()
            } else {
                cards(story, &player["played"])
            }
        );
    }
    let hand = strings(&v["hand"]);
    if !hand.is_empty() {
        out += "  your hand:\n";
        for card in &hand {
            out += &describe(story, card);
        }
    }
    let choice = strings(&v["chancellorChoice"]);
    if !choice.is_empty() {
        out += "  your Chancellor's choice:\n";
        for card in &choice {
            out += &describe(story, card);
        }
    }
    out
}

/// A card in hand with what it does.
fn describe(story: &Story, card: &str) -> String {
    let text = story
        .catalogue
        .roles
        .get(card)
        .map(|r| r.text.as_str())
        .unwrap_or_default();
    format!(
        "    {} — {text}\n",
        story.role_card(&Value::String(card.to_owned()))
    )
}
