//! Scenario tests: one per rule, per location, per die, per event card and reaction, and one
//! per example of the rulebook. Each test arranges a table directly (moving cards so that
//! every card stays in exactly one place), then plays through the public `Game` interface.
//! Dice are the match's seeded stream: a test that needs a face searches for a stream that
//! rolls it, so the rules under test never bend for tests.

use crate::core::{Audience, Game, GameError, Observation, Seat, Viewer};
use crate::rng::{GameRng, Seed};

use super::data::{Attribute, Attributes, Die, DieFace, Location};
use super::game::Amori;
use super::ids::{CardId, DaughterId, EventCardId};
use super::types::{Action, ActiveDaughter, Config, Error, Event, Phase};

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
fn table(seats: u8) -> Amori {
    let config = Config {
        starting_player: Some(0),
    };
    Amori::setup(&config, seats, Seed::from_u64(7)).unwrap()
}

impl Amori {
    /// Take a gentleman card out of wherever it lies.
    fn pull_card(&mut self, c: CardId) {
        for deck in &mut self.location_decks {
            deck.retain(|x| *x != c);
        }
        self.main_deck.retain(|x| *x != c);
        self.gentleman_discard.retain(|x| *x != c);
        self.retired.retain(|x| *x != c);
        self.removed.retain(|x| *x != c);
        for p in &mut self.players {
            if let Some(d) = p.active.as_mut() {
                d.suitors.retain(|x| *x != c);
            }
        }
    }

    /// Take an event card out of wherever it lies.
    fn pull_event(&mut self, c: EventCardId) {
        self.event_deck.retain(|x| *x != c);
        self.event_discard.retain(|x| *x != c);
        for p in &mut self.players {
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
        p.active = Some(ActiveDaughter {
            daughter: wanted,
            attributes: values,
            suitors: cards,
        });
        p.location = at;
    }

    /// Give `seat` exactly these event cards; the old hand goes under the event deck.
    fn hand(&mut self, seat: Seat, cards: &[&str]) {
        let old = std::mem::take(&mut self.players[usize::from(seat)].hand);
        for c in old {
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
        for c in old {
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

    fn active(&self, seat: Seat) -> &ActiveDaughter {
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
    for p in &g.players {
        assert!(p.active.is_some());
        assert_eq!(p.face_down.len(), 2);
        assert_eq!(p.hand.len(), 2);
        let d = p.active.as_ref().unwrap();
        assert_eq!(d.attributes, d.daughter.data().start);
    }
    let sizes: Vec<usize> = g.location_decks.iter().map(Vec::len).collect();
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
    let in_play = g.main_deck.iter().chain(g.location_decks.iter().flatten());
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
                    cards: g.players[usize::from(seat)].hand.clone(),
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

// ---- moving ------------------------------------------------------------------------------

#[test]
fn a_daughter_must_move_to_a_different_location() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], Some(Location::Theater));
    let before = g.clone();
    let err = g.apply(0, &visit(Location::Theater)).unwrap_err();
    assert_eq!(err.code(), "must-move");
    assert_eq!(g, before);
    assert!(!g.legal_actions(0).contains(&visit(Location::Theater)));
    g.go(0, visit(Location::Park));
    assert_eq!(
        g.phase,
        Phase::ActionOrIntrigue {
            location: Location::Park
        }
    );
}

#[test]
fn she_may_stay_where_she_stands_to_intrigue_there() {
    let mut g = table(2);
    g.daughter(
        0,
        "henriette",
        attrs(1, 1, 1),
        &["bodo-1"],
        Some(Location::Park),
    );
    g.daughter(
        1,
        "sophie",
        attrs(3, 0, 0),
        &["gustav-1"],
        Some(Location::Park),
    );
    assert!(g.legal_actions(0).contains(&Action::Intrigue { target: 1 }));
    let (g, _) = with_rolls(
        &g,
        0,
        Action::Intrigue { target: 1 },
        &[(Die::Intrigue, DieFace::Clover)],
    );
    assert_eq!(g.players[0].location, Some(Location::Park));
    assert_eq!(
        g.phase,
        Phase::IntrigueSpoils {
            taker: 0,
            victim: 1
        }
    );
}

// ---- locations ---------------------------------------------------------------------------

#[test]
fn the_theater_raises_education_then_offers_its_deck() {
    let mut g = table(2);
    g.daughter(0, "otilie", attrs(1, 0, 2), &[], None);
    g.deck(Location::Theater, &["bodo-1", "gustav-2", "konrad-3"]);
    g.go(0, visit(Location::Theater));
    let obs = g.go(0, act());
    assert_eq!(g.active(0).attributes, attrs(1, 0, 3));
    assert!(rolls(&obs).is_empty());
    assert_eq!(
        g.phase,
        Phase::ChooseGentleman {
            seat: 0,
            location: Location::Theater
        }
    );
}

#[test]
fn the_tavern_rolls_casanova_then_drink() {
    let mut g = table(2);
    g.daughter(0, "ludmilla", attrs(2, 3, 2), &[], None);
    g.go(0, visit(Location::Tavern));
    let (g, obs) = with_rolls(
        &g,
        0,
        act(),
        &[
            (Die::Casanova, DieFace::RedHat),
            (Die::Drink, DieFace::Bottle),
        ],
    );
    assert_eq!(g.active(0).attributes, attrs(1, 3, 1));
    assert_eq!(rolls(&obs).len(), 2);
    assert_eq!(
        g.phase,
        Phase::ChooseGentleman {
            seat: 0,
            location: Location::Tavern
        }
    );
}

#[test]
fn the_boulevard_raises_the_attribute_of_the_players_choice() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.go(0, visit(Location::Boulevard));
    let legal = g.legal_actions(0);
    assert!(legal.contains(&Action::LocationAction {
        choice: Some(Attribute::Reputation)
    }));
    assert!(legal.contains(&Action::LocationAction {
        choice: Some(Attribute::Education)
    }));
    for refused in [None, Some(Attribute::Beauty)] {
        let err = g
            .apply(0, &Action::LocationAction { choice: refused })
            .unwrap_err();
        assert_eq!(err, Error::InvalidChoice);
    }
    let mut r = g.clone();
    r.go(
        0,
        Action::LocationAction {
            choice: Some(Attribute::Reputation),
        },
    );
    assert_eq!(r.active(0).attributes, attrs(2, 1, 1));
    g.go(
        0,
        Action::LocationAction {
            choice: Some(Attribute::Education),
        },
    );
    assert_eq!(g.active(0).attributes, attrs(1, 1, 2));
}

#[test]
fn the_poorhouse_raises_reputation() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.go(0, visit(Location::Poorhouse));
    g.go(0, act());
    assert_eq!(g.active(0).attributes, attrs(2, 1, 1));
    assert_eq!(
        g.phase,
        Phase::ChooseGentleman {
            seat: 0,
            location: Location::Poorhouse
        }
    );
}

#[test]
fn the_park_raises_beauty_then_rolls_casanova() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.go(0, visit(Location::Park));
    // Beauty is raised first, so the red hat (2) already finds her beautiful enough.
    let (g, _) = with_rolls(&g, 0, act(), &[(Die::Casanova, DieFace::RedHat)]);
    assert_eq!(g.active(0).attributes, attrs(0, 2, 1));
}

