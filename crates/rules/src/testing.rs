//! The invariants every game keeps, checked the same way for each (cargo feature `testing`,
//! for the games' own tests; nothing else builds it).
//!
//! [`check`] plays seeded random matches of a game, at every seat count of every config a
//! [`Fixture`] names, and along the way checks that:
//!
//! - setup refuses every seat count outside [`Game::seat_range`] with
//!   [`SetupError::SeatCount`], and accepts every one inside it;
//! - an unfinished match awaits someone; each awaited seat has a default action, and it is
//!   legal; a seat that is not awaited has none;
//! - every legal action of every seat is accepted;
//! - a refused action changes nothing, neither the state nor its JSON, and its code is a
//!   non-empty kebab-case id (`no-such-seat` for a seat beyond the table); an accepted action
//!   was listed (unless the fixture says the listing is not exhaustive for it);
//! - every observation goes to exactly the audience the fixture says its event may reach,
//!   and a private one names only seats of the table;
//! - no view leaks: each viewer's view, legal actions and default action are the same in a
//!   state that differs only in what that viewer may not know (the fixture builds it);
//! - states, events and actions survive a JSON round trip, byte for byte;
//! - a finished match has an outcome with a score per seat and at least one winner, no seat
//!   has a legal action, and every seat's action is refused as `match-over`;
//! - replaying the action log from setup gives the same observations and the same state,
//!   JSON equal, and so does replaying it with [`Game::replay`], which keeps no observations;
//! - [`Game::legal_actions_into`] lists what [`Game::legal_actions`] lists, and
//!   [`Game::replay`] accepts and refuses what [`Game::apply`] does, changing the state alike.
//!
//! Every match is driven by [`GameRng`] from fixed seeds, so a failure names the config
//! index, the seat count and the seed that reproduce it.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{
    Audience, Game, GameError, GameRng, Observation, Seat, SeatSet, Seed, SetupError, Viewer,
};

type ConfigOf<F> = <<F as Fixture>::G as Game>::Config;
type ActionOf<F> = <<F as Fixture>::G as Game>::Action;
type EventOf<F> = <<F as Fixture>::G as Game>::Event;
/// One step of a walk: who acted, what they did, what the table was told.
type Step<F> = (Seat, ActionOf<F>, Vec<Observation<EventOf<F>>>);

/// Who an event may reach, by the game's rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Heard {
    /// Everyone, spectators included.
    Everyone,
    /// Exactly these seats.
    Only(SeatSet),
    /// Exactly one seat, which the event does not name (it speaks to "you").
    OneSeat,
}

impl Heard {
    pub fn seat(seat: Seat) -> Self {
        Heard::Only(SeatSet::single(seat))
    }
}

/// What the harness needs to know of one game: what to play, what to try, who may hear what
/// and what each viewer may not know.
pub trait Fixture {
    type G: Game;

    /// The configs to play; each is played at every seat count of its seat range.
    fn configs(&self) -> Vec<ConfigOf<Self>>;

    /// An action drawn from a space much wider than the legal one (unknown cards, seats
    /// beyond the table, actions of other phases), to try against `state`.
    fn arbitrary_action(&self, state: &Self::G, rng: &mut GameRng) -> ActionOf<Self>;

    /// Whether `apply` may accept `action` although `legal_actions` does not list it, for
    /// games whose listing stands for a class of equivalent actions.
    fn may_accept_unlisted(&self, _action: &ActionOf<Self>) -> bool {
        false
    }

    /// Which of `legal` (never empty) the walk plays for the awaited `seat`. Uniform by
    /// default; a game whose uniformly random play may not end prefers progress here.
    fn pick(
        &self,
        _state: &Self::G,
        _seat: Seat,
        legal: &[ActionOf<Self>],
        rng: &mut GameRng,
    ) -> usize {
        rng.below(legal.len() as u32) as usize
    }

    /// Who `event` may reach.
    fn heard(&self, event: &EventOf<Self>) -> Heard;

    /// A state that differs from `state` only in what `viewer` may not know (other seats'
    /// secrets, deck order, hidden choices), drawn with `rng`.
    fn hidden_variant(&self, state: &Self::G, viewer: Viewer, rng: &mut GameRng) -> Self::G;

