//! Love Letter engine throughput: replaying stored action lists with `apply` alone (the cost of
//! rebuilding a match from its log), and random playouts that also enumerate legal actions
//! (the cost of bots and property tests), for 2 and 4 players.
//!
//! Run with `cargo bench -p missive-rules --bench love_letter`.
//!
//! Criterion measures wall time, which a busy machine inflates. The replay benchmark therefore
//! also prints its throughput per second of this thread's own CPU time (Linux only, read from
//! `/proc/thread-self/schedstat`), the figure that says what one core sustains.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use missive_rules::love_letter::{Action, Config, LoveLetter};
use missive_rules::{Game, GameRng, Seat, Seed};

const MATCHES: u64 = 100;

/// Plays one whole match choosing uniformly among legal actions; returns the actions taken.
fn playout(g: &mut LoveLetter, rng: &mut GameRng) -> Vec<(Seat, Action)> {
    let mut log = Vec::new();
    while g.outcome().is_none() {
        let seat = g.awaiting().iter().next().expect("an awaited seat");
        let mut legal = g.legal_actions(seat);
        let i = rng.below(legal.len() as u32) as usize;
        let action = legal.swap_remove(i);
        g.apply(seat, &action).expect("a legal action");
        log.push((seat, action));
    }
    log
}

fn start(seats: u8, seed: u64) -> LoveLetter {
    LoveLetter::setup(&Config::default(), seats, Seed::from_u64(seed)).expect("setup")
}

fn stored_matches(seats: u8) -> Vec<(LoveLetter, Vec<(Seat, Action)>)> {
    (0..MATCHES)
        .map(|seed| {
            let initial = start(seats, seed);
            let mut g = initial.clone();
            let log = playout(&mut g, &mut GameRng::new(Seed::from_u64(seed + 7)));
            (initial, log)
        })
        .collect()
}

/// Nanoseconds this thread has spent on a CPU, if the kernel says.
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Replays the stored matches for about two seconds of CPU time and prints actions per CPU
/// second. Runs long enough that the scheduler's accounting granularity does not matter.
fn replay_per_cpu_second(seats: u8, matches: &[(LoveLetter, Vec<(Seat, Action)>)]) {
    let Some(start) = thread_cpu_ns() else { return };
    let wall = std::time::Instant::now();
    let mut actions = 0u64;
    let mut cpu = 0;
    while cpu < 2_000_000_000 {
        let mut states: Vec<LoveLetter> = matches.iter().map(|(g, _)| g.clone()).collect();
        let before = thread_cpu_ns().unwrap_or(start);
        for (g, (_, log)) in states.iter_mut().zip(matches) {
            for (seat, action) in log {
                black_box(g.apply(*seat, action).expect("a stored action"));
            }
            actions += log.len() as u64;
        }
        // Only the replay counts, not the cloning of the initial states.
        cpu += thread_cpu_ns().unwrap_or(before) - before;
        drop(black_box(states));
    }
    println!(
        "love_letter/replay_{seats}p: {:.2} M actions per CPU second ({actions} actions, {:.2} s CPU, {:.2} s wall)",
        actions as f64 / cpu as f64 * 1e3,
        cpu as f64 / 1e9,
        wall.elapsed().as_secs_f64(),
    );
}

fn replay(c: &mut Criterion) {
    for seats in [2, 4] {
        let matches = stored_matches(seats);
        let actions: usize = matches.iter().map(|(_, log)| log.len()).sum();
        replay_per_cpu_second(seats, &matches);
        let mut group = c.benchmark_group(format!("love_letter/replay_{seats}p"));
        group.throughput(Throughput::Elements(actions as u64));
        group.bench_function("apply", |b| {
            b.iter_batched(
                || matches.iter().map(|(g, _)| g.clone()).collect::<Vec<_>>(),
                |mut states| {
                    for (g, (_, log)) in states.iter_mut().zip(&matches) {
                        for (seat, action) in log {
                            black_box(g.apply(*seat, action).expect("a stored action"));
                        }
                    }
                    states
                },
                BatchSize::LargeInput,
            );
        });
        group.finish();
    }
}

fn playouts(c: &mut Criterion) {
    for seats in [2, 4] {
        let starts: Vec<LoveLetter> = (0..MATCHES).map(|seed| start(seats, seed)).collect();
        let actions: usize = starts
            .iter()
            .enumerate()
            .map(|(seed, g)| {
                playout(
                    &mut g.clone(),
                    &mut GameRng::new(Seed::from_u64(seed as u64 + 7)),
                )
                .len()
            })
            .sum();
        let mut group = c.benchmark_group(format!("love_letter/playout_{seats}p"));
        for (name, elements) in [("actions", actions as u64), ("matches", MATCHES)] {
            group.throughput(Throughput::Elements(elements));
            group.bench_function(name, |b| {
                b.iter_batched(
                    || starts.clone(),
                    |mut states| {
                        for (seed, g) in states.iter_mut().enumerate() {
                            let mut rng = GameRng::new(Seed::from_u64(seed as u64 + 7));
                            black_box(playout(g, &mut rng));
                        }
                        states
                    },
                    BatchSize::LargeInput,
                );
            });
        }
        group.finish();
    }
}

criterion_group!(benches, replay, playouts);
criterion_main!(benches);