#[test]
fn the_tailor_adds_two_beauty_and_has_no_gentlemen_nor_intrigues() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 4, 1), &["bodo-1"], None);
    g.daughter(
        1,
        "sophie",
        attrs(3, 0, 0),
        &["gustav-1"],
        Some(Location::Tailor),
    );
    g.go(0, visit(Location::Tailor));
    assert!(
        !g.legal_actions(0)
            .iter()
            .any(|a| matches!(a, Action::Intrigue { .. }))
    );
    assert_eq!(
        g.apply(0, &Action::Intrigue { target: 1 })
            .unwrap_err()
            .code(),
        "no-intrigue"
    );
    g.go(0, act());
    assert_eq!(g.active(0).attributes, attrs(1, 5, 1), "clamped at 5");
    assert_eq!(g.phase, Phase::Events);
}

#[test]
fn taking_a_card_refills_the_location_deck_from_the_main_deck() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.deck(Location::Poorhouse, &["bodo-1", "gustav-2", "konrad-3"]);
    g.main_top(&["ludwig-4"]);
    g.go(0, visit(Location::Poorhouse));
    g.go(0, act());
    let main_before = g.main_deck.len();
    let obs = g.go(
        0,
        Action::Take {
            card: card("gustav-2"),
        },
    );
    assert_eq!(g.suitors(0), ["gustav-2"]);
    let mut deck = g.location_decks[Location::Poorhouse.index()].clone();
    deck.sort();
    assert_eq!(deck, [card("bodo-1"), card("konrad-3"), card("ludwig-4")]);
    assert_eq!(g.main_deck.len(), main_before - 1);
    assert!(reached(
        &obs,
        &Event::LocationDeckRefilled {
            location: Location::Poorhouse
        }
    ));
    assert_eq!(g.phase, Phase::Events);
}

#[test]
fn an_empty_location_deck_offers_nothing() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.deck(Location::Theater, &[]);
    g.go(0, visit(Location::Theater));
    g.go(0, act());
    assert_eq!(g.phase, Phase::Events);
    assert!(g.suitors(0).is_empty());
}

#[test]
fn the_main_deck_is_rebuilt_from_the_discards_when_it_runs_out() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.deck(Location::Theater, &["bodo-1"]);
    let rest: Vec<CardId> = std::mem::take(&mut g.main_deck);
    g.gentleman_discard = rest;
    g.go(0, visit(Location::Theater));
    g.go(0, act());
    let discards = g.gentleman_discard.len();
    let obs = g.go(
        0,
        Action::Take {
            card: card("bodo-1"),
        },
    );
    assert!(reached(&obs, &Event::MainDeckReshuffled { size: discards }));
    assert!(g.gentleman_discard.is_empty());
    assert_eq!(g.main_deck.len(), discards - 1);
    assert_eq!(g.location_decks[Location::Theater.index()].len(), 1);
}

#[test]
fn only_the_chooser_sees_the_location_deck_and_only_while_choosing() {
    let mut g = table(3);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.deck(Location::Park, &["konrad-3", "bodo-1"]);
    g.go(0, visit(Location::Park));
    let obs = g.go(0, act());
    let shown = obs
        .iter()
        .find(|o| matches!(o.event, Event::DeckShown { .. }))
        .unwrap();
    assert_eq!(shown.audience, Audience::seat(0));
    let deck_in = |viewer| {
        g.view(viewer).location_decks[Location::Park.index()]
            .cards
            .clone()
    };
    assert_eq!(
        deck_in(Viewer::Seat(0)),
        Some(vec![card("bodo-1"), card("konrad-3")])
    );
    assert_eq!(deck_in(Viewer::Seat(1)), None);
    assert_eq!(deck_in(Viewer::Spectator), None);
    assert_eq!(
        g.view(Viewer::Seat(1)).location_decks[Location::Park.index()].size,
        2
    );
    g.go(
        0,
        Action::Take {
            card: card("bodo-1"),
        },
    );
    assert_eq!(
        g.view(Viewer::Seat(0)).location_decks[Location::Park.index()].cards,
        None
    );
}

// ---- dice --------------------------------------------------------------------------------

