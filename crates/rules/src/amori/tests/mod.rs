//! Scenario tests: one per rule, per location, per die, per event card and reaction, and one
//! per example of the rulebook (the turn's steps in `turns`, event cards and the end in
//! `events`). Each test arranges a table directly (moving cards so that every card stays in
//! exactly one place), then plays through the public `Game` interface.
//! Dice are the match's seeded stream: a test that needs a face searches for a stream that
//! rolls it, so the rules under test never bend for tests.

use crate::core::{Audience, Game, GameError, Observation, Seat, Viewer};
use crate::rng::{GameRng, Seed};

use super::cards::{CardId, DaughterId, EventCardId};
use super::data::{Attribute, Attributes, Die, DieFace, Location};
use super::error::Error;
use super::game::{Amori, Daughter};
use super::types::{Action, Config, Event, Phase};

mod events;
mod turns;

type Obs = Vec<Observation<Event>>;

fn card(id: &str) -> CardId {
    id.parse().unwrap()
}

fn ev(id: &str) -> EventCardId {
    id.parse().unwrap()
}

fn attrs(r: u8, b: u8, e: u8) -> Attributes {
    Attributes::new(r, b, e)
}

/// A table of `seats` players, seat 0 to start, before anyone has moved.
/// Two seats: Henriette (1, 1, 1, courted by Bodo) for seat 0 at `first`, and Sophie (3, 0,
/// 0, courted by Gustav) for seat 1 at `second`.
fn rivals(first: Location, second: Location) -> Amori {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &["bodo-1"], Some(first));
    g.daughter(1, "sophie", attrs(3, 0, 0), &["gustav-1"], Some(second));
    g
}

fn table(seats: u8) -> Amori {
    let config = Config {
        starting_player: Some(0),
    };
    Amori::setup(&config, seats, Seed::from_u64(7)).unwrap()
}

impl Amori {
    /// Take a gentleman card out of wherever it lies.
    fn pull_card(&mut self, c: CardId) {
        for deck in self.location_decks.iter_mut() {
            deck.retain(|x| *x != c);
        }
        self.main_deck.retain(|x| *x != c);
        self.gentleman_discard.retain(|x| *x != c);
        self.retired.retain(|x| *x != c);
        self.removed.retain(|x| *x != c);
        for p in self.players.iter_mut() {
            if let Some(d) = p.active.as_mut() {
                d.suitors.retain(|x| *x != c);
            }
        }
    }

    /// Take an event card out of wherever it lies.
    fn pull_event(&mut self, c: EventCardId) {
        self.event_deck.retain(|x| *x != c);
        self.event_discard.retain(|x| *x != c);
        for p in self.players.iter_mut() {
            p.hand.retain(|x| *x != c);
            p.kept.retain(|x| *x != c);
        }
    }

    /// Put `name` in play for `seat` with these values, suitors and pawn.
    fn daughter(
        &mut self,
        seat: Seat,
        name: &str,
        values: Attributes,
        suitors: &[&str],
        at: Option<Location>,
    ) {
        let wanted: DaughterId = name.parse().unwrap();
        let previous = self.players[usize::from(seat)]
            .active
            .as_ref()
            .map(|d| d.daughter);
        // Swap boards so each daughter stays on exactly one table.
        if let Some(previous) = previous.filter(|p| *p != wanted) {
            for slot in self.unused_daughters.iter_mut() {
                if *slot == wanted {
                    *slot = previous;
                }
            }
            for p in self.players.iter_mut() {
                for slot in p.face_down.iter_mut() {
                    if *slot == wanted {
                        *slot = previous;
                    }
                }
                if let Some(d) = p.active.as_mut()
                    && d.daughter == wanted
                {
                    d.daughter = previous;
                }
            }
        }
        let cards: Vec<CardId> = suitors.iter().map(|s| card(s)).collect();
        for c in &cards {
            self.pull_card(*c);
        }
        let p = &mut self.players[usize::from(seat)];
        p.active = Some(Daughter {
            daughter: wanted,
            attributes: values,
            suitors: cards.iter().copied().collect(),
        });
        p.location = at;
    }

