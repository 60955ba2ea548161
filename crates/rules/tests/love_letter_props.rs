//! Love Letter invariants over many random legal games of both editions and every player
//! count: legal actions are exactly what `apply` accepts, refusals leave the state untouched,
//! every card is in exactly one place, matches end, replays are bit-identical, states survive
//! serde, and no view or observation shows a seat what it may not know.
//!
//! The games are driven by `GameRng` from fixed seeds, so a failure names a seed that
//! reproduces it.

use missive_rules::love_letter::{Action, CardId, Config, Edition, Event, LoveLetter, Role};
use missive_rules::{Audience, Game, GameRng, Observation, Seat, SeatSet, Seed, Viewer};
use serde_json::Value;

const GAMES_PER_EDITION: u64 = 10_000;

fn pick<T: Clone>(rng: &mut GameRng, items: &[T]) -> T {
    items[rng.below(items.len() as u32) as usize].clone()
}

/// An action drawn from a space much wider than the legal one: any card, any seat number
/// (some beyond the table), any role or none, malformed Chancellor choices.
fn arbitrary_action(rng: &mut GameRng, hand: &[CardId]) -> Action {
    let any_card = |rng: &mut GameRng| {
        if !hand.is_empty() && rng.below(2) == 0 {
            pick(rng, hand)
        } else {
            pick(rng, &CardId::ALL)
        }
    };
    let target = match rng.below(4) {
        0 => None,
        _ => Some(rng.below(9) as Seat),
    };
    let guess = match rng.below(3) {
        0 => None,
        _ => Some(pick(rng, &Role::ALL)),
    };
    if rng.below(4) == 0 {
        let keep = any_card(rng);
        let n = rng.below(4) as usize;
        let bottom = (0..n).map(|_| any_card(rng)).collect();
        Action::ChancellorKeep { keep, bottom }
    } else {
        Action::Play {
            card: any_card(rng),
            target,
            guess,
        }
    }
}

/// Who must be the audience of an event, from what the spec lets each player know.
fn expected_audience(event: &Event) -> Audience {
    let pair = |a: Seat, b: Seat| Audience::Seats([a, b].into_iter().collect::<SeatSet>());
    match event {
        Event::Dealt { seat, .. }
        | Event::Drew { seat, .. }
        | Event::PriestSaw { seat, .. }
        | Event::ChancellorDrew { seat, .. }
        | Event::ChancellorKept { seat, .. } => Audience::seat(*seat),
        Event::PrinceDrew { target, .. } => Audience::seat(*target),
        Event::BaronCompared { seat, target, .. } | Event::KingTraded { seat, target, .. } => {
            pair(*seat, *target)
        }
        Event::RoundStarted { .. }
        | Event::TurnStarted { .. }
        | Event::Played { .. }
        | Event::NoEffect { .. }
        | Event::GuardGuess { .. }
        | Event::ChancellorReturned { .. }
        | Event::PrinceDiscarded { .. }
        | Event::PlayerOut { .. }
        | Event::RoundEnded(_)
        | Event::TokenGained { .. }
        | Event::MatchEnded { .. } => Audience::Everyone,
    }
}

fn check_audiences(obs: &[Observation<Event>], ctx: &str) {
    for o in obs {
        assert_eq!(
            o.audience,
            expected_audience(&o.event),
            "{ctx}: {:?}",
            o.event
        );
    }
}

/// Every card of the edition appears exactly once among the hands, played piles, deck,
/// set-aside card and face-up cards of the serialised state.
fn check_cards_in_one_place(state: &Value, edition: Edition, ctx: &str) {
    let mut count = [0u8; 21];
    let mut tally = |v: &Value| {
        let card: CardId = v.as_str().and_then(|s| s.parse().ok()).expect("a card id");
        count[card.index()] += 1;
    };
    for p in state["players"].as_array().unwrap() {
        p["hand"].as_array().unwrap().iter().for_each(&mut tally);
        p["played"].as_array().unwrap().iter().for_each(&mut tally);
    }
    state["deck"]
        .as_array()
        .unwrap()
        .iter()
        .for_each(&mut tally);
    state["face_up"]
        .as_array()
        .unwrap()
        .iter()
        .for_each(&mut tally);
    if !state["set_aside"].is_null() {
        tally(&state["set_aside"]);
    }
    for card in CardId::ALL {
        let expected = u8::from(edition.cards().contains(&card));
        assert_eq!(
            count[card.index()],
            expected,
            "{ctx}: {card} is in {} places",
            count[card.index()]
        );
    }
}

