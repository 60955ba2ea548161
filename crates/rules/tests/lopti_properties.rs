//! Invariants of Lopti over thousands of random sessions: every card in exactly one place,
//! every hand ends, determinism, serde round-trips, legal and default actions accepted, and no
//! leaks (a seat's view is the same whatever it may not know).
//!
//! Random play can pick up the pile forever, so the walks use a policy that prefers progress:
//! in play, a random play with probability 9/10 and a pickup otherwise (a pickup is forced when
//! no play is valid). Other phases choose uniformly, except that proposals are rare (1 in 6),
//! so most hands reach the cards. A walk that exceeds `STEP_LIMIT` fails the test.

use std::collections::BTreeSet;
use std::time::Instant;

use missive_rules::lopti::catalogue::catalogue;
use missive_rules::lopti::{
    Action, Ballot, Card, Change, Config, Lopti, Rank, RuleBody, Special, Throw, Timing,
};
use missive_rules::{Game, GameRng, Seat, Seed, Viewer};
use proptest::prelude::*;
use serde_json::Value;

const SESSIONS: u32 = 5_000;
const STEP_LIMIT: usize = 60_000;
/// One step in this many (at random) gets the costly checks: cards, serde, leaks, refusals.
const CHECK_EVERY: u32 = 40;

struct Walk {
    game: Lopti,
    log: Vec<(Seat, Action)>,
}

fn choose<T: Clone>(rng: &mut GameRng, items: &[T]) -> T {
    items[rng.below(items.len() as u32) as usize].clone()
}

fn pick_action(rng: &mut GameRng, legal: &[Action]) -> Action {
    let plays: Vec<Action> = legal
        .iter()
        .filter(|a| matches!(a, Action::Play { .. } | Action::PlayFaceDown { .. }))
        .cloned()
        .collect();
    if !plays.is_empty() || legal.contains(&Action::PickUp) {
        if plays.is_empty() || (legal.contains(&Action::PickUp) && rng.below(10) == 0) {
            return Action::PickUp;
        }
        return choose(rng, &plays);
    }
    if legal.contains(&Action::DeclineProposal) && rng.below(6) != 0 {
        return Action::DeclineProposal;
    }
    let phase_actions: Vec<Action> = legal
        .iter()
        .filter(|a| !matches!(a, Action::CancelRule { .. }))
        .cloned()
        .collect();
    choose(rng, &phase_actions)
}

/// Every card id in the serialised state, by place.
fn card_places(state: &Value) -> Vec<String> {
    let mut places = Vec::new();
    let mut take = |v: &Value| {
        for c in v.as_array().expect("a card list") {
            places.push(c.as_str().expect("a card id").to_owned());
        }
    };
    for p in state["players"].as_array().unwrap() {
        take(&p["hand"]);
        take(&p["face_up"]);
        take(&p["face_down"]);
    }
    for key in ["draw", "pile", "pass_chain", "gone", "unused"] {
        take(&state[key]);
    }
    places
}

fn assert_cards_conserved(game: &Lopti) {
    let state = serde_json::to_value(game).unwrap();
    let places = card_places(&state);
    let distinct: BTreeSet<&String> = places.iter().collect();
    assert_eq!(places.len(), 52, "52 cards, each in one place");
    assert_eq!(distinct.len(), 52, "no card in two places");
}