    /// Give `seat` exactly these event cards; the old hand goes under the event deck.
    fn hand(&mut self, seat: Seat, cards: &[&str]) {
        let old = std::mem::take(&mut self.players[usize::from(seat)].hand);
        for &c in old.iter() {
            self.event_deck.insert(0, c);
        }
        for c in cards {
            self.pull_event(ev(c));
            self.players[usize::from(seat)].hand.push(ev(c));
        }
    }

    /// Make `location`'s deck exactly these cards; the old ones go under the main deck.
    fn deck(&mut self, location: Location, cards: &[&str]) {
        let old = std::mem::take(&mut self.location_decks[location.index()]);
        for &c in old.iter() {
            self.main_deck.insert(0, c);
        }
        for c in cards {
            self.pull_card(card(c));
            self.location_decks[location.index()].push(card(c));
        }
    }

    /// Put these cards on top of the main deck, the last one on top.
    fn main_top(&mut self, cards: &[&str]) {
        for c in cards {
            self.pull_card(card(c));
            self.main_deck.push(card(c));
        }
    }

    fn active(&self, seat: Seat) -> &Daughter {
        self.players[usize::from(seat)].active.as_ref().unwrap()
    }

    fn suitors(&self, seat: Seat) -> Vec<String> {
        self.active(seat)
            .suitors
            .iter()
            .map(|c| c.to_string())
            .collect()
    }

    fn go(&mut self, seat: Seat, action: Action) -> Obs {
        self.apply(seat, &action)
            .unwrap_or_else(|e| panic!("{action:?}: {}", e.code()))
    }
}

/// Every die roll in `obs`, in order.
fn rolls(obs: &Obs) -> Vec<(Die, DieFace)> {
    obs.iter()
        .filter_map(|o| match o.event {
            Event::Rolled { die, face, .. } => Some((die, face)),
            _ => None,
        })
        .collect()
}

/// Apply `action` on a copy of `state` whose dice roll exactly `wanted`: searches the seeded
/// streams for one that does.
fn with_rolls(
    state: &Amori,
    seat: Seat,
    action: Action,
    wanted: &[(Die, DieFace)],
) -> (Amori, Obs) {
    for n in 0..2000 {
        let mut g = state.clone();
        g.rng = GameRng::new(Seed::from_u64(n));
        let obs = g.go(seat, action.clone());
        if rolls(&obs) == wanted {
            return (g, obs);
        }
    }
    panic!("no stream rolls {wanted:?}");
}

fn reached(obs: &Obs, event: &Event) -> bool {
    obs.iter().any(|o| &o.event == event)
}

fn visit(location: Location) -> Action {
    Action::Visit { location }
}

fn act() -> Action {
    Action::LocationAction { choice: None }
}

fn play(card: &str, target: Option<Seat>, location: Option<Location>) -> Action {
    Action::PlayEvent {
        card: ev(card),
        target,
        location,
    }
}

// ---- setup -------------------------------------------------------------------------------

#[test]
fn setup_deals_daughters_event_cards_and_the_location_decks() {
    let g = Amori::setup(&Config::default(), 4, Seed::from_u64(1)).unwrap();
    for p in g.players.iter() {
        assert!(p.active.is_some());
        assert_eq!(p.face_down.len(), 2);
        assert_eq!(p.hand.len(), 2);
        let d = p.active.as_ref().unwrap();
        assert_eq!(d.attributes, d.daughter.data().start);
    }
    let sizes: Vec<usize> = g.location_decks.iter().map(|d| d.len()).collect();
    assert_eq!(sizes, [3, 7, 2, 3, 5, 0]);
    assert_eq!(g.main_deck.len(), 84 - 20);
    assert_eq!(g.event_deck.len(), 46 - 8);
    assert!(g.removed.is_empty());
    assert_eq!(g.phase, Phase::Visit);
}

