//! What every engine benchmark does, for any [`Game`]: record random matches, then measure
//!
//! - **replay**: re-apply a stored action list to the setup state with [`Game::replay`] (the
//!   state only, as a server rebuilding a match from its log needs), and for comparison with
//!   [`Game::apply`], which also builds every observation;
//! - **playout**: play whole matches choosing among legal actions ([`Game::legal_actions_into`]
//!   into one reused buffer, then [`Game::replay`]), the work of bots and property tests.
//!
//! Criterion measures wall time, which a busy machine inflates. Each benchmark therefore also
//! prints its throughput per second of this thread's own CPU time (Linux only, read from
//! `/proc/thread-self/schedstat`), the figure that says what one core sustains.

#![allow(dead_code, unreachable_pub)]

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput};
use missive_rules::lopti::{Action as LoptiAction, Lopti};
use missive_rules::{Game, GameRng, Seat, Seed};

/// Matches per iteration.
pub const MATCHES: u64 = 100;

/// Which of `legal` (never empty) a playout plays for `seat`.
pub type Pick<G> = fn(&G, Seat, &[<G as Game>::Action], &mut GameRng) -> usize;

/// Uniformly at random.
pub fn uniform<G: Game>(_: &G, _: Seat, legal: &[G::Action], rng: &mut GameRng) -> usize {
    rng.below(legal.len() as u32) as usize
}

/// Indices of `legal` that satisfy `keep`, drawn from at random; `None` if there are none.
fn among(
    legal: &[LoptiAction],
    rng: &mut GameRng,
    keep: impl Fn(&LoptiAction) -> bool,
) -> Option<usize> {
    let count = legal.iter().filter(|a| keep(a)).count();
    if count == 0 {
        return None;
    }
    let k = rng.below(count as u32) as usize;
    legal
        .iter()
        .enumerate()
        .filter(|(_, a)| keep(a))
        .nth(k)
        .map(|(i, _)| i)
}

/// Lopti's playout policy, as in its property tests: a play when there is one (picking up one
/// time in ten), mostly declining proposals, otherwise at random among the phase's actions.
pub fn lopti_progress(_: &Lopti, _: Seat, legal: &[LoptiAction], rng: &mut GameRng) -> usize {
    let position = |wanted: &LoptiAction| legal.iter().position(|a| a == wanted);
    let is_play = |a: &LoptiAction| {
        matches!(
            a,
            LoptiAction::Play { .. } | LoptiAction::PlayFaceDown { .. }
        )
    };
    let pick_up = position(&LoptiAction::PickUp);
    let plays = legal.iter().any(is_play);
    if plays || pick_up.is_some() {
        if let Some(i) = pick_up
            && (!plays || rng.below(10) == 0)
        {
            return i;
        }
        return among(legal, rng, is_play).expect("a play");
    }
    if let Some(i) = position(&LoptiAction::DeclineProposal)
        && rng.below(6) != 0
    {
        return i;
    }
    among(legal, rng, |a| !matches!(a, LoptiAction::CancelRule { .. }))
        .unwrap_or_else(|| rng.below(legal.len() as u32) as usize)
}

/// One stored match: its setup state and every action taken, in order.
pub type Stored<G> = (G, Vec<(Seat, <G as Game>::Action)>);

/// Plays one whole match, the first awaited seat acting each time, choosing with `pick`;
/// returns the number of actions and, with `log`, records them.
pub fn playout<G: Game>(
    g: &mut G,
    rng: &mut GameRng,
    pick: Pick<G>,
    legal: &mut Vec<G::Action>,
    mut log: Option<&mut Vec<(Seat, G::Action)>>,
) -> usize {
    let mut actions = 0;
    while let Some(seat) = g.awaiting().iter().next() {
        legal.clear();
        g.legal_actions_into(seat, legal);
        let action = &legal[pick(g, seat, legal, rng)];
        g.replay(seat, action).expect("a legal action");
        if let Some(log) = log.as_deref_mut() {
            log.push((seat, action.clone()));
        }
        actions += 1;
    }
    actions
}

/// `MATCHES` setup states for `seats` seats, from seeds `0..MATCHES`.
pub fn starts<G: Game>(config: &G::Config, seats: u8) -> Vec<G> {
    (0..MATCHES)
        .map(|seed| G::setup(config, seats, Seed::from_u64(seed)).expect("setup"))
        .collect()
}

/// The playout rng of match `seed`.
fn playout_rng(seed: usize) -> GameRng {
    GameRng::new(Seed::from_u64(seed as u64 + 7))
}

/// `MATCHES` matches played out and stored.
pub fn stored_matches<G: Game>(config: &G::Config, seats: u8, pick: Pick<G>) -> Vec<Stored<G>> {
    let mut legal = Vec::new();
    starts::<G>(config, seats)
        .into_iter()
        .enumerate()
        .map(|(seed, initial)| {
            let mut g = initial.clone();
            let mut log = Vec::new();
            playout(
                &mut g,
                &mut playout_rng(seed),
                pick,
                &mut legal,
                Some(&mut log),
            );
            (initial, log)
        })
        .collect()
}

