//! What the terminal says, game-independent: the catalogue's names and texts (fetched once
//! from `GET /v1/games`), the seats by name, sentences with "you" for the player's own seat,
//! and enum values as words. Each game's sentences are in the module of its name beside this,
//! reached through the [`Teller`]s the story is given.

use std::collections::HashMap;

use serde_json::Value;

/// One card or piece the catalogue names: its name, a number to show beside it, its text.
#[derive(Debug, Clone, Default)]
pub(super) struct Entry {
    pub name: String,
    pub value: Option<i64>,
    pub text: String,
}

/// What the catalogue says, indexed the way views and events name things.
#[derive(Debug, Default)]
pub(super) struct Catalogue {
    /// Love Letter card ids and role enum names → the role.
    pub roles: HashMap<String, Entry>,
    /// Amori gentlemen, event-card kinds, daughters and locations by id (locations by their
    /// enum name) → their entry; gentlemen's `text` holds their minimums.
    pub amori: HashMap<String, Entry>,
    /// Lopti's special roles by enum name → name and effect.
    pub specials: HashMap<String, Entry>,
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

fn items(value: &Value) -> &[Value] {
    value.as_array().map_or(&[], Vec::as_slice)
}

impl Catalogue {
    /// Reads the answer of `GET /v1/games`; what it lacks is simply not named.
    pub(super) fn from_json(games: &Value) -> Catalogue {
        let mut catalogue = Catalogue::default();
        for game in items(&games["games"]) {
            let data = &game["catalogue"];
            for edition in items(&data["loveLetter"]["editions"]) {
                for role in items(&edition["roles"]) {
                    let entry = Entry {
                        name: text(&role["name"]),
                        value: role["value"].as_i64(),
                        text: text(&role["effect"]),
                    };
                    for card in items(&role["cards"]) {
                        catalogue.roles.insert(text(card), entry.clone());
                    }
                    catalogue.roles.insert(text(&role["role"]), entry);
                }
            }
            let amori = &data["amori"];
            for g in items(&amori["gentlemen"]) {
                let m = &g["minimums"];
                let needs = format!(
                    "needs Reputation {}, Beauty {}, Education {}",
                    m["reputation"], m["beauty"], m["education"]
                );
                catalogue.amori.insert(
                    text(&g["id"]),
                    Entry {
                        name: text(&g["name"]),
                        value: g["victoryPoints"].as_i64(),
                        text: needs,
                    },
                );
            }
            for e in items(&amori["eventCards"]) {
                catalogue.amori.insert(
                    text(&e["id"]),
                    Entry {
                        name: text(&e["name"]),
                        value: None,
                        text: text(&e["effect"]),
                    },
                );
            }
            for d in items(&amori["daughters"]) {
                catalogue.amori.insert(
                    text(&d["id"]),
                    Entry {
                        name: text(&d["name"]),
                        ..Entry::default()
                    },
                );
            }
            for l in items(&amori["locations"]) {
                catalogue.amori.insert(
                    text(&l["location"]),
                    Entry {
                        name: text(&l["name"]),
                        value: None,
                        text: text(&l["action"]),
                    },
                );
            }
            for s in items(&data["lopti"]["specials"]) {
                catalogue.specials.insert(
                    text(&s["special"]),
                    Entry {
                        name: text(&s["name"]),
                        value: None,
                        text: text(&s["effect"]),
                    },
                );
            }
        }
        catalogue
    }
}

/// The sentences of one seat's terminal: the catalogue, the seats' names, and which seat is
/// the player's own.
#[derive(Debug)]
pub(super) struct Story {
    pub catalogue: Catalogue,
    pub me: Option<u64>,
    pub names: Vec<String>,
    /// The games' sentences, by the key their JSON is under.
    pub tellers: &'static [Teller],
}

/// One game's sentences: its events, its actions as choices, its view as a few lines.
#[derive(Debug)]
pub(super) struct Teller {
    /// The key the API's JSON names the game by (`loveLetter`).
    pub game: &'static str,
    pub event: fn(&Story, &str, &Value) -> Option<String>,
    pub action: fn(&Story, &str, &Value) -> String,
    pub view: fn(&Story, &Value) -> String,
}

/// The enum prefixes the API's values carry, longest first where one starts another.
const PREFIXES: &[&str] = &[
    "LOVE_LETTER_ROLE_",
    "LOVE_LETTER_EDITION_",
    "LOVE_LETTER_ROUND_END_",
    "LOVE_LETTER_TOKEN_REASON_",
    "LOPTI_RANK_",
    "LOPTI_SPECIAL_",
    "LOPTI_THROW_",
    "LOPTI_BALLOT_",
    "LOPTI_TIMING_",
    "LOPTI_SOURCE_",
    "LOPTI_BURN_CAUSE_",
    "LOPTI_VOTE_RESULT_",
    "LOPTI_RULE_STATUS_",
    "AMORI_LOCATION_",
    "AMORI_ATTRIBUTE_",
    "AMORI_DIE_FACE_",
    "AMORI_DIE_",
    "MATCH_STATUS_",
];

/// An enum value as words (`LOPTI_BALLOT_YES` → "yes"); `None` for the unset value.
pub(super) fn word(value: &Value) -> Option<String> {
    let name = value.as_str()?;
    if name.ends_with("_UNSPECIFIED") || name.is_empty() {
        return None;
    }
    let bare = PREFIXES
        .iter()
        .find_map(|p| name.strip_prefix(p))
        .unwrap_or(name);
    Some(bare.to_lowercase().replace('_', " "))
}

/// A camelCase field name as words (`mustPickUpOrPass` → "must pick up or pass").
pub(super) fn words(key: &str) -> String {
    let mut out = String::new();
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push(' ');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The first letter in upper case.
pub(super) fn capital(sentence: &str) -> String {
    let mut chars = sentence.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A list as English: "a", "a and b", "a, b and c".
pub(super) fn and(items: &[String]) -> String {
    match items {
        [] => "nothing".into(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The only field of a oneof object and its value (`{"play": {…}}` → ("play", {…})).
pub(super) fn only(value: &Value) -> Option<(&str, &Value)> {
    let fields = value.as_object()?;
    fields.iter().next().map(|(k, v)| (k.as_str(), v))
}

pub(super) fn number(value: &Value) -> Option<u64> {
    match value {
        Value::String(s) => s.parse().ok(),
        other => other.as_u64(),
    }
}

pub(super) fn strings(value: &Value) -> Vec<String> {
    items(value).iter().map(text).collect()
}

/// A verb in the third person singular ("play" → "plays", "have" → "has").
fn third_person(verb: &str) -> String {
    match verb {
        "have" => "has".into(),
        "are" => "is".into(),
        "do" => "does".into(),
        v if v.ends_with('s') || v.ends_with("sh") || v.ends_with("ch") || v.ends_with('x') => {
            format!("{v}es")
        }
        v if v.ends_with('y') && !v.ends_with("ay") && !v.ends_with("ey") => {
            format!("{}ies", &v[..v.len() - 1])
        }
        v => format!("{v}s"),
    }
}

impl Story {
    /// The seat as its name, "you" for the player's own.
    pub(super) fn who(&self, seat: &Value) -> String {
        let Some(seat) = number(seat) else {
            return "someone".into();
        };
        if Some(seat) == self.me {
            return "you".into();
        }
        match self.names.get(seat as usize) {
            Some(name) if !name.is_empty() => format!("{name} (seat {seat})"),
            _ => format!("seat {seat}"),
        }
    }

    /// The seat's possessive: "your", "bob's".
    pub(super) fn whose(&self, seat: &Value) -> String {
        match self.who(seat).as_str() {
            "you" => "your".into(),
            other => format!("{other}'s"),
        }
    }

    /// The seat doing something: "you play", "bob (seat 1) plays".
    pub(super) fn does(&self, seat: &Value, verb: &str) -> String {
        match self.who(seat).as_str() {
            "you" => format!("you {verb}"),
            other => {
                // Only the verb itself agrees: "pick up" → "picks up".
                let (head, tail) = verb.split_once(' ').unwrap_or((verb, ""));
                let head = third_person(head);
                match tail {
                    "" => format!("{other} {head}"),
                    tail => format!("{other} {head} {tail}"),
                }
            }
        }
    }

    /// The seat's own, as the subject says it: "your" for the player, else "their".
    pub(super) fn own(&self, seat: &Value) -> &'static str {
        if number(seat) == self.me && self.me.is_some() {
            "your"
        } else {
            "their"
        }
    }

    /// Seats as names, joined.
    pub(super) fn seats(&self, seats: &Value) -> String {
        let names: Vec<String> = items(seats).iter().map(|s| self.who(s)).collect();
        and(&names)
    }

    /// A Love Letter card by name and value, with its id: "the Priest (2, 2♠)".
    pub(super) fn role_card(&self, card: &Value) -> String {
        let id = text(card);
        match self.catalogue.roles.get(&id) {
            Some(role) => format!(
                "the {} ({}, {id})",
                role.name,
                role.value.unwrap_or_default()
            ),
            None => id,
        }
    }

    /// An Amori id (gentleman card, event card, daughter, location) by its name.
    pub(super) fn amori_name(&self, id: &Value) -> String {
        let id = text(id);
        self.amori_entry(&id).map(|e| e.name.clone()).unwrap_or(id)
    }

    /// The catalogue's entry for an Amori id; a card id (`slander-4`) is found by its kind.
    pub(super) fn amori_entry(&self, id: &str) -> Option<&Entry> {
        self.catalogue.amori.get(id).or_else(|| {
            let (kind, copy) = id.rsplit_once('-')?;
            copy.parse::<u8>().ok()?;
            self.catalogue.amori.get(kind)
        })
    }

    /// One history entry as sentences; `None` for what a player need not read.
    pub(super) fn entry(&self, entry: &Value) -> Option<String> {
        if let Some(joined) = entry.get("joined") {
            return Some(format!(
                "{} takes seat {}.",
                capital(&text(&joined["player"])),
                number(&joined["seat"]).unwrap_or(0)
            ));
        }
        if let Some(left) = entry.get("left") {
            return Some(capital(&format!(
                "{} the match.",
                self.does(&left["seat"], "leave")
            )));
        }
        if let Some(closed) = entry.get("closed") {
            return Some(match closed["reason"].as_str() {
                Some("CLOSE_REASON_EXPIRED") => {
                    "Nobody joined in time: the match expired before it started.".to_owned()
                }
                _ => "The match was cancelled before it started.".to_owned(),
            });
        }
        if let Some(timed_out) = entry.get("timedOut") {
            return Some(capital(&format!(
                "{} out of time: the server played for {}.",
                self.does(&timed_out["seat"], "run"),
                match self.who(&timed_out["seat"]).as_str() {
                    "you" => "you".to_owned(),
                    _ => "them".to_owned(),
                }
            )));
        }
        let (game, event) = only(entry.get("game")?)?;
        let (kind, body) = only(event)?;
        let told = (self.teller(game)?.event)(self, kind, body)?;
        Some(capital(&told))
    }

    /// A legal action as a choice a person reads.
    pub(super) fn action(&self, action: &Value) -> String {
        let Some((game, action)) = only(action) else {
            return "?".into();
        };
        let Some((kind, body)) = only(action) else {
            return "?".into();
        };
        capital(&match self.teller(game) {
            Some(teller) => (teller.action)(self, kind, body),
            None => words(kind),
        })
    }

    /// The game's state as a few lines.
    pub(super) fn view(&self, game: &Value) -> String {
        match only(game).and_then(|(game, view)| Some((self.teller(game)?, view))) {
            Some((teller, view)) => (teller.view)(self, view),
            None => String::new(),
        }
    }

    fn teller(&self, game: &str) -> Option<&'static Teller> {
        self.tellers.iter().find(|t| t.game == game)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn enum_values_read_as_words_and_the_unset_one_as_nothing() {
        assert_eq!(word(&json!("LOPTI_BALLOT_YES")).as_deref(), Some("yes"));
        assert_eq!(
            word(&json!("AMORI_DIE_FACE_DARK_RED_HAT")).as_deref(),
            Some("dark red hat")
        );
        assert_eq!(word(&json!("LOVE_LETTER_ROLE_UNSPECIFIED")), None);
    }

    #[test]
    fn sentences_say_you_to_the_player_and_names_to_the_others() {
        let story = Story {
            catalogue: Catalogue::default(),
            me: Some(0),
            names: vec!["ann".into(), "bob".into()],
            tellers: &[],
        };
        assert_eq!(story.does(&json!(0), "play"), "you play");
        assert_eq!(story.does(&json!(1), "pass"), "bob (seat 1) passes");
        assert_eq!(story.whose(&json!(1)), "bob (seat 1)'s");
        assert_eq!(story.does(&json!(1), "pick up"), "bob (seat 1) picks up");
        assert_eq!(
            (story.own(&json!(0)), story.own(&json!(1))),
            ("your", "their")
        );
        assert_eq!(and(&["a".into(), "b".into(), "c".into()]), "a, b and c");
    }

    #[test]
    fn a_closed_match_says_why_it_ended() {
        let story = Story {
            catalogue: Catalogue::default(),
            me: None,
            names: Vec::new(),
            tellers: &[],
        };
        let told = |reason: &str| story.entry(&json!({ "closed": { "reason": reason } }));
        assert_eq!(
            told("CLOSE_REASON_CANCELLED").as_deref(),
            Some("The match was cancelled before it started.")
        );
        assert!(told("CLOSE_REASON_EXPIRED").is_some_and(|s| s.contains("expired")));
    }
}
