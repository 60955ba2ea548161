//! Lopti under the shared invariant harness ([`missive_rules::testing`]) at every seat count,
//! with what is Lopti's own: who may hear each event, what each viewer may not know (face-down
//! cards, other hands, the draw pile, hidden ballots and throws), that every card is in exactly
//! one place and every hand has one winner, and that sessions end, even on timeouts alone.
//!
//! Random play can pick up the pile forever, so the walks use a policy that prefers progress:
//! in play, a random play with probability 9/10 and a pickup otherwise (a pickup is forced when
//! no play is valid). Other phases choose uniformly, except that proposals are rare (1 in 6),
//! so most hands reach the cards. A walk that exceeds `STEP_LIMIT` fails the test.

use std::collections::BTreeSet;
use std::time::Instant;

use missive_rules::lopti::catalogue::catalogue;
use missive_rules::lopti::{
    Action, Ballot, Card, Change, Config, Event, Lopti, Rank, RuleBody, Special, Throw, Timing,
};
use missive_rules::testing::{self, Fixture, Heard, Plan};
use missive_rules::{Game, GameRng, Seat, Seed, Viewer};
use serde_json::Value;

const STEP_LIMIT: usize = 60_000;

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
            table_rule: (n > 2).then(|| "x".repeat(usize::from(n) * 70).into()),
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

struct LoptiFixture;

impl Fixture for LoptiFixture {
    type G = Lopti;

    fn configs(&self) -> Vec<Config> {
        vec![
            Config {
                hands: 1,
                ..Config::default()
            },
            Config::default(),
        ]
    }

    fn arbitrary_action(&self, _state: &Lopti, rng: &mut GameRng) -> Action {
        junk_action(rng)
    }

    /// A play lists the lowest suits of each rank and count, and free-text table rules are not
    /// listed at all: other suits, and table rules, may be equally legal.
    fn may_accept_unlisted(&self, action: &Action) -> bool {
        matches!(
            action,
            Action::Play { .. } | Action::CreateRule { .. } | Action::Propose { .. }
        )
    }

    fn pick(&self, _state: &Lopti, _seat: Seat, legal: &[Action], rng: &mut GameRng) -> usize {
        let action = pick_action(rng, legal);
        legal.iter().position(|a| *a == action).unwrap()
    }

    /// Only a seat's own new cards are private, to that seat.
    fn heard(&self, event: &Event) -> Heard {
        match event {
            Event::YourHand { .. } | Event::YouDrew { .. } => Heard::OneSeat,
            _ => Heard::Everyone,
        }
    }

    fn hidden_variant(&self, state: &Lopti, viewer: Viewer, rng: &mut GameRng) -> Lopti {
        scramble_hidden(state, viewer, rng)
    }

    fn check_state(&self, game: &Lopti) {
        assert_cards_conserved(game);
        if let Some(outcome) = game.outcome() {
            let hands = serde_json::to_value(game).unwrap()["config"]["hands"]
                .as_i64()
                .unwrap();
            let won: i32 = outcome.scores.iter().sum();
            assert_eq!(i64::from(won), hands, "every hand has exactly one winner");
        }
    }
}

#[test]
fn random_sessions_keep_every_shared_invariant_at_every_seat_count() {
    let plan = Plan {
        matches: 12,
        max_steps: STEP_LIMIT,
        deep_every: 40,
        probes: 4,
    };
    let report = testing::check(&LoptiFixture, &plan);
    eprintln!("{report:?}");
    assert!(report.actions > 10_000, "{report:?}");
}

/// Plays one session to its end with the harness's policy, for the figures below.
fn walk(seats: u8, hands: u8, seed: u64) -> usize {
    let config = Config {
        hands,
        ..Config::default()
    };
    let mut game = Lopti::setup(&config, seats, Seed::from_u64(seed)).unwrap();
    let mut rng = GameRng::new(Seed::from_u64(seed ^ 0x9e37_79b9));
    let mut steps = 0;
    while game.outcome().is_none() {
        assert!(
            steps < STEP_LIMIT,
            "a session of {seats} seats ran past {STEP_LIMIT} steps"
        );
        let awaiting: Vec<Seat> = game.awaiting().iter().collect();
        let seat = choose(&mut rng, &awaiting);
        let action = pick_action(&mut rng, &game.legal_actions(seat));
        game.apply(seat, &action).expect("a listed action");
        steps += 1;
    }
    steps
}

#[test]
fn random_session_lengths_are_reported() {
    // Figures for the report: how long policy-driven sessions run.
    let start = Instant::now();
    let mut steps = Vec::new();
    for i in 0..200u64 {
        let seats = 2 + (i % 4) as u8;
        steps.push(walk(seats, 3, i));
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
