//! Amori e Intrighi in words: its events, its actions and its view.

use serde_json::Value;

use super::story::{Story, and, number, only, strings, word, words};

/// A gentleman card: "Bodo (bodo-3)".
fn gentleman(story: &Story, card: &Value) -> String {
    format!(
        "{} ({})",
        story.amori_name(card),
        card.as_str().unwrap_or("")
    )
}

fn gentlemen(story: &Story, cards: &Value) -> String {
    let named: Vec<String> = strings(cards)
        .into_iter()
        .map(|c| gentleman(story, &Value::String(c)))
        .collect();
    and(&named)
}

/// An event card with its name: "Slander (slander-4)".
fn event_card(story: &Story, card: &Value) -> String {
    gentleman(story, card)
}

/// An event card with what it does.
fn event_card_text(story: &Story, card: &Value) -> String {
    let text = card
        .as_str()
        .and_then(|id| story.amori_entry(id))
        .map(|e| e.text.clone())
        .unwrap_or_default();
    format!("{}: {text}", event_card(story, card))
}

fn place(story: &Story, location: &Value) -> String {
    match location.as_str() {
        Some(l) if word(location).is_some() => format!("the {}", story.amori_name(&Value::from(l))),
        _ => "nowhere yet".into(),
    }
}

fn attributes(a: &Value) -> String {
    format!(
        "Reputation {}, Beauty {}, Education {}",
        number(&a["reputation"]).unwrap_or(0),
        number(&a["beauty"]).unwrap_or(0),
        number(&a["education"]).unwrap_or(0)
    )
}

