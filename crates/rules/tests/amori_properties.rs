//! Amori e Intrighi under the shared invariant harness ([`missive_rules::testing`]) at every
//! seat count, with what is Amori's own: who may hear each event, what each viewer may not
//! know, card and daughter conservation, attribute ranges, the suitor limit, that only the
//! awaited seat may act, and that games end under random play as well as under a policy that
//! brings marriages closer.

use std::collections::HashMap;

use missive_rules::amori::Event;
use missive_rules::amori::{
    Action, Amori, Attribute, CardId, Config, DaughterId, EventCardId, Location, Phase,
};
use missive_rules::testing::{self, Fixture, Heard, Plan};
use missive_rules::{Game, GameError, GameRng, Seat, Seed, Viewer};
use serde_json::Value;

/// How a walk picks among legal actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Policy {
    /// Uniformly at random.
    Random,
    /// At random, but preferring moves that bring marriages closer (see [`progress_pick`]).
    Progress,
}

/// Upper bound on actions in one walk; a walk that reaches it counts as stalled.
const MAX_STEPS: usize = 20_000;

struct Walk {
    actions: usize,
    turns: u32,
    finished: bool,
}

fn awaited(state: &Amori) -> Option<Seat> {
    state.awaiting().iter().next()
}

/// Walk one game under `policy` for at most [`MAX_STEPS`] actions.
fn walk(seed: u64, seats: u8, policy: Policy) -> Walk {
    let mut state = Amori::setup(&Config::default(), seats, Seed::from_u64(seed)).unwrap();
    let mut picker = GameRng::new(Seed::from_u64(seed ^ 0x9e37_79b9_7f4a_7c15));
    for actions in 0..MAX_STEPS {
        let Some(seat) = awaited(&state) else {
            return Walk {
                actions,
                turns: state.view(Viewer::Spectator).turn,
                finished: true,
            };
        };
        let legal = state.legal_actions(seat);
        let pick = match policy {
            Policy::Random => picker.below(legal.len() as u32) as usize,
            Policy::Progress => progress_pick(&state, seat, &legal, &mut picker),
        };
        state
            .apply(seat, &legal[pick])
            .unwrap_or_else(|e| panic!("legal action {:?} refused: {}", legal[pick], e.code()));
    }
    Walk {
        actions: MAX_STEPS,
        turns: state.view(Viewer::Spectator).turn,
        finished: false,
    }
}

/// A policy that prefers progress: location actions over intrigues, a card of a gentleman
/// the daughter already courts, giving up the weakest suit, passing reactions rarely.
fn progress_pick(state: &Amori, seat: Seat, legal: &[Action], picker: &mut GameRng) -> usize {
    if legal.len() == 1 {
        return 0;
    }
    let view = state.view(Viewer::Seat(seat));
    let held: Vec<CardId> = view.players[usize::from(seat)]
        .active
        .as_ref()
        .map(|d| d.suitors.clone())
        .unwrap_or_default();
    let count = |card: &CardId| {
        held.iter()
            .filter(|c| c.gentleman() == card.gentleman())
            .count()
    };
    let score = |action: &Action| -> i32 {
        match action {
            Action::LocationAction { .. } => 3,
            Action::Visit { location } => {
                if view.location_decks[location.index()].size > 0 {
                    2
                } else {
                    1
                }
            }
            Action::Take { card } => 1 + count(card) as i32,
            Action::GiveUp { gentleman } => {
                -(held.iter().filter(|c| c.gentleman() == *gentleman).count() as i32)
            }
            Action::EndTurn => 1,
            Action::PlayEvent { .. } => 2,
            _ => 0,
        }
    };
    let best = legal.iter().map(score).max().unwrap_or(0);
    let top: Vec<usize> = (0..legal.len())
        .filter(|&i| score(&legal[i]) == best)
        .collect();
    top[picker.below(top.len() as u32) as usize]
}

/// Every string in `value` that names an id of some kind, counted.
fn id_counts(value: &Value, counts: &mut HashMap<String, usize>) {
    match value {
        Value::String(s) => *counts.entry(s.clone()).or_default() += 1,
        Value::Array(items) => items.iter().for_each(|v| id_counts(v, counts)),
        Value::Object(map) => map.values().for_each(|v| id_counts(v, counts)),
        _ => {}
    }
}

/// Every gentleman card, event card and daughter board is in exactly one place.
fn check_conservation(state: &Amori) {
    let json = serde_json::to_value(state).unwrap();
    let mut counts = HashMap::new();
    id_counts(&json, &mut counts);
    for card in CardId::all() {
        assert_eq!(
            counts.get(&card.to_string()),
            Some(&1),
            "gentleman card {card}"
        );
    }
    for card in EventCardId::all() {
        assert_eq!(counts.get(&card.to_string()), Some(&1), "event card {card}");
    }
    for daughter in DaughterId::all() {
        assert_eq!(
            counts.get(&daughter.to_string()),
            Some(&1),
            "daughter {daughter}"
        );
    }
}