#[test]
fn two_player_setup_removes_the_brown_gentlemen() {
    let g = table(2);
    assert_eq!(g.removed.len(), 12);
    assert!(g.removed.iter().all(|c| c.gentleman().data().brown));
    let in_play = g
        .main_deck
        .iter()
        .chain(g.location_decks.iter().flat_map(|d| d.iter()));
    assert!(in_play.clone().all(|c| !c.gentleman().data().brown));
    assert_eq!(in_play.count(), 72);
}

#[test]
fn setup_takes_two_to_four_players_and_a_valid_starting_player() {
    for seats in [0, 1, 5] {
        assert!(Amori::setup(&Config::default(), seats, Seed::from_u64(1)).is_err());
    }
    let bad = Config {
        starting_player: Some(3),
    };
    assert!(Amori::setup(&bad, 3, Seed::from_u64(1)).is_err());
    let chosen = Config {
        starting_player: Some(2),
    };
    let g = Amori::setup(&chosen, 3, Seed::from_u64(1)).unwrap();
    assert_eq!(g.awaiting().iter().collect::<Vec<_>>(), [2]);
    let starts: std::collections::BTreeSet<Seat> = (0..40)
        .map(|n| {
            Amori::setup(&Config::default(), 4, Seed::from_u64(n))
                .unwrap()
                .starting_player
        })
        .collect();
    assert_eq!(starts.len(), 4, "a random start reaches every seat");
}

#[test]
fn setup_tells_each_seat_its_own_hand_and_everyone_the_public_table() {
    for seats in [2u8, 3, 4] {
        let g = Amori::setup(&Config::default(), seats, Seed::from_u64(u64::from(seats))).unwrap();
        let obs = g.setup_observations();
        let seen = |viewer: Viewer| -> Vec<Event> {
            obs.iter()
                .filter(|o| o.audience.includes(viewer))
                .map(|o| o.event.clone())
                .collect()
        };
        let public = seen(Viewer::Spectator);
        assert_eq!(public.len(), 2, "the layout and the first turn");
        let Event::SetUp {
            starting_player,
            seats: tables,
            location_decks,
            main_deck_size,
            event_deck_size,
            removed,
        } = &public[0]
        else {
            panic!("the layout comes first: {public:?}");
        };
        assert_eq!(*starting_player, g.starting_player);
        assert_eq!(tables.len(), usize::from(seats));
        for (i, t) in tables.iter().enumerate() {
            let d = g.players[i].active.as_ref().unwrap();
            assert_eq!(
                (t.seat, t.daughter, t.attributes),
                (i as Seat, d.daughter, d.attributes)
            );
            assert_eq!((t.face_down, t.hand_size), (2, 2));
        }
        let sizes: Vec<usize> = location_decks.iter().map(|d| d.size).collect();
        assert_eq!(sizes, [3, 7, 2, 3, 5, 0]);
        assert_eq!(*main_deck_size, g.main_deck.len());
        assert_eq!(*event_deck_size, 46 - 2 * usize::from(seats));
        assert_eq!(removed.len(), if seats == 2 { 12 } else { 0 });
        assert_eq!(
            public[1],
            Event::TurnStarted {
                seat: g.starting_player,
                turn: 1
            }
        );

        for seat in 0..seats {
            let mine = seen(Viewer::Seat(seat));
            let hands: Vec<&Event> = mine
                .iter()
                .filter(|e| matches!(e, Event::HandDealt { .. }))
                .collect();
            assert_eq!(
                hands,
                [&Event::HandDealt {
                    seat,
                    cards: g.players[usize::from(seat)].hand.to_vec(),
                }],
                "seat {seat} learns its own hand and no other"
            );
            assert_eq!(mine.len(), public.len() + 1);
        }
        // Each hand goes to its seat alone, and nothing else setup says is private.
        for o in &obs {
            match &o.event {
                Event::HandDealt { seat, .. } => assert_eq!(o.audience, Audience::seat(*seat)),
                _ => assert_eq!(o.audience, Audience::Everyone),
            }
        }
    }
}