    /// The game's own invariants of a state (every card in one place, values in range),
    /// checked now and then along every walk. Panics on a violation.
    fn check_state(&self, _state: &Self::G) {}
}

/// How much to play.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Matches played at each seat count of each config.
    pub matches: u32,
    /// Actions after which a match that has not ended fails the check.
    pub max_steps: usize,
    /// One step in this many, at random, gets the costly checks (every legal action, probes,
    /// serde, leaks, the fixture's own invariants).
    pub deep_every: u32,
    /// Arbitrary actions tried at each deep step.
    pub probes: u32,
}

/// What a [`check`] played.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub matches: u32,
    pub actions: u64,
    pub deep_steps: u64,
}

/// Plays `plan.matches` matches at every seat count of every config of `fixture` and checks
/// every invariant listed in the module documentation. Panics on the first violation, naming
/// what reproduces it.
pub fn check<F: Fixture>(fixture: &F, plan: &Plan) -> Report {
    let mut report = Report::default();
    for (index, config) in fixture.configs().iter().enumerate() {
        check_seat_counts::<F::G>(config, index);
        for seats in F::G::seat_range(config) {
            for m in 0..plan.matches {
                let seed = ((index as u64) << 48) ^ (u64::from(seats) << 32) ^ u64::from(m);
                let ctx = format!("{} config {index}, {seats} seats, seed {seed}", F::G::KIND);
                play(fixture, plan, config, seats, seed, &ctx, &mut report);
                report.matches += 1;
            }
        }
    }
    report
}

fn check_seat_counts<G: Game>(config: &G::Config, index: usize) {
    let range = G::seat_range(config);
    for seats in 0..=9u8 {
        let result = G::setup(config, seats, Seed::from_u64(1));
        if range.contains(&seats) {
            assert!(result.is_ok(), "{} config {index}: {seats} seats", G::KIND);
        } else {
            let expected = SetupError::SeatCount {
                game: G::KIND,
                min: *range.start(),
                max: *range.end(),
                got: seats,
            };
            assert_eq!(result.err(), Some(expected), "{} config {index}", G::KIND);
        }
    }
}

fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("serialises")
}

/// The value read back from its JSON must equal it and write the same JSON.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T, ctx: &str) {
    let text = json(value);
    let back: T = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{ctx}: {text} does not read back: {e}"));
    assert_eq!(&back, value, "{ctx}: JSON changed the value");
    assert_eq!(json(&back), text, "{ctx}: JSON changed the bytes");
}

fn check_observations<F: Fixture>(
    fixture: &F,
    seats: u8,
    obs: &[Observation<EventOf<F>>],
    ctx: &str,
) {
    let table = SeatSet::first(seats);
    for o in obs {
        match (fixture.heard(&o.event), o.audience) {
            (Heard::Everyone, Audience::Everyone) => {}
            (Heard::Only(expected), Audience::Seats(got)) if expected == got => {}
            (Heard::OneSeat, Audience::Seats(got)) if got.len() == 1 => {}
            (heard, audience) => {
                panic!("{ctx}: {:?} went to {audience:?}, not {heard:?}", o.event)
            }
        }
        if let Audience::Seats(got) = o.audience {
            assert!(
                !got.is_empty() && got.iter().all(|s| table.contains(s)),
                "{ctx}: {:?} went to seats {got:?} of a table of {seats}",
                o.event
            );
        }
    }
}

fn check_refusal<E: GameError>(error: &E, ctx: &str) {
    let code = error.code();
    assert!(
        !code.is_empty()
            && !code.starts_with('-')
            && !code.ends_with('-')
            && code.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
        "{ctx}: refusal code {code:?} is not kebab-case"
    );
    assert!(
        !error.to_string().is_empty(),
        "{ctx}: {code} has no message"
    );
}

/// Who is awaited and what each seat may do by default agree.
fn check_awaiting<G: Game>(state: &G, ctx: &str) {
    let awaiting = state.awaiting();
    assert_eq!(
        awaiting.is_empty(),
        state.outcome().is_some(),
        "{ctx}: a match awaits someone exactly while it has no outcome"
    );
    for seat in 0..state.seats() {
        match state.default_action(seat) {
            Some(action) => {
                assert!(
                    awaiting.contains(seat),
                    "{ctx}: seat {seat} has a default but is not awaited"
                );
                assert!(
                    state.legal_actions(seat).contains(&action),
                    "{ctx}: seat {seat}'s default {action:?} is not legal"
                );
            }
            None => assert!(
                !awaiting.contains(seat),
                "{ctx}: awaited seat {seat} has no default"
            ),
        }
    }
}

