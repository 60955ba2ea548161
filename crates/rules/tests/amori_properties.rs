//! Property tests for Amori e Intrighi over thousands of seeded random games: card and daughter
//! conservation, attribute ranges, the suitor limit, determinism, serde round trips, that no
//! view depends on what its viewer may not know, and that games end.

use std::collections::HashMap;

use missive_rules::amori::Event;
use missive_rules::amori::{
    Action, Amori, Attribute, CardId, Config, DaughterId, EventCardId, Location, Phase,
};
use missive_rules::{Audience, Game, GameError, GameRng, Observation, Seat, Seed, Viewer};
use proptest::prelude::*;
use serde_json::Value;

/// How a walk picks among legal actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Policy {
    /// Uniformly at random.
    Random,
    /// At random, but preferring moves that bring marriages closer (see [`progress_pick`]).
    Progress,
    /// A quarter of the choices uniformly at random, the rest as [`Policy::Progress`]: every
    /// kind of move still happens, and games stay short enough to play thousands.
    Mixed,
}

/// Upper bound on actions in one walk; a walk that reaches it counts as stalled.
const MAX_STEPS: usize = 20_000;

struct Walk {
    state: Amori,
    /// Index into `legal_actions` chosen at each step, so the walk can be replayed.
    choices: Vec<usize>,
    turns: u32,
    finished: bool,
}

fn awaited(state: &Amori) -> Option<Seat> {
    state.awaiting().iter().next()
}

/// Walk one game, calling `check` before every action.
fn walk(seed: u64, seats: u8, policy: Policy, check: impl FnMut(&Amori, usize)) -> Walk {
    walk_for(seed, seats, policy, MAX_STEPS, check)
}