/// Attributes within range and at most three suitors, for every daughter in play or married.
fn check_boards(state: &Amori) {
    let view = state.view(Viewer::Spectator);
    for p in &view.players {
        let boards = p
            .brides
            .iter()
            .map(|b| b.attributes)
            .chain(p.active.iter().map(|d| d.attributes));
        for a in boards {
            assert!(
                a.reputation <= 5 && a.beauty <= 5 && a.education <= 5,
                "{a:?}"
            );
        }
        if let Some(d) = &p.active {
            let mut gentlemen: Vec<_> = d.suitors.iter().map(|c| c.gentleman()).collect();
            gentlemen.sort();
            gentlemen.dedup();
            assert!(gentlemen.len() <= 3, "{} suitors", gentlemen.len());
        }
    }
}

/// Shuffle the ids found at `slots` (each a JSON array in `state`) among themselves, keeping
/// every array's length.
fn reshuffle(state: &mut Value, slots: &[Vec<&str>], rng: &mut GameRng) {
    let mut pool: Vec<Value> = Vec::new();
    let mut sizes = Vec::new();
    for path in slots {
        let items = at(state, path).as_array().unwrap();
        sizes.push(items.len());
        pool.extend(items.iter().cloned());
    }
    rng.shuffle(&mut pool);
    let mut rest = pool.into_iter();
    for (path, size) in slots.iter().zip(sizes) {
        *at(state, path) = Value::Array(rest.by_ref().take(size).collect());
    }
}

fn at<'a>(value: &'a mut Value, path: &[&str]) -> &'a mut Value {
    path.iter()
        .fold(value, |v, key| match key.parse::<usize>() {
            Ok(i) => &mut v[i],
            Err(_) => &mut v[*key],
        })
}

/// Seat indices as path segments.
const SEAT_KEYS: [&str; 4] = ["0", "1", "2", "3"];
const DECK_KEYS: [&str; 6] = ["0", "1", "2", "3", "4", "5"];

/// A state that differs from `state` only in what `viewer` may not know: other players' event
/// hands and the event deck dealt anew, the gentleman decks' cards dealt anew among the main
/// deck and the location decks (except a deck `viewer` is choosing from), face-down and unused
/// daughters dealt anew.
fn hidden_variant(state: &Amori, viewer: Viewer, rng: &mut GameRng) -> Amori {
    let mut json = serde_json::to_value(state).unwrap();
    let seats = usize::from(state.seats());
    let mut events = vec![vec!["event_deck"]];
    let mut daughters = vec![vec!["unused_daughters"]];
    for key in &SEAT_KEYS[..seats] {
        if Viewer::Seat(key.parse().unwrap()) != viewer {
            events.push(vec!["players", key, "hand"]);
        }
        daughters.push(vec!["players", key, "face_down"]);
    }
    let shown = match state.view(viewer).phase {
        Phase::ChooseGentleman { seat, location } if Viewer::Seat(seat) == viewer => {
            Some(location.index())
        }
        _ => None,
    };
    let mut gentlemen = vec![vec!["main_deck"]];
    for (i, key) in DECK_KEYS.iter().enumerate() {
        if Some(i) != shown {
            gentlemen.push(vec!["location_decks", key]);
        }
    }
    reshuffle(&mut json, &events, rng);
    reshuffle(&mut json, &daughters, rng);
    reshuffle(&mut json, &gentlemen, rng);
    serde_json::from_value(json).unwrap()
}

fn check_actions(state: &Amori) {
    for seat in 0..state.seats() {
        let awaited = state.awaiting().contains(seat);
        let legal = state.legal_actions(seat);
        match state.default_action(seat) {
            Some(action) => assert!(awaited && legal.contains(&action)),
            None => assert!(!awaited && legal.is_empty()),
        }
    }
}

/// Candidate actions of every kind, legal or not, to try against a state.
fn probes(state: &Amori, seat: Seat) -> Vec<Action> {
    let view = state.view(Viewer::Seat(seat));
    let hand = view.players[usize::from(seat)]
        .hand
        .clone()
        .unwrap_or_default();
    let some_card = CardId::all().nth(usize::from(seat) * 7).unwrap();
    let mut out = vec![
        Action::EndTurn,
        Action::Pass,
        Action::Visit {
            location: Location::Theater,
        },
        Action::LocationAction { choice: None },
        Action::Intrigue {
            target: (seat + 1) % state.seats(),
        },
        Action::Take { card: some_card },
        Action::GiveUp {
            gentleman: some_card.gentleman(),
        },
        Action::Discard {
            card: EventCardId::all().next().unwrap(),
        },
    ];
    for card in hand {
        out.push(Action::PlayEvent {
            card,
            target: None,
            location: None,
        });
        out.push(Action::PlayEvent {
            card,
            target: Some(seat),
            location: None,
        });
        out.push(Action::React { card });
    }
    out
}