#[test]
fn ludmilla_and_the_casanova_die() {
    // Rulebook example 1: Ludmilla has Beauty 3. The dark-red hat (4) spares her; the red (2)
    // or pink (0) hat costs her a point of Reputation; a clover does nothing.
    let mut g = table(2);
    g.daughter(0, "ludmilla", attrs(2, 3, 0), &[], None);
    g.daughter(1, "sophie", attrs(3, 0, 0), &[], None);
    g.hand(1, &["casanova-calls-1"]);
    g.current = 1;
    g.go(1, play("casanova-calls-1", Some(0), None));
    for (face, reputation) in [
        (DieFace::DarkRedHat, 2),
        (DieFace::RedHat, 1),
        (DieFace::PinkHat, 1),
        (DieFace::Clover, 2),
    ] {
        let (after, _) = with_rolls(&g, 0, Action::Pass, &[(Die::Casanova, face)]);
        assert_eq!(
            after.active(0).attributes.reputation,
            reputation,
            "{face:?}"
        );
    }
}

#[test]
fn the_drink_die_costs_education_on_a_bottle_only() {
    let mut g = table(2);
    g.daughter(0, "auguste", attrs(0, 0, 3), &[], None);
    g.daughter(1, "sophie", attrs(3, 0, 0), &[], None);
    g.hand(1, &["drinking-party-1"]);
    g.current = 1;
    g.go(1, play("drinking-party-1", Some(0), None));
    let (bottle, _) = with_rolls(&g, 0, Action::Pass, &[(Die::Drink, DieFace::Bottle)]);
    assert_eq!(bottle.active(0).attributes.education, 2);
    let (clover, _) = with_rolls(&g, 0, Action::Pass, &[(Die::Drink, DieFace::Clover)]);
    assert_eq!(clover.active(0).attributes.education, 3);
}

#[test]
fn dice_faces_follow_the_edition_table_and_are_public() {
    let mut g = table(2);
    g.daughter(0, "ludmilla", attrs(2, 3, 0), &[], None);
    g.go(0, visit(Location::Tavern));
    let obs = g.go(0, act());
    for o in obs
        .iter()
        .filter(|o| matches!(o.event, Event::Rolled { .. }))
    {
        assert_eq!(o.audience, Audience::Everyone);
    }
    // Over many streams every face of each die turns up, in its table proportion.
    let mut rng = GameRng::new(Seed::from_u64(5));
    for die in [Die::Casanova, Die::Drink, Die::Intrigue] {
        let faces = die.faces();
        let mut seen: std::collections::HashMap<DieFace, usize> = Default::default();
        for _ in 0..6000 {
            *seen.entry(faces[rng.below(6) as usize]).or_insert(0) += 1;
        }
        for face in faces {
            let expected = faces.iter().filter(|f| *f == face).count() * 1000;
            let got = seen[face];
            assert!(got.abs_diff(expected) < 250, "{die:?} {face:?}: {got}");
        }
    }
}

// ---- intrigue ----------------------------------------------------------------------------

fn intrigue_table() -> Amori {
    let mut g = table(2);
    g.daughter(
        0,
        "henriette",
        attrs(1, 1, 1),
        &["bodo-1"],
        Some(Location::Theater),
    );
    g.daughter(
        1,
        "sophie",
        attrs(3, 0, 0),
        &["gustav-1", "konrad-1"],
        Some(Location::Park),
    );
    g.go(0, visit(Location::Park));
    g
}

#[test]
fn a_successful_intrigue_takes_a_card_of_the_intriguers_choice() {
    let g = intrigue_table();
    let (mut g, _) = with_rolls(
        &g,
        0,
        Action::Intrigue { target: 1 },
        &[(Die::Intrigue, DieFace::Clover)],
    );
    assert_eq!(g.awaiting().iter().collect::<Vec<_>>(), [0]);
    g.go(
        0,
        Action::Take {
            card: card("konrad-1"),
        },
    );
    assert_eq!(g.suitors(0), ["bodo-1", "konrad-1"]);
    assert_eq!(g.suitors(1), ["gustav-1"]);
    // The intrigue forgoes the location action: no Park beauty.
    assert_eq!(g.active(0).attributes, attrs(1, 1, 1));
    assert_eq!(g.phase, Phase::Events);
}

#[test]
fn a_failed_intrigue_lets_the_victim_take_a_card_out_of_turn() {
    let g = intrigue_table();
    let (mut g, _) = with_rolls(
        &g,
        0,
        Action::Intrigue { target: 1 },
        &[(Die::Intrigue, DieFace::Exclamation)],
    );
    assert_eq!(g.awaiting().iter().collect::<Vec<_>>(), [1]);
    assert!(g.legal_actions(0).is_empty());
    assert_eq!(
        g.apply(
            0,
            &Action::Take {
                card: card("bodo-1")
            }
        )
        .unwrap_err()
        .code(),
        "not-your-turn"
    );
    g.go(
        1,
        Action::Take {
            card: card("bodo-1"),
        },
    );
    assert!(g.suitors(0).is_empty());
    assert_eq!(g.suitors(1), ["gustav-1", "konrad-1", "bodo-1"]);
    assert_eq!(g.phase, Phase::Events);
}

#[test]
fn an_intrigue_needs_both_daughters_to_hold_a_gentleman() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], Some(Location::Theater));
    g.daughter(
        1,
        "sophie",
        attrs(3, 0, 0),
        &["gustav-1"],
        Some(Location::Park),
    );
    g.go(0, visit(Location::Park));
    assert_eq!(
        g.apply(0, &Action::Intrigue { target: 1 }).unwrap_err(),
        Error::NoIntrigue
    );
    assert_eq!(
        g.apply(0, &Action::Intrigue { target: 0 }).unwrap_err(),
        Error::InvalidTarget
    );
}