/// Walk one game for at most `limit` actions, calling `check` before every action.
fn walk_for(
    seed: u64,
    seats: u8,
    policy: Policy,
    limit: usize,
    mut check: impl FnMut(&Amori, usize),
) -> Walk {
    let mut state = Amori::setup(&Config::default(), seats, Seed::from_u64(seed)).unwrap();
    let mut picker = GameRng::new(Seed::from_u64(seed ^ 0x9e37_79b9_7f4a_7c15));
    let mut choices = Vec::new();
    for step in 0..limit {
        check(&state, step);
        let Some(seat) = awaited(&state) else {
            return Walk {
                turns: state.view(Viewer::Spectator).turn,
                state,
                choices,
                finished: true,
            };
        };
        let legal = state.legal_actions(seat);
        assert!(
            !legal.is_empty(),
            "seat {seat} is awaited with nothing to do"
        );
        let pick = match policy {
            Policy::Random => picker.below(legal.len() as u32) as usize,
            Policy::Progress => progress_pick(&state, seat, &legal, &mut picker),
            Policy::Mixed => {
                if picker.below(4) == 0 {
                    picker.below(legal.len() as u32) as usize
                } else {
                    progress_pick(&state, seat, &legal, &mut picker)
                }
            }
        };
        choices.push(pick);
        let observations = state
            .apply(seat, &legal[pick])
            .unwrap_or_else(|e| panic!("legal action {:?} refused: {}", legal[pick], e.code()));
        check_audiences(&observations);
    }
    Walk {
        turns: state.view(Viewer::Spectator).turn,
        state,
        choices,
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

/// Only a drawn event card and a shown location deck are private, each to the one seat that
/// may know it; everything else is public.
fn check_audiences(observations: &[Observation<Event>]) {
    for o in observations {
        match &o.event {
            Event::EventDrawn { seat, .. } => assert_eq!(o.audience, Audience::seat(*seat)),
            Event::DeckShown { .. } => {
                assert!(
                    matches!(o.audience, Audience::Seats(s) if s.len() == 1),
                    "{o:?}"
                )
            }
            _ => assert_eq!(o.audience, Audience::Everyone, "{o:?}"),
        }
    }
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

fn check_round_trip(state: &Amori) {
    let json = serde_json::to_string(state).unwrap();
    let back: Amori = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, state);
    for seat in 0..state.seats() {
        serde_json::to_string(&state.view(Viewer::Seat(seat))).unwrap();
    }
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
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

fn check_no_leak(state: &Amori, rng: &mut GameRng) {
    let viewers = (0..state.seats())
        .map(Viewer::Seat)
        .chain([Viewer::Spectator]);
    for viewer in viewers {
        let other = hidden_variant(state, viewer, rng);
        assert_eq!(
            state.view(viewer),
            other.view(viewer),
            "{viewer:?} sees a difference"
        );
        if let Viewer::Seat(seat) = viewer {
            assert_eq!(state.legal_actions(seat), other.legal_actions(seat));
        }
    }
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

/// Every probe outside `legal_actions` is refused with a coded error and changes nothing.
fn check_refusals(state: &Amori) {
    for seat in 0..state.seats() {
        let legal = state.legal_actions(seat);
        for probe in probes(state, seat) {
            if legal.contains(&probe) {
                continue;
            }
            let mut copy = state.clone();
            let err = copy
                .apply(seat, &probe)
                .expect_err("an unlisted action was accepted");
            assert!(!err.code().is_empty() && !err.to_string().is_empty());
            assert_eq!(
                &copy,
                state,
                "refused {probe:?} ({}) changed the state",
                err.code()
            );
        }
    }
}

/// Play one game with `Policy::Mixed` and check every property on it.
fn check_game(seed: u64, seats: u8, cut: usize) -> Result<(), TestCaseError> {
    let mut leak_rng = GameRng::new(Seed::from_u64(seed.rotate_left(17)));
    let mut snapshot = None;
    let first = walk(seed, seats, Policy::Mixed, |state, step| {
        if step % 8 == 0 {
            check_boards(state);
            check_actions(state);
        }
        if step % 64 == 0 {
            check_conservation(state);
        }
        if step % 128 == cut % 128 && state.outcome().is_none() {
            check_no_leak(state, &mut leak_rng);
            check_refusals(state);
        }
        if step == cut {
            snapshot = Some(state.clone());
        }
    });
    prop_assert!(
        first.finished,
        "stalled after {} actions",
        first.choices.len()
    );
    check_conservation(&first.state);
    check_boards(&first.state);
    prop_assert!(first.state.outcome().is_some());
    check_round_trip(&first.state);

    // The same seed and choices give the same match, bit for bit.
    let mut replay = Amori::setup(&Config::default(), seats, Seed::from_u64(seed)).unwrap();
    for &pick in &first.choices {
        let seat = awaited(&replay).unwrap();
        let action = replay.legal_actions(seat).swap_remove(pick);
        replay.apply(seat, &action).unwrap();
    }
    prop_assert_eq!(&replay, &first.state);

    // A state restored from JSON mid-game plays on exactly like the original.
    if let Some(mid) = snapshot {
        check_round_trip(&mid);
        let mut restored: Amori =
            serde_json::from_str(&serde_json::to_string(&mid).unwrap()).unwrap();
        let mut original = mid;
        for &pick in first.choices.iter().skip(cut) {
            let seat = awaited(&original).unwrap();
            let action = original.legal_actions(seat).swap_remove(pick);
            prop_assert_eq!(
                original.apply(seat, &action).unwrap(),
                restored.apply(seat, &action).unwrap()
            );
        }
        prop_assert_eq!(restored, original);
    }
    Ok(())
}

// 5,000 games in all, split in two tests so that they run on two cores.
proptest! {
    #![proptest_config(config(2_500))]

    /// Every gentleman card, event card and daughter in exactly one place; attributes in 0–5;
    /// at most three suitors; the awaited seat always has a legal default; refusals change
    /// nothing; same seed and choices, same match; serde round trips at any point; no view
    /// depends on what its viewer may not know; the game ends.
    #[test]
    fn two_player_games_keep_every_invariant(seed in any::<u64>(), cut in 0usize..300) {
        check_game(seed, 2, cut)?;
    }

    /// The same properties with three and four players.
    #[test]
    fn three_and_four_player_games_keep_every_invariant(
        seed in any::<u64>(),
        seats in 3u8..=4,
        cut in 0usize..300,
    ) {
        check_game(seed, seats, cut)?;
    }
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
            let w = walk(seed, seats, policy, |_, _| {});
            stalled += usize::from(!w.finished);
            longest = longest.max(w.choices.len());
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

/// Any action at all, legal or not, for any seat number, built from one random stream.
fn arbitrary_action(rng: &mut GameRng) -> (Seat, Action) {
    let seat = rng.below(6) as Seat;
    let location = Location::ALL[rng.below(6) as usize];
    let card = CardId::all().nth(rng.below(84) as usize).unwrap();
    let event = EventCardId::all().nth(rng.below(46) as usize).unwrap();
    let target = [None, Some(rng.below(6) as Seat)][rng.below(2) as usize];
    let place = [None, Some(location)][rng.below(2) as usize];
    let choice =
        [None, Some(Attribute::Reputation), Some(Attribute::Beauty)][rng.below(3) as usize];
    let action = match rng.below(10) {
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
    };
    (seat, action)
}

proptest! {
    #![proptest_config(config(300))]

    /// Whatever arrives, `apply` answers without panicking; an action it accepts is one
    /// `legal_actions` listed, and a refusal changes nothing.
    #[test]
    fn arbitrary_actions_never_panic_and_refusals_change_nothing(
        seed in any::<u64>(),
        seats in 2u8..=4,
        cut in 0usize..400,
    ) {
        // Somewhere in a game, or at its end if it ends sooner.
        let mut state = walk_for(seed, seats, Policy::Mixed, cut, |_, _| {}).state;
        let mut rng = GameRng::new(Seed::from_u64(seed ^ 0x5555));
        for _ in 0..200 {
            let (seat, action) = arbitrary_action(&mut rng);
            let legal = state.legal_actions(seat);
            let before = state.clone();
            match state.apply(seat, &action) {
                Ok(_) => prop_assert!(legal.contains(&action), "accepted unlisted {:?}", action),
                Err(e) => {
                    prop_assert!(!legal.contains(&action), "refused listed {:?}: {}", action, e.code());
                    prop_assert_eq!(&state, &before);
                }
            }
        }
    }
}