pub(super) fn event(story: &Story, kind: &str, e: &Value) -> Option<String> {
    let seat = &e["seat"];
    Some(match kind {
        "setUp" => {
            let daughters: Vec<String> = e["seats"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| {
                    format!(
                        "{} {} ({})",
                        story.whose(&s["seat"]),
                        story.amori_name(&s["daughter"]),
                        attributes(&s["attributes"])
                    )
                })
                .collect();
            format!(
                "the game is set up: the daughters are {}; {} first.",
                and(&daughters),
                story.does(&e["startingPlayer"], "play")
            )
        }
        "handDealt" => format!(
            "{} dealt the event cards {}.",
            story.does(seat, "are"),
            and(&strings(&e["cards"])
                .into_iter()
                .map(|c| event_card(story, &Value::String(c)))
                .collect::<Vec<_>>())
        ),
        "turnStarted" => format!(
            "turn {}: it is {} turn.",
            number(&e["turn"]).unwrap_or(0),
            story.whose(seat)
        ),
        "visited" => format!(
            "{} daughter goes to {}.",
            story.whose(seat),
            place(story, &e["location"])
        ),
        "attributeChanged" => format!(
            "{} daughter's {} is now {}.",
            story.whose(seat),
            word(&e["attribute"]).unwrap_or_default(),
            number(&e["value"]).unwrap_or(0)
        ),
        "rolled" => format!(
            "{} daughter rolls the {} die: {}.",
            story.whose(seat),
            word(&e["die"]).unwrap_or_default(),
            word(&e["face"]).unwrap_or_default()
        ),
        "deckShown" => format!(
            "you see the gentlemen at {}: {}.",
            place(story, &e["location"]),
            gentlemen(story, &e["cards"])
        ),
        "tookFromLocation" => format!(
            "{} {} from {}.",
            story.does(seat, "take"),
            gentleman(story, &e["card"]),
            place(story, &e["location"])
        ),
        "locationDeckRefilled" => format!(
            "a card from the main deck joins {}.",
            place(story, &e["location"])
        ),
        "intrigued" => format!(
            "{} against {} daughter.",
            story.does(seat, "intrigue"),
            story.whose(&e["target"])
        ),
        "tookFromRival" => format!(
            "{} {} from {} daughter.",
            story.does(seat, "take"),
            gentleman(story, &e["card"]),
            story.whose(&e["from"])
        ),
        "drewFromMainDeck" => format!(
            "{} {} from the main deck.",
            story.does(seat, "draw"),
            gentleman(story, &e["card"])
        ),
        "gaveUp" => format!(
            "{} up {} ({} card(s)) to make room for another suitor.",
            story.does(seat, "give"),
            story.amori_name(&e["gentleman"]),
            strings(&e["cards"]).len()
        ),
        "suitorJoined" => format!(
            "{} courts {} daughter.",
            gentleman(story, &e["card"]),
            story.whose(seat)
        ),
        "married" => format!(
            "{} {} marries {}!",
            story.whose(seat),
            story.amori_name(&e["daughter"]),
            story.amori_name(&e["gentleman"])
        ),
        "gentlemenDiscarded" => format!("discarded: {}.", gentlemen(story, &e["cards"])),
        "gentlemenRetired" => format!(
            "cards of married gentlemen leave the game: {}.",
            gentlemen(story, &e["cards"])
        ),
        "daughterRevealed" => format!(
            "{} next daughter, {}, comes out ({}).",
            story.whose(seat),
            story.amori_name(&e["daughter"]),
            attributes(&e["attributes"])
        ),
        "mainDeckReshuffled" => format!(
            "the discarded gentlemen are shuffled into a new main deck of {}.",
            number(&e["size"]).unwrap_or(0)
        ),
        "eventPlayed" => {
            let mut s = format!(
                "{} {}",
                story.does(seat, "play"),
                event_card(story, &e["card"])
            );
            if e["target"].is_number() {
                s += &format!(" against {} daughter", story.whose(&e["target"]));
            }
            if word(&e["location"]).is_some() {
                s += &format!(" at {}", place(story, &e["location"]));
            }
            s + "."
        }
        "reacted" => format!(
            "{} with {}: the card is cancelled.",
            story.does(seat, "answer"),
            event_card(story, &e["card"])
        ),
        "passed" => format!("{} the card take effect.", story.does(seat, "let")),
        "eventDeckReshuffled" => format!(
            "the event discards are shuffled into a new deck of {}.",
            number(&e["size"]).unwrap_or(0)
        ),
        "eventDrawn" => format!(
            "{} {}.",
            story.does(seat, "draw"),
            event_card_text(story, &e["card"])
        ),
        "eventDrawnFaceDown" => format!("{} an event card.", story.does(seat, "draw")),
        "eventDiscarded" => format!(
            "{} {}.",
            story.does(seat, "discard"),
            event_card(story, &e["card"])
        ),
        "finalRound" => format!(
            "{} married all three daughters: this is the final round.",
            story.does(seat, "have")
        ),
        "gameOver" => {
            let totals: Vec<String> = e["scoring"]["totals"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(s, t)| format!("{} {}", story.who(&Value::from(s)), t))
                .collect();
            format!("the game is over. Scores: {}.", and(&totals))
        }
        _ => return None,
    })
}

pub(super) fn action(story: &Story, kind: &str, a: &Value) -> String {
    match kind {
        "visit" => {
            let text = a["location"]
                .as_str()
                .and_then(|l| story.amori_entry(l))
                .map(|e| e.text.clone())
                .unwrap_or_default();
            format!("go to {} ({text})", place(story, &a["location"]))
        }
        "locationAction" => match word(&a["choice"]) {
            Some(choice) => format!("take the location's action, choosing {choice}"),
            None => "take the location's action".into(),
        },
        "intrigue" => format!("intrigue against {} daughter", story.whose(&a["target"])),
        "take" => {
            let extra = a["card"]
                .as_str()
                .and_then(|c| story.amori_entry(c))
                .map(|e| format!(": {} VP, {}", e.value.unwrap_or(0), e.text))
                .unwrap_or_default();
            format!("take {}{extra}", gentleman(story, &a["card"]))
        }
        "giveUp" => format!(
            "give up every card of {}",
            story.amori_name(&a["gentleman"])
        ),
        "playEvent" => {
            let mut s = format!("play {}", event_card(story, &a["card"]));
            if a["target"].is_number() {
                s += &format!(" against {} daughter", story.whose(&a["target"]));
            }
            if word(&a["location"]).is_some() {
                s += &format!(" at {}", place(story, &a["location"]));
            }
            let text = a["card"]
                .as_str()
                .and_then(|c| story.amori_entry(c))
                .map(|e| e.text.clone())
                .unwrap_or_default();
            format!("{s} — {text}")
        }
        "react" => format!("answer with {}", event_card_text(story, &a["card"])),
        "pass" => "let the card take effect (no answer)".into(),
        "endTurn" => "end your turn and draw an event card".into(),
        "discard" => format!("discard {}", event_card(story, &a["card"])),
        other => words(other),
    }
}