/// Shuffles every card `viewer` may not see (other players' hands, the deck, the set-aside
/// card) among the places they occupy; the viewer's view must not change.
fn check_view_hides_what_it_must(
    g: &LoveLetter,
    state: &Value,
    viewer: Viewer,
    rng: &mut GameRng,
    ctx: &str,
) {
    let mut hidden: Vec<(Vec<Value>, Value)> = Vec::new();
    let mut paths: Vec<Vec<Value>> = Vec::new();
    for (seat, p) in state["players"].as_array().unwrap().iter().enumerate() {
        if viewer == Viewer::Seat(seat as Seat) {
            continue;
        }
        for i in 0..p["hand"].as_array().unwrap().len() {
            paths.push(vec!["players".into(), seat.into(), "hand".into(), i.into()]);
        }
    }
    for i in 0..state["deck"].as_array().unwrap().len() {
        paths.push(vec!["deck".into(), i.into()]);
    }
    if !state["set_aside"].is_null() {
        paths.push(vec!["set_aside".into()]);
    }
    let at = |v: &Value, path: &[Value]| -> Value {
        path.iter()
            .fold(v, |v, k| match k {
                Value::String(s) => &v[s.as_str()],
                k => &v[k.as_u64().unwrap() as usize],
            })
            .clone()
    };
    for p in &paths {
        hidden.push((p.clone(), at(state, p)));
    }
    let mut values: Vec<Value> = hidden.iter().map(|(_, v)| v.clone()).collect();
    rng.shuffle(&mut values);
    let mut swapped = state.clone();
    for ((path, _), value) in hidden.iter().zip(values) {
        let slot = path.iter().fold(&mut swapped, |v, k| match k {
            Value::String(s) => &mut v[s.as_str()],
            k => &mut v[k.as_u64().unwrap() as usize],
        });
        *slot = value;
    }
    let other: LoveLetter = serde_json::from_value(swapped).expect("a swapped state reads");
    assert_eq!(
        g.view(viewer),
        other.view(viewer),
        "{ctx}: {viewer:?}'s view depends on hidden cards"
    );
}

struct Checks {
    /// Apply every listed legal action to a copy, at this fraction (1 in n) of the steps.
    all_legal_every: u32,
    /// Serialise and run the serde, card-place and leak checks at 1 in n of the steps.
    deep_every: u32,
}