// ---- refusals ----------------------------------------------------------------------------

#[test]
fn refusals_have_stable_codes_and_leave_the_state_untouched() {
    let mut g = table(2);
    let before = g.clone();
    let cases: Vec<(Seat, Action, &str)> = vec![
        (1, visit(Location::Park), "not-your-turn"),
        (7, visit(Location::Park), "no-such-seat"),
        (0, Action::EndTurn, "wrong-phase"),
        (
            0,
            Action::Take {
                card: card("bodo-1"),
            },
            "wrong-phase",
        ),
        (0, Action::Pass, "wrong-phase"),
        (0, play("diadem-5", None, None), "card-not-in-hand"),
    ];
    for (seat, action, code) in cases {
        assert_eq!(
            g.apply(seat, &action).unwrap_err().code(),
            code,
            "{action:?}"
        );
        assert_eq!(g, before);
    }
}

#[test]
fn actions_and_events_keep_a_stable_json_shape() {
    // Stored logs and the API depend on these spellings: changing one breaks old matches.
    let action = play("ball-invitation-2", None, Some(Location::Tavern));
    assert_eq!(
        serde_json::to_string(&action).unwrap(),
        r#"{"type":"play-event","card":"ball-invitation-2","target":null,"location":"tavern"}"#
    );
    let give_up = Action::GiveUp {
        gentleman: "bertram-von-biedenfeld".parse().unwrap(),
    };
    assert_eq!(
        serde_json::to_string(&give_up).unwrap(),
        r#"{"type":"give-up","gentleman":"bertram-von-biedenfeld"}"#
    );
    let event = Event::Rolled {
        seat: 1,
        die: Die::Casanova,
        face: DieFace::DarkRedHat,
    };
    assert_eq!(
        serde_json::to_string(&event).unwrap(),
        r#"{"type":"rolled","seat":1,"die":"casanova","face":"dark-red-hat"}"#
    );
    let phase = Phase::SuitorLimit {
        seat: 2,
        incoming: card("bodo-4"),
    };
    assert_eq!(
        serde_json::to_string(&phase).unwrap(),
        r#"{"type":"suitor-limit","seat":2,"incoming":"bodo-4"}"#
    );
    for text in [
        r#"{"type":"end-turn"}"#,
        r#"{"type":"take","card":"theobald-6"}"#,
    ] {
        let parsed: Action = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&parsed).unwrap(), text);
    }
}

#[test]
fn the_rules_code_names_no_edition_data() {
    // Swapping the edition's data must not touch the rules: no gentleman, daughter or event
    // card is named outside `data.rs` (and these tests).
    let rules = [
        include_str!("../game.rs"),
        include_str!("../game/steps.rs"),
        include_str!("../game/marriage.rs"),
        include_str!("../types.rs"),
        include_str!("../error.rs"),
        include_str!("../cards.rs"),
    ];
    let slugs = super::data::GENTLEMEN
        .iter()
        .map(|g| g.slug)
        .chain(super::data::DAUGHTERS.iter().map(|d| d.slug))
        .chain(super::data::EVENT_KINDS.iter().map(|e| e.slug));
    // Code only: documentation may give examples, and unit tests may name cards.
    let code: Vec<&str> = rules
        .iter()
        .flat_map(|source| source.split("#[cfg(test)]").next().unwrap_or("").lines())
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect();
    assert!(code.len() > 500);
    for slug in slugs {
        let quoted = format!("\"{slug}");
        assert!(
            !code.iter().any(|l| l.contains(&quoted)),
            "{slug} is named in the rules code"
        );
    }
}