/// A copy of `game` where everything `viewer` may not know is reshuffled: face-down cards,
/// other seats' hands, the draw pile, and other seats' hidden ballots and throws.
fn scramble_hidden(game: &Lopti, viewer: Viewer, rng: &mut GameRng) -> Lopti {
    let mut state = serde_json::to_value(game).unwrap();
    let mut slots: Vec<(usize, &'static str, usize)> = Vec::new();
    let mut pool: Vec<Value> = Vec::new();
    let players = state["players"].as_array().unwrap().len();
    for seat in 0..players {
        let mut keys = vec!["face_down"];
        if viewer != Viewer::Seat(seat as Seat) {
            keys.push("hand");
        }
        for key in keys {
            let cards = state["players"][seat][key].as_array().unwrap().clone();
            slots.push((seat, key, cards.len()));
            pool.extend(cards);
        }
    }
    let draw = state["draw"].as_array().unwrap().clone();
    pool.extend(draw.iter().cloned());
    rng.shuffle(&mut pool);
    let mut cards = pool.into_iter();
    for (seat, key, len) in slots {
        state["players"][seat][key] = Value::Array(cards.by_ref().take(len).collect());
    }
    state["draw"] = Value::Array(cards.collect());
    let phase = &mut state["phase"];
    if let Some(ballots) = phase.get_mut("ballots").and_then(Value::as_array_mut) {
        for (seat, ballot) in ballots.iter_mut().enumerate() {
            if !ballot.is_null() && viewer != Viewer::Seat(seat as Seat) {
                *ballot = Value::from(choose(rng, &["yes", "no", "abstain"]));
            }
        }
    }
    if let Some(sides) = phase.get("sides").cloned() {
        for i in 0..2 {
            let seat = sides[i].as_u64().unwrap() as Seat;
            let throw = &mut phase["throws"][i];
            if !throw.is_null() && viewer != Viewer::Seat(seat) {
                *throw = Value::from(choose(rng, &["rock", "paper", "scissors"]));
            }
        }
    }
    serde_json::from_value(state).unwrap()
}

/// Any action at all, most of them nonsense for the state they meet.
fn junk_action(rng: &mut GameRng) -> Action {
    let deck = Card::deck();
    let card = |rng: &mut GameRng| deck[rng.below(52) as usize];
    let rank = |rng: &mut GameRng| Rank::ALL[rng.below(13) as usize];
    let spec = |rng: &mut GameRng| catalogue()[rng.below(catalogue().len() as u32) as usize];
    let n = rng.below(6) as u8;
    match rng.below(14) {
        0 => Action::Swap {
            hand: card(rng),
            face_up: card(rng),
        },
        1 => Action::KeepCards,
        2 => Action::CreateRule {
            rule: matches!(n, 0 | 2 | 4).then(|| spec(rng)),
            table_rule: (n > 2).then(|| "x".repeat(usize::from(n) * 70)),
        },
        3 => Action::SkipRule,
        4 => Action::Propose {
            change: match n {
                0 => Change::RemoveRule {
                    rule: rng.below(4) as u16,
                },
                1 => Change::RestoreRule {
                    rule: rng.below(4) as u16,
                },
                2 => Change::ModifyRule {
                    rule: rng.below(4) as u16,
                    to: RuleBody::Enforced { spec: spec(rng) },
                },
                3 => Change::SetHandSize {
                    size: rng.below(256) as u8,
                },
                _ => Change::SetSpecial {
                    special: Special::ALL[rng.below(4) as usize],
                    rank: (n == 4).then(|| rank(rng)),
                },
            },
            timing: if matches!(n, 0 | 2 | 4) {
                Timing::Now
            } else {
                Timing::NextHand
            },
        },
        5 => Action::DeclineProposal,
        6 => Action::Vote {
            ballot: [Ballot::Yes, Ballot::No, Ballot::Abstain][usize::from(n % 3)],
        },
        7 => Action::Throw {
            throw: Throw::ALL[usize::from(n % 3)],
        },
        8 | 9 => Action::Play {
            cards: (0..n).map(|_| card(rng)).collect(),
        },
        10 => Action::PlayFaceDown {
            index: rng.below(256) as u8,
        },
        11 => Action::PickUp,
        _ => Action::CancelRule {
            rule: rng.below(5) as u16,
        },
    }
}

/// Plays one random session to its end, checking invariants along the way when `check`.
fn walk(seats: u8, hands: u8, seed: u64, policy: u64, check: bool) -> Walk {
    let config = Config {
        hands,
        ..Config::default()
    };
    let mut game = Lopti::setup(&config, seats, Seed::from_u64(seed)).unwrap();
    let mut rng = GameRng::new(Seed::from_u64(policy ^ 0x9e37_79b9));
    let mut log = Vec::new();
    while game.outcome().is_none() {
        assert!(
            log.len() < STEP_LIMIT,
            "a session of {seats} seats ran past {STEP_LIMIT} steps"
        );
        let awaiting: Vec<Seat> = game.awaiting().iter().collect();
        assert!(
            !awaiting.is_empty(),
            "an unfinished match waits for someone"
        );
        let seat = choose(&mut rng, &awaiting);
        let legal = game.legal_actions(seat);
        assert!(
            legal
                .iter()
                .any(|a| !matches!(a, Action::CancelRule { .. })),
            "seat {seat} is awaited but has no action: {}",
            serde_json::to_string(&game).unwrap()
        );
        let default = game
            .default_action(seat)
            .expect("an awaited seat has a default");
        if check {
            assert!(legal.contains(&default), "default {default:?} is not legal");
        }
        // Now and then a creator cancels a rule, out of turn.
        if rng.below(200) == 0 {
            let other = rng.below(u32::from(seats)) as Seat;
            if let Some(cancel) = game
                .legal_actions(other)
                .into_iter()
                .find(|a| matches!(a, Action::CancelRule { .. }))
            {
                game.apply(other, &cancel)
                    .expect("a listed cancel is accepted");
                log.push((other, cancel));
                continue;
            }
        }
        let action = if rng.below(50) == 0 {
            default
        } else {
            pick_action(&mut rng, &legal)
        };
        if check && rng.below(CHECK_EVERY) == 0 {
            assert_cards_conserved(&game);
            let round: Lopti =
                serde_json::from_str(&serde_json::to_string(&game).unwrap()).unwrap();
            assert_eq!(round, game, "serde round-trip");
            let viewer = match rng.below(u32::from(seats) + 1) as u8 {
                s if s == seats => Viewer::Spectator,
                s => Viewer::Seat(s),
            };
            let scrambled = scramble_hidden(&game, viewer, &mut rng);
            assert_eq!(
                scrambled.view(viewer),
                game.view(viewer),
                "the view leaks hidden cards"
            );
            for _ in 0..4 {
                let junk_seat = rng.below(8) as Seat;
                let junk = junk_action(&mut rng);
                let mut copy = game.clone();
                // Any input at all: never a panic, and a refusal changes nothing.
                if copy.apply(junk_seat, &junk).is_err() {
                    assert_eq!(copy, game, "refused {junk:?} changed the state");
                }
            }
        }
        if let Err(e) = game.apply(seat, &action) {
            panic!("listed action {action:?} by seat {seat} refused: {e}");
        }
        log.push((seat, action));
    }
    if check {
        assert_cards_conserved(&game);
        let outcome = game.outcome().unwrap();
        let won: i32 = outcome.scores.iter().sum();
        assert_eq!(won, i32::from(hands), "every hand has exactly one winner");
        assert!(game.awaiting().is_empty());
    }
    Walk { game, log }
}

fn replay(seats: u8, hands: u8, seed: u64, log: &[(Seat, Action)]) -> Lopti {
    let config = Config {
        hands,
        ..Config::default()
    };
    let mut game = Lopti::setup(&config, seats, Seed::from_u64(seed)).unwrap();
    for (seat, action) in log {
        game.apply(*seat, action)
            .expect("a replayed action is accepted");
    }
    game
}

proptest! {
    #![proptest_config(ProptestConfig { cases: SESSIONS, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_sessions_keep_every_invariant(
        seats in 2u8..=5,
        hands in 1u8..=3,
        seed in any::<u64>(),
        policy in any::<u64>(),
    ) {
        let walk = walk(seats, hands, seed, policy, true);
        let again = replay(seats, hands, seed, &walk.log);
        prop_assert_eq!(&again, &walk.game, "the same seed and actions give the same state");
        prop_assert_eq!(
            serde_json::to_string(&again).unwrap(),
            serde_json::to_string(&walk.game).unwrap()
        );
    }
}