fn play_one_match(edition: Edition, seats: u8, seed: u64, checks: &Checks) {
    let ctx = format!("{edition:?}, {seats} seats, seed {seed}");
    let config = Config {
        edition,
        ..Config::default()
    };
    let mut g = LoveLetter::setup(&config, seats, Seed::from_u64(seed)).expect("setup");
    let start = g.clone();
    let mut rng = GameRng::new(Seed::from_u64(seed ^ 0x5eed));
    let mut log: Vec<(Seat, Action)> = Vec::new();
    for _step in 0..5_000 {
        if g.outcome().is_some() {
            break;
        }
        let awaiting = g.awaiting();
        assert_eq!(awaiting.len(), 1, "{ctx}");
        let seat = awaiting.iter().next().unwrap();
        let legal = g.legal_actions(seat);
        assert!(
            !legal.is_empty(),
            "{ctx}: the awaited seat has no legal action"
        );
        assert_eq!(g.default_action(seat).as_ref(), legal.first(), "{ctx}");
        for other in 0..seats {
            if other != seat {
                assert!(g.legal_actions(other).is_empty(), "{ctx}");
                assert_eq!(g.default_action(other), None, "{ctx}");
            }
        }

        if rng.below(checks.all_legal_every) == 0 {
            for action in &legal {
                let mut copy = g.clone();
                let obs = copy
                    .apply(seat, action)
                    .unwrap_or_else(|e| panic!("{ctx}: listed {action:?} refused: {e}"));
                check_audiences(&obs, &ctx);
            }
        }

        // Arbitrary actions from the awaited seat and from others: accepted exactly when listed.
        // Cards the seat can name (those of its listed actions), to aim near the legal ones.
        let mut hand: Vec<CardId> = legal
            .iter()
            .map(|a| match a {
                Action::Play { card, .. } => *card,
                Action::ChancellorKeep { keep, .. } => *keep,
            })
            .collect();
        hand.dedup();
        let deep = rng.below(checks.deep_every) == 0;
        let before = deep.then(|| serde_json::to_vec(&g).unwrap());
        let snapshot = g.clone();
        for _ in 0..3 {
            let actor = if rng.below(4) == 0 {
                rng.below(9) as Seat
            } else {
                seat
            };
            let action = arbitrary_action(&mut rng, &hand);
            let listed = actor == seat && legal.contains(&action);
            if listed {
                continue;
            }
            assert!(
                g.apply(actor, &action).is_err(),
                "{ctx}: unlisted {action:?} by {actor} accepted"
            );
        }
        assert_eq!(g, snapshot, "{ctx}: a refusal changed the state");
        if let Some(before) = &before {
            assert_eq!(
                &serde_json::to_vec(&g).unwrap(),
                before,
                "{ctx}: a refusal changed the bytes"
            );
        }

        let action = pick(&mut rng, &legal);
        let obs = g.apply(seat, &action).expect("a listed action");
        check_audiences(&obs, &ctx);
        log.push((seat, action));

        if deep {
            let text = serde_json::to_string(&g).unwrap();
            let back: LoveLetter = serde_json::from_str(&text).unwrap();
            assert_eq!(back, g, "{ctx}: serde changed the state");
            assert_eq!(
                serde_json::to_string(&back).unwrap(),
                text,
                "{ctx}: serde changed the bytes"
            );
            let value: Value = serde_json::from_str(&text).unwrap();
            check_cards_in_one_place(&value, edition, &ctx);
            let viewer = match rng.below(u32::from(seats) + 1) as Seat {
                s if s == seats => Viewer::Spectator,
                s => Viewer::Seat(s),
            };
            check_view_hides_what_it_must(&g, &value, viewer, &mut rng, &ctx);
        }
    }
    let outcome = g
        .outcome()
        .unwrap_or_else(|| panic!("{ctx}: the match did not end"));
    assert!(!outcome.winners.is_empty(), "{ctx}");

    // The same seed and actions give the same state, byte for byte.
    let mut replay = start;
    for (seat, action) in &log {
        replay.apply(*seat, action).expect("a replayed action");
    }
    assert_eq!(
        serde_json::to_vec(&replay).unwrap(),
        serde_json::to_vec(&g).unwrap(),
        "{ctx}"
    );
}

fn run(edition: Edition) {
    let counts: Vec<u8> = (2..=edition.max_players()).collect();
    let checks = Checks {
        all_legal_every: 12,
        deep_every: 16,
    };
    for i in 0..GAMES_PER_EDITION {
        let seats = counts[(i % counts.len() as u64) as usize];
        play_one_match(edition, seats, i, &checks);
    }
}

#[test]
fn random_2019_games_keep_every_invariant() {
    run(Edition::V2019);
}

#[test]
fn random_classic_games_keep_every_invariant() {
    run(Edition::Classic);
}

#[test]
fn every_step_of_some_games_passes_every_deep_check() {
    let checks = Checks {
        all_legal_every: 1,
        deep_every: 1,
    };
    for seed in 0..60 {
        let edition = if seed % 2 == 0 {
            Edition::V2019
        } else {
            Edition::Classic
        };
        let seats = 2 + (seed % u64::from(edition.max_players() - 1)) as u8;
        play_one_match(edition, seats, 1_000_000 + seed, &checks);
    }
}