// ---- three suitors -----------------------------------------------------------------------

#[test]
fn henriette_gives_up_giselbert_for_bodo() {
    // Rulebook example 2: the deck holds none of Alexander, Giselbert or Cornelius, so
    // Henriette gives up Giselbert's cards to take Bodo's.
    let mut g = table(2);
    g.daughter(
        0,
        "henriette",
        attrs(1, 1, 1),
        &["alexander-1", "giselbert-1", "giselbert-2", "cornelius-1"],
        None,
    );
    g.deck(Location::Theater, &["bodo-2", "gustav-2", "konrad-2"]);
    g.go(0, visit(Location::Theater));
    g.go(0, act());
    g.go(
        0,
        Action::Take {
            card: card("bodo-2"),
        },
    );
    assert_eq!(
        g.phase,
        Phase::SuitorLimit {
            seat: 0,
            incoming: card("bodo-2")
        }
    );
    let gentlemen: Vec<_> = g.legal_actions(0);
    assert_eq!(gentlemen.len(), 3);
    let err = g
        .apply(
            0,
            &Action::GiveUp {
                gentleman: "bodo".parse().unwrap(),
            },
        )
        .unwrap_err();
    assert_eq!(err, Error::NotASuitor);
    let obs = g.go(
        0,
        Action::GiveUp {
            gentleman: "giselbert".parse().unwrap(),
        },
    );
    assert_eq!(g.suitors(0), ["alexander-1", "cornelius-1", "bodo-2"]);
    assert!(g.gentleman_discard.contains(&card("giselbert-1")));
    assert!(g.gentleman_discard.contains(&card("giselbert-2")));
    assert!(reached(
        &obs,
        &Event::SuitorJoined {
            seat: 0,
            card: card("bodo-2")
        }
    ));
    assert_eq!(g.phase, Phase::Events);
}

#[test]
fn the_suitor_limit_is_asked_of_the_player_whose_daughter_receives() {
    let mut g = table(2);
    g.daughter(
        0,
        "henriette",
        attrs(1, 1, 1),
        &["bodo-1"],
        Some(Location::Theater),
    );
    g.daughter(
        1,
        "sophie",
        attrs(3, 0, 0),
        &["gustav-1", "konrad-1", "ludwig-1"],
        Some(Location::Park),
    );
    g.go(0, visit(Location::Park));
    let (mut g, _) = with_rolls(
        &g,
        0,
        Action::Intrigue { target: 1 },
        &[(Die::Intrigue, DieFace::Exclamation)],
    );
    g.go(
        1,
        Action::Take {
            card: card("bodo-1"),
        },
    );
    assert_eq!(
        g.phase,
        Phase::SuitorLimit {
            seat: 1,
            incoming: card("bodo-1")
        }
    );
    assert_eq!(g.awaiting().iter().collect::<Vec<_>>(), [1]);
    g.go(
        1,
        Action::GiveUp {
            gentleman: "konrad".parse().unwrap(),
        },
    );
    assert_eq!(g.suitors(1), ["gustav-1", "ludwig-1", "bodo-1"]);
}

// ---- marriage ----------------------------------------------------------------------------

#[test]
fn anna_maria_marries_theobald() {
    // Rulebook example 4: three Theobald cards, Reputation 3, Beauty 1, Education 4.
    let mut g = table(2);
    g.daughter(
        0,
        "anna-maria",
        attrs(3, 1, 3),
        &["theobald-1", "theobald-2", "theobald-3", "bodo-1"],
        None,
    );
    g.daughter(1, "sophie", attrs(3, 0, 0), &["theobald-4"], None);
    g.main_top(&["theobald-5"]);
    g.go(0, visit(Location::Theater));
    let obs = g.go(0, act());
    let bride = &g.players[0].brides[0];
    assert_eq!(bride.husband, "theobald".parse().unwrap());
    assert_eq!(bride.attributes, attrs(3, 1, 4));
    assert_eq!(bride.kept, card("theobald-1"));
    assert!(reached(
        &obs,
        &Event::Married {
            seat: 0,
            daughter: "anna-maria".parse().unwrap(),
            gentleman: "theobald".parse().unwrap(),
            kept: card("theobald-1"),
        }
    ));
    // His other cards leave the game, including Sophie's; her other suitors are discarded.
    for c in ["theobald-2", "theobald-3", "theobald-4"] {
        assert!(g.retired.contains(&card(c)), "{c}");
    }
    assert!(g.suitors(1).is_empty());
    assert!(g.gentleman_discard.contains(&card("bodo-1")));
    // Her sister turns up at her starting values where the bride stood.
    let next = g.players[1 - 1].active.as_ref().unwrap();
    assert_ne!(next.daughter, "anna-maria".parse().unwrap());
    assert_eq!(next.attributes, next.daughter.data().start);
    assert_eq!(g.players[0].location, Some(Location::Theater));
    // The marriage ended the turn: no gentleman choice, the card drawn, seat 1 to play.
    assert_eq!(g.players[0].hand.len(), 3);
    assert_eq!(g.phase, Phase::Visit);
    assert_eq!(g.current, 1);
}

#[test]
fn no_marriage_without_the_gentlemans_minimums() {
    let mut g = table(2);
    g.daughter(
        0,
        "anna-maria",
        attrs(3, 0, 4),
        &["theobald-1", "theobald-2", "theobald-3"],
        None,
    );
    g.go(0, visit(Location::Tailor));
    let mut short = g.clone();
    short.daughter(
        0,
        "anna-maria",
        attrs(3, 0, 3),
        &["theobald-1", "theobald-2", "theobald-3"],
        Some(Location::Tailor),
    );
    // Beauty 2 after the tailor, Education 3: Theobald needs Education 4.
    short.go(0, act());
    assert!(short.players[0].brides.is_empty());
    g.go(0, act());
    assert_eq!(g.players[0].brides.len(), 1);
}