/// Any action at all, legal or not: half the time one of [`probes`] for an awaited seat,
/// otherwise built from the random stream.
fn arbitrary_action(state: &Amori, rng: &mut GameRng) -> Action {
    if let Some(seat) = awaited(state)
        && rng.below(2) == 0
    {
        let probes = probes(state, seat);
        return probes[rng.below(probes.len() as u32) as usize].clone();
    }
    let location = Location::ALL[rng.below(6) as usize];
    let card = CardId::all().nth(rng.below(84) as usize).unwrap();
    let event = EventCardId::all().nth(rng.below(46) as usize).unwrap();
    let target = [None, Some(rng.below(6) as Seat)][rng.below(2) as usize];
    let place = [None, Some(location)][rng.below(2) as usize];
    let choice =
        [None, Some(Attribute::Reputation), Some(Attribute::Beauty)][rng.below(3) as usize];
    match rng.below(10) {
        0 => Action::Visit { location },
        1 => Action::LocationAction { choice },
        2 => Action::Intrigue {
            target: rng.below(6) as Seat,
        },
        3 => Action::Take { card },
        4 => Action::GiveUp {
            gentleman: card.gentleman(),
        },
        5 => Action::PlayEvent {
            card: event,
            target,
            location: place,
        },
        6 => Action::React { card: event },
        7 => Action::Pass,
        8 => Action::EndTurn,
        _ => Action::Discard { card: event },
    }
}

struct AmoriFixture;

impl Fixture for AmoriFixture {
    type G = Amori;

    fn configs(&self) -> Vec<Config> {
        vec![Config::default()]
    }

    fn arbitrary_action(&self, state: &Amori, rng: &mut GameRng) -> Action {
        arbitrary_action(state, rng)
    }

    /// A quarter of the choices uniformly at random, the rest as [`Policy::Progress`]: every
    /// kind of move still happens, and games stay short enough to play many.
    fn pick(&self, state: &Amori, seat: Seat, legal: &[Action], rng: &mut GameRng) -> usize {
        if rng.below(4) == 0 {
            rng.below(legal.len() as u32) as usize
        } else {
            progress_pick(state, seat, legal, rng)
        }
    }

    /// Only a seat's event cards and a location deck shown to its chooser are private, each
    /// to the one seat that may know it; everything else is public.
    fn heard(&self, event: &Event) -> Heard {
        match event {
            Event::HandDealt { seat, .. } | Event::EventDrawn { seat, .. } => Heard::seat(*seat),
            Event::DeckShown { .. } => Heard::OneSeat,
            _ => Heard::Everyone,
        }
    }

    fn hidden_variant(&self, state: &Amori, viewer: Viewer, rng: &mut GameRng) -> Amori {
        hidden_variant(state, viewer, rng)
    }

    fn check_state(&self, state: &Amori) {
        check_conservation(state);
        check_boards(state);
        check_actions(state);
    }
}

#[test]
fn random_games_keep_every_shared_invariant_at_every_seat_count() {
    let plan = Plan {
        matches: 40,
        max_steps: MAX_STEPS,
        deep_every: 16,
        probes: 6,
    };
    let report = testing::check(&AmoriFixture, &plan);
    eprintln!("{report:?}");
    assert!(report.actions > 10_000, "{report:?}");
}

/// Games end under purely random play as well as under the progress policy; the figures
/// (longest game, mean length) are printed with `--nocapture`.
#[test]
fn random_and_progress_play_both_end() {
    const GAMES: u64 = 150;
    for policy in [Policy::Random, Policy::Progress] {
        let (mut longest, mut stalled, mut turns, mut longest_turns) = (0, 0, 0u64, 0);
        for seed in 0..GAMES {
            let seats = 2 + (seed % 3) as u8;
            let w = walk(seed, seats, policy);
            stalled += usize::from(!w.finished);
            longest = longest.max(w.actions);
            longest_turns = longest_turns.max(w.turns);
            turns += u64::from(w.turns);
        }
        eprintln!(
            "{policy:?}: {GAMES} games, longest {longest} actions / {longest_turns} turns, \
             mean {} turns, stalled {stalled}",
            turns / GAMES
        );
        assert_eq!(stalled, 0, "{policy:?}");
    }
}