/// A daughter's suitors, by gentleman: "Bodo ×2 (1 VP, needs …)".
fn suitors(story: &Story, cards: &Value) -> String {
    let mut counted: Vec<(String, usize)> = Vec::new();
    for card in strings(cards) {
        let slug = card
            .rsplit_once('-')
            .map_or(card.clone(), |(g, _)| g.to_owned());
        match counted.iter_mut().find(|(g, _)| *g == slug) {
            Some((_, n)) => *n += 1,
            None => counted.push((slug, 1)),
        }
    }
    let named: Vec<String> = counted
        .iter()
        .map(|(slug, n)| {
            let entry = story.amori_entry(slug);
            format!(
                "{} ×{n} ({} VP, {})",
                entry.map_or(slug.as_str(), |e| e.name.as_str()),
                entry.and_then(|e| e.value).unwrap_or(0),
                entry.map_or("", |e| e.text.as_str())
            )
        })
        .collect();
    if named.is_empty() {
        "no suitors".into()
    } else {
        and(&named)
    }
}

pub(super) fn view(story: &Story, v: &Value) -> String {
    let mut out = format!(
        "  turn {}{}; {} gentleman card(s) in the main deck, {} event card(s) in the deck\n",
        number(&v["turn"]).unwrap_or(0),
        if v["finalRound"] == true {
            " (the final round)"
        } else {
            ""
        },
        number(&v["mainDeckSize"]).unwrap_or(0),
        number(&v["eventDeckSize"]).unwrap_or(0)
    );
    for p in v["players"].as_array().into_iter().flatten() {
        let active = &p["active"];
        let at = match word(&p["location"]) {
            Some(_) => format!("at {}", place(story, &p["location"])),
            None => "not out yet".to_owned(),
        };
        out += &format!(
            "  {}: {} {at} ({}), courted by {}",
            story.who(&p["seat"]),
            story.amori_name(&active["daughter"]),
            attributes(&active["attributes"]),
            suitors(story, &active["suitors"])
        );
        let brides: Vec<String> = p["brides"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| {
                format!(
                    "{} married {}",
                    story.amori_name(&b["daughter"]),
                    story.amori_name(&b["husband"])
                )
            })
            .collect();
        if !brides.is_empty() {
            out += &format!("; {}", and(&brides));
        }
        out += &format!(
            "; {} daughter(s) to come, {} event card(s)\n",
            number(&p["faceDown"]).unwrap_or(0),
            number(&p["handSize"]).unwrap_or(0)
        );
        for card in strings(&p["hand"]) {
            out += &format!("    {}\n", event_card_text(story, &Value::String(card)));
        }
    }
    let decks: Vec<String> = v["locationDecks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| number(&d["size"]).unwrap_or(0) > 0)
        .map(|d| {
            format!(
                "{} {}",
                story.amori_name(&d["location"]),
                number(&d["size"]).unwrap_or(0)
            )
        })
        .collect();
    out += &format!("  gentlemen waiting: {}\n", and(&decks));
    if let Some((phase, p)) = only(&v["phase"]) {
        let line = match phase {
            "reaction" => format!(
                "{} {} against {} daughter ({}); answer it or let it happen",
                story.does(&p["attacker"], "play"),
                event_card(story, &p["card"]),
                story.whose(&p["target"]),
                p["card"]
                    .as_str()
                    .and_then(|c| story.amori_entry(c))
                    .map_or("", |e| e.text.as_str())
            ),
            "suitorLimit" => format!(
                "{} would be a fourth suitor of {} daughter: one must go",
                gentleman(story, &p["incoming"]),
                story.whose(&p["seat"])
            ),
            "chooseGentleman" => format!(
                "{} a gentleman at {}",
                story.does(&p["seat"], "choose"),
                place(story, &p["location"])
            ),
            other => words(other),
        };
        out += &format!("  now: {line}\n");
    }
    out
}