#[test]
fn two_cards_are_not_enough_to_marry() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(5, 5, 5), &["bodo-1", "bodo-2"], None);
    g.go(0, visit(Location::Tailor));
    g.go(0, act());
    assert!(g.players[0].brides.is_empty());
}

#[test]
fn a_marriage_can_happen_in_another_players_turn_and_ends_that_turn() {
    let mut g = table(3);
    g.daughter(
        0,
        "henriette",
        attrs(1, 1, 1),
        &["bodo-1"],
        Some(Location::Theater),
    );
    g.daughter(
        1,
        "sophie",
        attrs(3, 1, 0),
        &["bodo-2", "bodo-3"],
        Some(Location::Park),
    );
    g.go(0, visit(Location::Park));
    let (mut g, _) = with_rolls(
        &g,
        0,
        Action::Intrigue { target: 1 },
        &[(Die::Intrigue, DieFace::Exclamation)],
    );
    let obs = g.go(
        1,
        Action::Take {
            card: card("bodo-1"),
        },
    );
    assert_eq!(g.players[1].brides[0].husband, "bodo".parse().unwrap());
    assert!(
        obs.iter()
            .any(|o| matches!(o.event, Event::Married { seat: 1, .. }))
    );
    // Seat 0's turn is over: they drew, and seat 1 is next.
    assert!(reached(&obs, &Event::EventDrawnFaceDown { seat: 0 }));
    assert_eq!((g.current, g.phase.clone()), (1, Phase::Visit));
}

/// Seat 1's first sister has already married Bodo.
fn bodo_married_to_seat_1(g: &mut Amori) {
    let daughter = g.players[1].face_down.remove(0);
    g.pull_card(card("bodo-6"));
    g.players[1].brides.push(super::types::Bride {
        daughter,
        attributes: attrs(1, 1, 1),
        husband: "bodo".parse().unwrap(),
        kept: card("bodo-6"),
    });
}

#[test]
fn a_married_gentlemans_card_revealed_later_is_retired_and_replaced() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    bodo_married_to_seat_1(&mut g);
    g.deck(Location::Theater, &["bodo-1", "gustav-1"]);
    g.main_top(&["bodo-2", "konrad-1"]);
    g.go(0, visit(Location::Theater));
    g.go(0, act());
    // bodo-1 left the deck; its replacement konrad-1 came, then bodo-2 was found and set aside.
    let mut deck = g.location_decks[Location::Theater.index()].clone();
    deck.sort();
    assert!(
        deck.iter()
            .all(|c| c.gentleman() != "bodo".parse().unwrap())
    );
    assert!(g.retired.contains(&card("bodo-1")));
    assert_eq!(deck.len(), 2);
}

#[test]
fn a_love_letter_skips_a_married_gentlemans_card() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    bodo_married_to_seat_1(&mut g);
    g.main_top(&["gustav-1", "bodo-1"]);
    g.hand(0, &["love-letter-1"]);
    g.go(0, play("love-letter-1", None, None));
    assert_eq!(g.suitors(0), ["gustav-1"]);
    assert!(g.retired.contains(&card("bodo-1")));
}

// ---- event cards -------------------------------------------------------------------------

#[test]
fn the_diadem_private_tutor_and_charity_ball_raise_her_attributes() {
    for (card, expected) in [
        ("diadem-1", attrs(1, 2, 1)),
        ("private-tutor-1", attrs(1, 1, 2)),
        ("charity-ball-1", attrs(2, 1, 1)),
    ] {
        let mut g = table(2);
        g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
        g.hand(0, &[card]);
        g.go(0, play(card, None, None));
        assert_eq!(g.active(0).attributes, expected, "{card}");
        assert!(g.event_discard.contains(&ev(card)));
        assert_eq!(
            g.phase,
            Phase::Visit,
            "playing before the visit keeps the step"
        );
    }
}

#[test]
fn a_love_letter_takes_the_top_card_of_the_main_deck() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.main_top(&["ludwig-2"]);
    g.hand(0, &["love-letter-2"]);
    let obs = g.go(0, play("love-letter-2", None, None));
    assert_eq!(g.suitors(0), ["ludwig-2"]);
    assert!(reached(
        &obs,
        &Event::DrewFromMainDeck {
            seat: 0,
            card: card("ludwig-2")
        }
    ));
}

#[test]
fn a_ball_invitation_shows_one_deck_to_its_player_and_takes_a_card() {
    let mut g = table(3);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.deck(Location::Tavern, &["konrad-2", "ludwig-5"]);
    g.hand(0, &["ball-invitation-1"]);
    assert_eq!(
        g.apply(0, &play("ball-invitation-1", None, Some(Location::Tailor)))
            .unwrap_err(),
        Error::NothingToTake
    );
    assert_eq!(
        g.apply(0, &play("ball-invitation-1", None, None))
            .unwrap_err(),
        Error::InvalidChoice
    );
    g.go(0, visit(Location::Park));
    g.go(0, play("ball-invitation-1", None, Some(Location::Tavern)));
    assert_eq!(
        g.phase,
        Phase::ChooseGentleman {
            seat: 0,
            location: Location::Tavern
        }
    );
    let tavern = Location::Tavern.index();
    assert!(
        g.view(Viewer::Seat(0)).location_decks[tavern]
            .cards
            .is_some()
    );
    assert!(
        g.view(Viewer::Seat(1)).location_decks[tavern]
            .cards
            .is_none()
    );
    g.go(
        0,
        Action::Take {
            card: card("ludwig-5"),
        },
    );
    assert_eq!(g.suitors(0), ["ludwig-5"]);
    assert_eq!(
        g.location_decks[tavern].len(),
        2,
        "refilled from the main deck"
    );
    // Back to the step she was in: the Park's action is still hers to take.
    assert_eq!(
        g.phase,
        Phase::ActionOrIntrigue {
            location: Location::Park
        }
    );
}

