//! Love Letter under the shared invariant harness ([`missive_rules::testing`]), in both
//! editions at every player count, with what is Love Letter's own: who may hear each event,
//! which cards each viewer may not know, that every card is in exactly one place, and that one
//! seat is awaited at a time, its default being its first legal action.

use missive_rules::love_letter::{Action, CardId, Config, Edition, Event, LoveLetter, Role};
use missive_rules::testing::{self, Fixture, Heard, Plan};
use missive_rules::{Game, GameRng, Seat, SeatSet, Viewer};
use serde_json::Value;

fn pick<T: Clone>(rng: &mut GameRng, items: &[T]) -> T {
    items[rng.below(items.len() as u32) as usize].clone()
}

struct LoveLetterFixture;

impl Fixture for LoveLetterFixture {
    type G = LoveLetter;

    fn configs(&self) -> Vec<Config> {
        [Edition::V2019, Edition::Classic]
            .into_iter()
            .map(|edition| Config {
                edition,
                ..Config::default()
            })
            .collect()
    }

    /// Any card (often one the awaited seat may name), any seat number (some beyond the
    /// table), any role or none, malformed Chancellor choices.
    fn arbitrary_action(&self, state: &LoveLetter, rng: &mut GameRng) -> Action {
        let mut hand: Vec<CardId> = state
            .awaiting()
            .iter()
            .flat_map(|seat| state.legal_actions(seat))
            .map(|a| match a {
                Action::Play { card, .. } => card,
                Action::ChancellorKeep { keep, .. } => keep,
            })
            .collect();
        hand.dedup();
        let any_card = |rng: &mut GameRng| {
            if !hand.is_empty() && rng.below(2) == 0 {
                pick(rng, &hand)
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

    /// From what the spec lets each player know.
    fn heard(&self, event: &Event) -> Heard {
        let pair = |a: Seat, b: Seat| Heard::Only([a, b].into_iter().collect::<SeatSet>());
        match event {
            Event::Dealt { seat, .. }
            | Event::Drew { seat, .. }
            | Event::PriestSaw { seat, .. }
            | Event::ChancellorDrew { seat, .. }
            | Event::ChancellorKept { seat, .. } => Heard::seat(*seat),
            Event::PrinceDrew { target, .. } => Heard::seat(*target),
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
            | Event::MatchEnded { .. } => Heard::Everyone,
        }
    }

    /// Every card `viewer` may not see (other players' hands, the deck, the set-aside card)
    /// shuffled among the places they occupy.
    fn hidden_variant(&self, g: &LoveLetter, viewer: Viewer, rng: &mut GameRng) -> LoveLetter {
        let mut state = serde_json::to_value(g).unwrap();
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
        fn slot<'a>(v: &'a mut Value, path: &[Value]) -> &'a mut Value {
            path.iter().fold(v, |v, k| match k {
                Value::String(s) => &mut v[s.as_str()],
                k => &mut v[k.as_u64().unwrap() as usize],
            })
        }
        let mut values: Vec<Value> = paths.iter().map(|p| slot(&mut state, p).clone()).collect();
        rng.shuffle(&mut values);
        for (path, value) in paths.iter().zip(values) {
            *slot(&mut state, path) = value;
        }
        serde_json::from_value(state).expect("a shuffled state reads")
    }

    fn check_state(&self, g: &LoveLetter) {
        check_cards_in_one_place(g);
        if g.outcome().is_some() {
            return;
        }
        let awaiting = g.awaiting();
        assert_eq!(awaiting.len(), 1, "one seat is awaited at a time");
        let seat = awaiting.iter().next().unwrap();
        assert_eq!(
            g.default_action(seat).as_ref(),
            g.legal_actions(seat).first(),
            "the default is the first legal action"
        );
        for other in (0..g.seats()).filter(|s| *s != seat) {
            assert!(g.legal_actions(other).is_empty(), "seat {other} may act");
        }
    }
}

/// Every card of the edition appears exactly once among the hands, played piles, deck,
/// set-aside card and face-up cards of the serialised state.
fn check_cards_in_one_place(g: &LoveLetter) {
    let state = serde_json::to_value(g).unwrap();
    let edition: Edition = serde_json::from_value(state["edition"].clone()).unwrap();
    let mut count = [0u8; 21];
    let mut tally = |v: &Value| {
        let card: CardId = v.as_str().and_then(|s| s.parse().ok()).expect("a card id");
        count[card.index()] += 1;
    };
    for p in state["players"].as_array().unwrap() {
        p["hand"].as_array().unwrap().iter().for_each(&mut tally);
        p["played"].as_array().unwrap().iter().for_each(&mut tally);
    }
    for key in ["deck", "face_up"] {
        state[key].as_array().unwrap().iter().for_each(&mut tally);
    }
    if !state["set_aside"].is_null() {
        tally(&state["set_aside"]);
    }
    for card in CardId::ALL {
        let expected = u8::from(edition.cards().contains(&card));
        assert_eq!(
            count[card.index()],
            expected,
            "{card} is in {} places",
            count[card.index()]
        );
    }
}

#[test]
fn random_matches_keep_every_shared_invariant_in_both_editions_at_every_seat_count() {
    let plan = Plan {
        matches: 60,
        max_steps: 5_000,
        deep_every: 6,
        probes: 4,
    };
    let report = testing::check(&LoveLetterFixture, &plan);
    eprintln!("{report:?}");
    assert!(report.actions > 10_000, "{report:?}");
}

#[test]
fn every_step_of_some_matches_passes_every_deep_check() {
    let plan = Plan {
        matches: 3,
        max_steps: 5_000,
        deep_every: 1,
        probes: 8,
    };
    testing::check(&LoveLetterFixture, &plan);
}