/// The costly checks of one step, on `state` before the walk's next action.
fn deep_checks<F: Fixture>(fixture: &F, plan: &Plan, state: &F::G, rng: &mut GameRng, ctx: &str) {
    let seats = state.seats();
    for seat in 0..seats {
        // Appended to what the buffer holds, the same actions in the same order.
        let legal = state.legal_actions(seat);
        let mut buffer = legal.clone();
        state.legal_actions_into(seat, &mut buffer);
        assert!(
            buffer.len() == 2 * legal.len() && buffer[legal.len()..] == legal[..],
            "{ctx}: seat {seat}'s legal_actions_into differs from legal_actions"
        );
        for action in state.legal_actions(seat) {
            round_trip(&action, ctx);
            let mut copy = state.clone();
            let obs = copy
                .apply(seat, &action)
                .unwrap_or_else(|e| panic!("{ctx}: seat {seat}'s listed {action:?} refused: {e}"));
            check_observations(fixture, seats, &obs, ctx);
        }
    }

    let before = json(state);
    for _ in 0..plan.probes {
        let seat = rng.below(u32::from(seats) + 2) as Seat;
        let action = fixture.arbitrary_action(state, rng);
        let listed = seat < seats && state.legal_actions(seat).contains(&action);
        let mut copy = state.clone();
        let mut quiet = state.clone();
        let replayed = quiet.replay(seat, &action);
        let applied = copy.apply(seat, &action);
        assert_eq!(
            replayed.as_ref().err(),
            applied.as_ref().err(),
            "{ctx}: replay and apply of seat {seat}'s {action:?} disagree"
        );
        assert_eq!(
            quiet, copy,
            "{ctx}: replay and apply of seat {seat}'s {action:?} left different states"
        );
        match applied {
            Ok(obs) => {
                assert!(
                    listed || fixture.may_accept_unlisted(&action),
                    "{ctx}: seat {seat}'s unlisted {action:?} was accepted"
                );
                check_observations(fixture, seats, &obs, ctx);
            }
            Err(e) => {
                assert!(
                    !listed,
                    "{ctx}: seat {seat}'s listed {action:?} refused: {e}"
                );
                check_refusal(&e, ctx);
                if seat >= seats {
                    assert_eq!(e.code(), "no-such-seat", "{ctx}: seat {seat}'s {action:?}");
                }
                assert_eq!(
                    &copy,
                    state,
                    "{ctx}: refused {action:?} ({}) changed the state",
                    e.code()
                );
                assert_eq!(
                    json(&copy),
                    before,
                    "{ctx}: refused {action:?} changed the JSON"
                );
            }
        }
    }

    round_trip(state, ctx);
    fixture.check_state(state);

    let viewers = (0..seats).map(Viewer::Seat).chain([Viewer::Spectator]);
    for viewer in viewers {
        let other = fixture.hidden_variant(state, viewer, rng);
        assert_eq!(
            state.view(viewer),
            other.view(viewer),
            "{ctx}: {viewer:?}'s view depends on what it may not know"
        );
        if let Viewer::Seat(seat) = viewer {
            assert_eq!(
                state.legal_actions(seat),
                other.legal_actions(seat),
                "{ctx}: seat {seat}'s legal actions depend on what it may not know"
            );
            assert_eq!(
                state.default_action(seat),
                other.default_action(seat),
                "{ctx}: seat {seat}'s default action depends on what it may not know"
            );
        }
    }
}