/// Seat 0 plays the hostile `card` at seat 1; seat 1 holds `reply`.
fn hostile(card: &str, reply: &[&str]) -> Amori {
    let mut g = table(2);
    g.daughter(
        0,
        "henriette",
        attrs(1, 1, 1),
        &["bodo-1"],
        Some(Location::Park),
    );
    g.daughter(
        1,
        "sophie",
        attrs(3, 2, 2),
        &["gustav-1"],
        Some(Location::Park),
    );
    g.hand(0, &[card]);
    g.hand(1, reply);
    g.go(0, play(card, Some(1), None));
    g
}

#[test]
fn slander_costs_another_daughter_reputation() {
    let mut g = hostile("slander-1", &[]);
    g.go(1, Action::Pass);
    assert_eq!(g.active(1).attributes, attrs(2, 2, 2));
    assert_eq!(g.phase, Phase::Visit);
}

#[test]
fn casanova_calls_rolls_the_casanova_die_for_another_daughter() {
    let g = hostile("casanova-calls-1", &[]);
    let (g, _) = with_rolls(&g, 1, Action::Pass, &[(Die::Casanova, DieFace::RedHat)]);
    assert_eq!(g.active(1).attributes, attrs(2, 2, 2));
}

#[test]
fn a_drinking_party_rolls_the_drink_die_for_another_daughter() {
    let g = hostile("drinking-party-1", &[]);
    let (g, _) = with_rolls(&g, 1, Action::Pass, &[(Die::Drink, DieFace::Bottle)]);
    assert_eq!(g.active(1).attributes, attrs(3, 2, 1));
}

#[test]
fn an_intrigue_by_letter_reaches_a_daughter_at_another_location() {
    let mut g = table(2);
    g.daughter(
        0,
        "henriette",
        attrs(1, 1, 1),
        &["bodo-1"],
        Some(Location::Theater),
    );
    g.daughter(
        1,
        "sophie",
        attrs(3, 0, 0),
        &["gustav-1"],
        Some(Location::Tailor),
    );
    g.hand(0, &["intrigue-by-letter-1"]);
    let refused = g
        .apply(0, &play("intrigue-by-letter-1", Some(1), None))
        .unwrap_err();
    assert_eq!(refused, Error::NoIntrigue, "not at the tailor");
    g.players[1].location = Some(Location::Tavern);
    g.go(0, play("intrigue-by-letter-1", Some(1), None));
    let (mut g, _) = with_rolls(&g, 1, Action::Pass, &[(Die::Intrigue, DieFace::Clover)]);
    assert_eq!(
        g.phase,
        Phase::IntrigueSpoils {
            taker: 0,
            victim: 1
        }
    );
    g.go(
        0,
        Action::Take {
            card: card("gustav-1"),
        },
    );
    assert_eq!(g.suitors(0), ["bodo-1", "gustav-1"]);
    assert_eq!(
        g.phase,
        Phase::Visit,
        "the letter does not use up the turn's action"
    );
}

#[test]
fn enlarging_the_property_and_an_inheritance_are_kept_for_points() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.hand(0, &["enlarge-the-property-1", "unexpected-inheritance-2"]);
    g.go(0, play("enlarge-the-property-1", None, None));
    g.go(0, play("unexpected-inheritance-2", None, None));
    assert_eq!(g.players[0].kept.len(), 2);
    assert_eq!(g.scoring().event_points[0], 5);
    assert_eq!(g.view(Viewer::Seat(1)).players[0].kept_for_points.len(), 2);
}

#[test]
fn a_chaperone_cancels_a_hostile_card() {
    let mut g = hostile("slander-1", &["chaperone-1"]);
    assert_eq!(g.awaiting().iter().collect::<Vec<_>>(), [1]);
    let obs = g.go(
        1,
        Action::React {
            card: ev("chaperone-1"),
        },
    );
    assert_eq!(g.active(1).attributes, attrs(3, 2, 2));
    assert!(g.event_discard.contains(&ev("slander-1")));
    assert!(g.event_discard.contains(&ev("chaperone-1")));
    assert!(reached(
        &obs,
        &Event::Reacted {
            seat: 1,
            card: ev("chaperone-1")
        }
    ));
    assert_eq!((g.current, g.phase.clone()), (0, Phase::Visit));
}

#[test]
fn a_chaperone_also_stops_an_intrigue_by_letter() {
    let mut g = table(2);
    g.daughter(
        0,
        "henriette",
        attrs(1, 1, 1),
        &["bodo-1"],
        Some(Location::Theater),
    );
    g.daughter(
        1,
        "sophie",
        attrs(3, 0, 0),
        &["gustav-1"],
        Some(Location::Tavern),
    );
    g.hand(0, &["intrigue-by-letter-2"]);
    g.hand(1, &["chaperone-3"]);
    g.go(0, play("intrigue-by-letter-2", Some(1), None));
    let obs = g.go(
        1,
        Action::React {
            card: ev("chaperone-3"),
        },
    );
    assert!(rolls(&obs).is_empty());
    assert_eq!(g.suitors(1), ["gustav-1"]);
}