#[test]
fn random_session_lengths_are_reported() {
    // Figures for the report: how long policy-driven sessions run.
    let start = Instant::now();
    let mut steps = Vec::new();
    for i in 0..200u64 {
        let seats = 2 + (i % 4) as u8;
        steps.push(walk(seats, 3, i, i, false).log.len());
    }
    steps.sort();
    let mean = steps.iter().sum::<usize>() / steps.len();
    eprintln!(
        "200 three-hand sessions: mean {mean} steps, median {}, max {}, {:?}",
        steps[steps.len() / 2],
        steps[steps.len() - 1],
        start.elapsed()
    );
    assert!(steps[steps.len() - 1] < STEP_LIMIT);
}

#[test]
fn sessions_where_every_seat_times_out_still_end() {
    // Default actions alone must finish a session, or a table that stopped playing would run
    // on for ever on its turn timer.
    let mut longest = 0;
    for i in 0..2_000u64 {
        let seats = 2 + (i % 4) as u8;
        let mut game = Lopti::setup(&Config::default(), seats, Seed::from_u64(i)).unwrap();
        let mut steps = 0;
        while game.outcome().is_none() {
            assert!(
                steps < 5_000,
                "session {i} of {seats} seats does not end under timeouts"
            );
            let seat = game.awaiting().iter().next().expect("someone is awaited");
            let action = game
                .default_action(seat)
                .expect("an awaited seat has a default");
            game.apply(seat, &action).expect("the default is legal");
            steps += 1;
        }
        longest = longest.max(steps);
    }
    eprintln!("2,000 three-hand sessions on defaults alone: longest {longest} steps");
}