fn play<F: Fixture>(
    fixture: &F,
    plan: &Plan,
    config: &ConfigOf<F>,
    seats: u8,
    seed: u64,
    ctx: &str,
    report: &mut Report,
) {
    let mut state = F::G::setup(config, seats, Seed::from_u64(seed)).expect("setup");
    let start = state.clone();
    let setup_obs = state.setup_observations();
    check_observations(fixture, seats, &setup_obs, ctx);
    let mut rng = GameRng::new(Seed::from_u64(seed ^ 0x9e37_79b9_7f4a_7c15));
    let mut log: Vec<Step<F>> = Vec::new();
    while state.outcome().is_none() {
        let ctx = format!("{ctx}, step {}", log.len());
        assert!(log.len() < plan.max_steps, "{ctx}: the match did not end");
        check_awaiting(&state, &ctx);
        if rng.below(plan.deep_every) == 0 {
            deep_checks(fixture, plan, &state, &mut rng, &ctx);
            report.deep_steps += 1;
        }
        let awaiting: Vec<Seat> = state.awaiting().iter().collect();
        let seat = awaiting[rng.below(awaiting.len() as u32) as usize];
        let legal = state.legal_actions(seat);
        assert!(
            !legal.is_empty(),
            "{ctx}: awaited seat {seat} has no legal action"
        );
        let mut action = match state.default_action(seat) {
            Some(default) if rng.below(32) == 0 => default,
            _ => legal[fixture.pick(&state, seat, &legal, &mut rng)].clone(),
        };
        // Now and then a seat acts out of turn where the rules let it.
        let mut seat = seat;
        if rng.below(64) == 0 {
            let other = rng.below(u32::from(seats)) as Seat;
            let optional = state.legal_actions(other);
            if !awaiting.contains(&other) && !optional.is_empty() {
                seat = other;
                action = optional[rng.below(optional.len() as u32) as usize].clone();
            }
        }
        let obs = state
            .apply(seat, &action)
            .unwrap_or_else(|e| panic!("{ctx}: seat {seat}'s listed {action:?} refused: {e}"));
        check_observations(fixture, seats, &obs, &ctx);
        if rng.below(plan.deep_every) == 0 {
            for o in &obs {
                round_trip(&o.event, &ctx);
            }
        }
        log.push((seat, action, obs));
    }
    report.actions += log.len() as u64;

    let outcome = state.outcome().expect("over");
    assert_eq!(
        outcome.scores.len(),
        usize::from(seats),
        "{ctx}: a score per seat"
    );
    assert!(
        !outcome.winners.is_empty() && outcome.winners.iter().all(|s| s < seats),
        "{ctx}: winners {:?}",
        outcome.winners
    );
    check_awaiting(&state, ctx);
    fixture.check_state(&state);
    round_trip(&state, ctx);
    for seat in 0..seats {
        assert!(
            state.legal_actions(seat).is_empty(),
            "{ctx}: seat {seat} may act after the end"
        );
        let action = fixture.arbitrary_action(&state, &mut rng);
        let mut copy = state.clone();
        let refused = copy
            .apply(seat, &action)
            .expect_err("an action after the end");
        assert_eq!(
            refused.code(),
            "match-over",
            "{ctx}: seat {seat}'s {action:?}"
        );
        assert_eq!(
            copy, state,
            "{ctx}: a refusal after the end changed the state"
        );
    }

    // The same config, seed and actions give the same state when replayed without
    // observations...
    let mut quiet = start.clone();
    for (step, (seat, action, _)) in log.iter().enumerate() {
        quiet.replay(*seat, action).unwrap_or_else(|e| {
            panic!("{ctx}: quiet replay of step {step}, {action:?}, refused: {e}")
        });
    }
    assert_eq!(
        json(&quiet),
        json(&state),
        "{ctx}: the quiet replay ended elsewhere"
    );
    assert_eq!(quiet, state, "{ctx}");

    // ...and the same observations and the same state with them.
    let mut replay = start;
    assert_eq!(
        replay.setup_observations(),
        setup_obs,
        "{ctx}: setup told the table otherwise"
    );
    for (step, (seat, action, obs)) in log.iter().enumerate() {
        let again = replay
            .apply(*seat, action)
            .unwrap_or_else(|e| panic!("{ctx}: replayed step {step}, {action:?}, refused: {e}"));
        assert_eq!(
            &again, obs,
            "{ctx}: replayed step {step} told the table otherwise"
        );
    }
    assert_eq!(
        json(&replay),
        json(&state),
        "{ctx}: the replay ended elsewhere"
    );
    assert_eq!(replay, state, "{ctx}");
}