#[test]
fn the_reaction_window_waits_for_the_target_even_without_a_chaperone() {
    let g = hostile("slander-2", &["diadem-1"]);
    assert_eq!(g.awaiting().iter().collect::<Vec<_>>(), [1]);
    assert_eq!(g.legal_actions(1), [Action::Pass]);
    assert_eq!(g.default_action(1), Some(Action::Pass));
    let mut g2 = g.clone();
    assert_eq!(
        g2.apply(
            1,
            &Action::React {
                card: ev("diadem-1")
            }
        )
        .unwrap_err(),
        Error::NotAReaction
    );
    assert_eq!(
        g2.apply(
            1,
            &Action::React {
                card: ev("chaperone-2")
            }
        )
        .unwrap_err(),
        Error::CardNotInHand
    );
    assert_eq!(g2, g);
}

#[test]
fn a_chaperone_is_not_played_in_ones_own_turn() {
    let mut g = table(2);
    g.hand(0, &["chaperone-1"]);
    assert!(
        !g.legal_actions(0)
            .iter()
            .any(|a| matches!(a, Action::PlayEvent { .. }))
    );
    assert_eq!(
        g.apply(0, &play("chaperone-1", None, None))
            .unwrap_err()
            .code(),
        "reaction-only"
    );
}

#[test]
fn hostile_cards_aim_only_at_another_players_daughter() {
    let mut g = table(2);
    g.hand(0, &["slander-1"]);
    assert_eq!(
        g.apply(0, &play("slander-1", Some(0), None)).unwrap_err(),
        Error::InvalidTarget
    );
    assert_eq!(
        g.apply(0, &play("slander-1", None, None)).unwrap_err(),
        Error::InvalidTarget
    );
    assert_eq!(
        g.apply(0, &play("slander-1", Some(9), None)).unwrap_err(),
        Error::InvalidTarget
    );
}

// ---- ending the turn ---------------------------------------------------------------------

#[test]
fn drawing_an_event_card_ends_the_turn() {
    let mut g = table(2);
    g.go(0, visit(Location::Tailor));
    g.go(0, act());
    let obs = g.go(0, Action::EndTurn);
    let private = obs
        .iter()
        .find(|o| matches!(o.event, Event::EventDrawn { .. }))
        .unwrap();
    assert_eq!(private.audience, Audience::seat(0));
    assert!(reached(&obs, &Event::EventDrawnFaceDown { seat: 0 }));
    assert_eq!(g.players[0].hand.len(), 3);
    assert_eq!((g.current, g.phase.clone()), (1, Phase::Visit));
}

#[test]
fn a_sixth_card_is_discarded_down_to_the_hand_limit() {
    let mut g = table(2);
    g.hand(
        0,
        &["diadem-1", "diadem-2", "diadem-3", "diadem-4", "diadem-5"],
    );
    g.phase = Phase::Events;
    g.go(0, Action::EndTurn);
    assert_eq!(g.phase, Phase::Discard { seat: 0 });
    assert_eq!(g.legal_actions(0).len(), 6);
    g.go(
        0,
        Action::Discard {
            card: ev("diadem-2"),
        },
    );
    assert_eq!(g.players[0].hand.len(), 5);
    assert!(g.event_discard.contains(&ev("diadem-2")));
    assert_eq!(g.current, 1);
}

#[test]
fn the_event_deck_is_reshuffled_from_the_discards_when_it_runs_out() {
    let mut g = table(2);
    let all = std::mem::take(&mut g.event_deck);
    g.event_discard = all;
    g.phase = Phase::Events;
    let size = g.event_discard.len();
    let obs = g.go(0, Action::EndTurn);
    assert!(reached(&obs, &Event::EventDeckReshuffled { size }));
    assert_eq!(g.event_deck.len(), size - 1);
}

#[test]
fn otilies_turn_at_the_theater() {
    // Rulebook example 3: Otilie visits the theater and gains Education, looks at its deck and
    // takes a second Alexander; the other two go back with a card from the main deck. Then she
    // plays The Diadem for Beauty and draws an event card to end her turn.
    let mut g = table(2);
    g.daughter(0, "otilie", attrs(1, 0, 2), &["alexander-1"], None);
    g.deck(Location::Theater, &["alexander-2", "bodo-1", "gustav-1"]);
    g.main_top(&["ludwig-1"]);
    g.hand(0, &["diadem-3"]);
    g.go(0, visit(Location::Theater));
    g.go(0, act());
    assert_eq!(g.active(0).attributes, attrs(1, 0, 3));
    g.go(
        0,
        Action::Take {
            card: card("alexander-2"),
        },
    );
    assert_eq!(g.suitors(0), ["alexander-1", "alexander-2"]);
    let mut deck = g.location_decks[Location::Theater.index()].clone();
    deck.sort();
    assert_eq!(deck, [card("bodo-1"), card("gustav-1"), card("ludwig-1")]);
    g.go(0, play("diadem-3", None, None));
    assert_eq!(g.active(0).attributes, attrs(1, 1, 3));
    g.go(0, Action::EndTurn);
    assert_eq!(g.players[0].hand.len(), 1);
    assert_eq!(g.current, 1);
}

// ---- the end -----------------------------------------------------------------------------

/// Seat `seat` has married two daughters and plays the third with three Bodo cards.
fn about_to_finish(g: &mut Amori, seat: Seat) {
    let p = &mut g.players[usize::from(seat)];
    let sisters = std::mem::take(&mut p.face_down);
    for (d, husband) in sisters.into_iter().zip(["cornelius", "gustav"]) {
        let husband: super::ids::GentlemanId = husband.parse().unwrap();
        let kept = husband.card(6).unwrap();
        g.pull_card(kept);
        g.players[usize::from(seat)]
            .brides
            .push(super::types::Bride {
                daughter: d,
                attributes: attrs(1, 2, 2),
                husband,
                kept,
            });
    }
    let name = g.active(seat).daughter.to_string();
    g.daughter(
        seat,
        &name,
        attrs(1, 1, 1),
        &["bodo-1", "bodo-2", "bodo-3"],
        None,
    );
}