/// Nanoseconds this thread has spent on a CPU, if the kernel says.
pub fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Runs `pass` (which returns the actions it took) on fresh copies of `states` until about two
/// seconds of CPU time have gone to it, and prints actions per CPU second. Copying the states
/// is not counted.
fn per_cpu_second<G: Game>(name: &str, states: &[G], mut pass: impl FnMut(&mut [G]) -> u64) {
    let Some(start) = thread_cpu_ns() else { return };
    let wall = std::time::Instant::now();
    let mut actions = 0u64;
    let mut cpu = 0;
    while cpu < 2_000_000_000 {
        let mut copies = states.to_vec();
        let before = thread_cpu_ns().unwrap_or(start);
        actions += pass(&mut copies);
        cpu += thread_cpu_ns().unwrap_or(before) - before;
        drop(black_box(copies));
    }
    println!(
        "{name}: {:.3} M actions per CPU second ({actions} actions, {:.2} s CPU, {:.2} s wall)",
        actions as f64 / cpu as f64 * 1e3,
        cpu as f64 / 1e9,
        wall.elapsed().as_secs_f64(),
    );
}

/// Replays every stored match on `states` (their setup states) with [`Game::replay`].
fn replay_all<G: Game>(states: &mut [G], matches: &[Stored<G>]) -> u64 {
    let mut actions = 0;
    for (g, (_, log)) in states.iter_mut().zip(matches) {
        for (seat, action) in log {
            black_box(g.replay(*seat, action)).expect("a stored action");
        }
        actions += log.len() as u64;
    }
    actions
}

/// Replays every stored match on `states` with [`Game::apply`], observations built and dropped.
fn apply_all<G: Game>(states: &mut [G], matches: &[Stored<G>]) -> u64 {
    let mut actions = 0;
    for (g, (_, log)) in states.iter_mut().zip(matches) {
        for (seat, action) in log {
            drop(black_box(g.apply(*seat, action).expect("a stored action")));
        }
        actions += log.len() as u64;
    }
    actions
}

/// Plays out every state of `states`, match `i` with the rng of seed `i`.
fn playout_all<G: Game>(states: &mut [G], pick: Pick<G>, legal: &mut Vec<G::Action>) -> u64 {
    let mut actions = 0;
    for (seed, g) in states.iter_mut().enumerate() {
        actions += playout(g, &mut playout_rng(seed), pick, legal, None) as u64;
    }
    actions
}

/// The replay benchmarks of one game at one seat count: `{game}/replay_{seats}p`, functions
/// `replay` and `apply`.
pub fn replay<G: Game>(
    c: &mut Criterion,
    game: &str,
    config: &G::Config,
    seats: u8,
    pick: Pick<G>,
) {
    let matches = stored_matches::<G>(config, seats, pick);
    let states: Vec<G> = matches.iter().map(|(g, _)| g.clone()).collect();
    let actions: usize = matches.iter().map(|(_, log)| log.len()).sum();
    let name = format!("{game}/replay_{seats}p");
    per_cpu_second(&format!("{name}/replay"), &states, |s| {
        replay_all(s, &matches)
    });
    per_cpu_second(&format!("{name}/apply"), &states, |s| {
        apply_all(s, &matches)
    });
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(actions as u64));
    group.bench_function("replay", |b| {
        b.iter_batched(
            || states.clone(),
            |mut s| {
                replay_all(&mut s, &matches);
                s
            },
            BatchSize::LargeInput,
        );
    });
    group.bench_function("apply", |b| {
        b.iter_batched(
            || states.clone(),
            |mut s| {
                apply_all(&mut s, &matches);
                s
            },
            BatchSize::LargeInput,
        );
    });
    group.finish();
}

/// The playout benchmarks of one game at one seat count: `{game}/playout_{seats}p`, functions
/// `actions` and `matches` (the same work, counted in actions and in matches).
pub fn playouts<G: Game>(
    c: &mut Criterion,
    game: &str,
    config: &G::Config,
    seats: u8,
    pick: Pick<G>,
) {
    let starts = starts::<G>(config, seats);
    let mut legal = Vec::new();
    let actions = playout_all(&mut starts.clone(), pick, &mut legal);
    let name = format!("{game}/playout_{seats}p");
    per_cpu_second(&format!("{name}/actions"), &starts, |s| {
        playout_all(s, pick, &mut legal)
    });
    let mut group = c.benchmark_group(name);
    for (function, elements) in [("actions", actions), ("matches", MATCHES)] {
        group.throughput(Throughput::Elements(elements));
        group.bench_function(function, |b| {
            b.iter_batched(
                || starts.clone(),
                |mut s| {
                    black_box(playout_all(&mut s, pick, &mut legal));
                    s
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}
