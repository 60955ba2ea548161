//! Heap allocations per action of each engine, counted by a counting global allocator: on the
//! replay path ([`Game::replay`]), through [`Game::apply`] (which returns the observations),
//! and in playouts (legal actions into a reused buffer, then `replay`). No engine's replay or
//! playout may allocate, in any phase: Lopti's rules, votes and roshambo included, and a table
//! rule's text (shared with the action that carries it); the run fails otherwise.
//!
//! Run with `cargo bench -p missive-rules --bench allocations` (the figures do not depend on
//! the machine; `cargo test -p missive-rules` runs it too, for the assertion).

mod common;

use std::alloc::System;
use std::hint::black_box;

use missive_rules::{Game, amori, lopti, love_letter};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Allocations (reallocations included) per action on each path.
#[derive(Debug)]
struct PerAction {
    replay: f64,
    apply: f64,
    playout: f64,
}

/// Counts the allocations and reallocations `f` makes.
fn count(f: impl FnOnce()) -> usize {
    let region = Region::new(GLOBAL);
    f();
    let change = region.change();
    change.allocations + change.reallocations
}

fn measure<G: Game>(config: &G::Config, seats: u8, pick: common::Pick<G>) -> PerAction {
    let matches = common::stored_matches::<G>(config, seats, pick);
    let actions: usize = matches.iter().map(|(_, log)| log.len()).sum();
    let mut states: Vec<G> = matches.iter().map(|(g, _)| g.clone()).collect();
    let replay = count(|| {
        for (g, (_, log)) in states.iter_mut().zip(&matches) {
            for (seat, action) in log {
                black_box(g.replay(*seat, action)).expect("a stored action");
            }
        }
    });
    let mut states: Vec<G> = matches.iter().map(|(g, _)| g.clone()).collect();
    let apply = count(|| {
        for (g, (_, log)) in states.iter_mut().zip(&matches) {
            for (seat, action) in log {
                drop(black_box(g.apply(*seat, action).expect("a stored action")));
            }
        }
    });
    let mut states: Vec<G> = matches.iter().map(|(g, _)| g.clone()).collect();
    let playouts = |states: &mut [G], legal: &mut Vec<G::Action>| {
        let mut played = 0;
        for (seed, g) in states.iter_mut().enumerate() {
            let mut rng =
                missive_rules::GameRng::new(missive_rules::Seed::from_u64(seed as u64 + 7));
            played += common::playout(g, &mut rng, pick, legal, None);
        }
        played
    };
    // The buffer grows to its longest listing in a first, uncounted round, as it would once in
    // a long-running player.
    let mut legal = Vec::new();
    playouts(&mut states.clone(), &mut legal);
    let mut played = 0;
    let playout = count(|| played = playouts(&mut states, &mut legal));
    PerAction {
        replay: replay as f64 / actions as f64,
        apply: apply as f64 / actions as f64,
        playout: playout as f64 / played as f64,
    }
}

/// Allocations replaying Lopti sessions whose every created rule also brings a table rule of
/// its own text (listings never offer one: a table rule's text is the winner's to write), and
/// the table rules created. The texts are written before the count starts.
fn lopti_table_rules(seats: u8) -> (f64, usize) {
    let mut legal = Vec::new();
    let mut logs = Vec::new();
    let mut written = 0;
    for (seed, initial) in common::starts::<lopti::Lopti>(&lopti::Config::default(), seats)
        .into_iter()
        .enumerate()
    {
        let mut g = initial.clone();
        let mut rng = missive_rules::GameRng::new(missive_rules::Seed::from_u64(seed as u64 + 7));
        let mut log = Vec::new();
        while let Some(seat) = g.awaiting().iter().next() {
            legal.clear();
            g.legal_actions_into(seat, &mut legal);
            let mut action = legal[common::lopti_progress(&g, seat, &legal, &mut rng)].clone();
            if let lopti::Action::CreateRule { table_rule, .. } = &mut action {
                written += 1;
                *table_rule = Some(format!("table rule {written} of session {seed}").into());
            }
            g.replay(seat, &action).expect("a legal action");
            log.push((seat, action));
        }
        logs.push((initial, log));
    }
    let actions: usize = logs.iter().map(|(_, log)| log.len()).sum();
    let allocations = count(|| {
        for (g, log) in &mut logs {
            for (seat, action) in log.iter() {
                black_box(g.replay(*seat, action)).expect("a stored action");
            }
        }
    });
    (allocations as f64 / actions as f64, written)
}

fn main() {
    // Criterion's and cargo's arguments (`--bench`) are not for this binary.
    // Every replay and playout figure, of every engine at every seat count, must be 0.
    let mut must_be_none = Vec::new();
    println!("allocations per action (replay | apply | playout)");
    for seats in [2, 4] {
        let figures = [
            (
                "love_letter",
                measure::<love_letter::LoveLetter>(
                    &love_letter::Config::default(),
                    seats,
                    common::uniform,
                ),
            ),
            (
                "lopti",
                measure::<lopti::Lopti>(&lopti::Config::default(), seats, common::lopti_progress),
            ),
            (
                "amori",
                measure::<amori::Amori>(&amori::Config::default(), seats, common::uniform),
            ),
        ];
        for (game, f) in figures {
            println!(
                "{game} {seats}p: {:.3} | {:.3} | {:.3}",
                f.replay, f.apply, f.playout
            );
            must_be_none.push((format!("{game} {seats}p replay"), f.replay));
            must_be_none.push((format!("{game} {seats}p playout"), f.playout));
        }
        let (table_rules, written) = lopti_table_rules(seats);
        println!(
            "lopti {seats}p, a table rule with every rule created: {table_rules:.3} (replay; \
             {written} table rules)"
        );
        assert!(written > 0, "no Lopti session created a rule");
        must_be_none.push((
            format!("lopti {seats}p replay with table rules"),
            table_rules,
        ));
    }
    let allocated: Vec<_> = must_be_none.iter().filter(|(_, a)| *a != 0.0).collect();
    assert!(
        allocated.is_empty(),
        "allocations per action where there must be none: {allocated:?}"
    );
}