#[test]
fn the_third_marriage_starts_the_last_round_which_is_played_out() {
    let mut g = table(3);
    g.starting_player = 0;
    g.current = 1;
    about_to_finish(&mut g, 1);
    g.go(1, visit(Location::Tailor));
    let obs = g.go(1, act());
    assert!(reached(&obs, &Event::FinalRound { seat: 1 }));
    assert!(g.final_round);
    assert!(g.players[1].active.is_none());
    // Seat 2 still plays; then the round is over at the starting player.
    assert_eq!((g.current, g.phase.clone()), (2, Phase::Visit));
    assert_eq!(g.outcome(), None);
    g.go(2, visit(Location::Tailor));
    g.go(2, act());
    let obs = g.go(2, Action::EndTurn);
    assert_eq!(g.phase, Phase::Over);
    assert!(g.awaiting().is_empty());
    assert!(
        obs.iter()
            .any(|o| matches!(o.event, Event::GameOver { .. }))
    );
    assert_eq!(g.apply(0, &Action::EndTurn).unwrap_err(), Error::MatchOver);
}

#[test]
fn a_player_with_every_daughter_married_takes_no_more_turns() {
    let mut g = table(3);
    g.starting_player = 1;
    g.current = 1;
    about_to_finish(&mut g, 2);
    // Seat 2's last daughter marries in seat 1's turn (a failed intrigue hands her a card).
    g.daughter(
        1,
        "sophie",
        attrs(3, 0, 0),
        &["gustav-1"],
        Some(Location::Theater),
    );
    g.players[2].active.as_mut().unwrap().suitors.pop();
    g.players[2].location = Some(Location::Park);
    g.go(1, visit(Location::Park));
    let (mut g, _) = with_rolls(
        &g,
        1,
        Action::Intrigue { target: 2 },
        &[(Die::Intrigue, DieFace::Exclamation)],
    );
    g.daughter(
        1,
        "sophie",
        attrs(3, 0, 0),
        &["bodo-3"],
        Some(Location::Park),
    );
    g.go(
        2,
        Action::Take {
            card: card("bodo-3"),
        },
    );
    assert!(g.final_round);
    // Seat 2 is skipped; seat 0 plays the round's last turn.
    assert_eq!(g.current, 0);
    g.go(0, visit(Location::Tailor));
    g.go(0, act());
    g.go(0, Action::EndTurn);
    assert_eq!(g.phase, Phase::Over);
}

#[test]
fn scoring_counts_marriages_kept_cards_and_medals() {
    let mut g = table(2);
    about_to_finish(&mut g, 0);
    g.players[0].active = None;
    g.hand(0, &["unexpected-inheritance-1"]);
    let c = g.players[0].hand.pop().unwrap();
    g.players[0].kept.push(c);
    g.daughter(1, "sophie", attrs(0, 0, 0), &[], None);
    let s = g.scoring();
    // Seat 0: Cornelius 1 + Gustav 1 VP, 3 from the inheritance.
    assert_eq!(s.marriage_points[0], 2);
    assert_eq!(s.event_points[0], 3);
    let medals = s.medals.iter().filter(|m| m.winner == Some(0)).count() as i32;
    assert_eq!(s.totals[0], 5 + 2 * medals);
    assert_eq!(s.families[0], attrs(2, 4, 4));
}

#[test]
fn a_tied_medal_is_not_awarded() {
    let mut g = table(2);
    // Both families total Reputation 5 (face-down sisters count at their starting values).
    let sisters: u8 = g.players[0]
        .face_down
        .iter()
        .map(|d| d.data().start.reputation)
        .sum();
    let others: u8 = g.players[1]
        .face_down
        .iter()
        .map(|d| d.data().start.reputation)
        .sum();
    let name0 = g.active(0).daughter.to_string();
    let name1 = g.active(1).daughter.to_string();
    g.daughter(0, &name0, attrs(10 - sisters - 5, 5, 0), &[], None);
    g.daughter(1, &name1, attrs(10 - others - 5, 0, 0), &[], None);
    let s = g.scoring();
    assert_eq!(s.families[0].reputation, s.families[1].reputation);
    assert_eq!(s.medals[0].winner, None);
    assert_eq!(
        s.medals[1].winner,
        Some(0),
        "beauty: 5 plus sisters beats 0 plus sisters"
    );
}

#[test]
fn equal_totals_give_several_winners() {
    let mut g = table(2);
    g.phase = Phase::Over;
    for seat in 0..2 {
        let name = g.active(seat).daughter.to_string();
        g.daughter(seat, &name, attrs(0, 0, 0), &[], None);
        g.players[seat as usize].face_down.clear();
    }
    // Nobody scores: every medal is tied at zero, so both win with 0 points.
    let out = g.outcome().unwrap();
    assert_eq!(out.scores, [0, 0]);
    assert_eq!(out.winners.len(), 2);
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
fn every_awaited_seat_has_a_legal_default_action() {
    let mut g = Amori::setup(&Config::default(), 3, Seed::from_u64(11)).unwrap();
    for _ in 0..400 {
        let Some(seat) = g.awaiting().iter().next() else {
            break;
        };
        let action = g.default_action(seat).unwrap();
        assert!(g.legal_actions(seat).contains(&action));
        g.go(seat, action);
        for other in (0..3).filter(|s| *s != seat) {
            if !g.awaiting().contains(other) {
                assert_eq!(g.default_action(other), None);
            }
        }
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
        include_str!("game.rs"),
        include_str!("types.rs"),
        include_str!("ids.rs"),
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
