//! Heap allocations per action of each engine, counted by a counting global allocator: on the
//! replay path ([`Game::replay`]), through [`Game::apply`] (which returns the observations),
//! and in playouts (legal actions into a reused buffer, then `replay`). Love Letter's and
//! Amori e Intrighi's replays must allocate nothing, nor Lopti's replays and playouts of any
//! action outside the rule phase (creating, proposing, voting on and cancelling rules, and the
//! roshambo that breaks a tied vote, keep rules' text and lists on the heap); the run fails
//! otherwise.
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
    // The buffer grows to its largest listing once, as it would in a long-running player.
    let mut legal = Vec::with_capacity(256);
    let mut played = 0;
    let playout = count(|| {
        for (seed, g) in states.iter_mut().enumerate() {
            let mut rng =
                missive_rules::GameRng::new(missive_rules::Seed::from_u64(seed as u64 + 7));
            played += common::playout(g, &mut rng, pick, &mut legal, None);
        }
    });
    PerAction {
        replay: replay as f64 / actions as f64,
        apply: apply as f64 / actions as f64,
        playout: playout as f64 / played as f64,
    }
}

/// Whether a Lopti action belongs to the rule phase (rules' text and lists on the heap).
fn lopti_rule_phase(action: &lopti::Action) -> bool {
    use lopti::Action;
    matches!(
        action,
        Action::CreateRule { .. }
            | Action::SkipRule
            | Action::Propose { .. }
            | Action::Vote { .. }
            | Action::Throw { .. }
            | Action::CancelRule { .. }
    )
}

/// Allocations on the replay path of Lopti's actions outside the rule phase, and those
/// actions' count, each action counted on its own.
fn lopti_hand_replay(seats: u8) -> (usize, usize) {
    let matches = common::stored_matches::<lopti::Lopti>(
        &lopti::Config::default(),
        seats,
        common::lopti_progress,
    );
    let (mut allocations, mut actions) = (0, 0);
    for (mut g, log) in matches {
        for (seat, action) in &log {
            let counted = count(|| {
                black_box(g.replay(*seat, action)).expect("a stored action");
            });
            if !lopti_rule_phase(action) {
                allocations += counted;
                actions += 1;
            }
        }
    }
    (allocations, actions)
}

/// Allocations of the steps of Lopti playouts taken in a hand (the seat's legal actions listed
/// into a reused buffer, then the chosen one replayed), and those steps' count, each step
/// counted on its own. A step counts when nothing listed but a withdrawal belongs to the rule
/// phase, and a withdrawal was not the one chosen.
fn lopti_hand_playout(seats: u8) -> (usize, usize) {
    let mut legal = Vec::with_capacity(256);
    let (mut allocations, mut steps) = (0, 0);
    let starts = common::starts::<lopti::Lopti>(&lopti::Config::default(), seats);
    for (seed, mut g) in starts.into_iter().enumerate() {
        let mut rng = missive_rules::GameRng::new(missive_rules::Seed::from_u64(seed as u64 + 7));
        while let Some(seat) = g.awaiting().iter().next() {
            let mut chosen = 0;
            let counted = count(|| {
                legal.clear();
                g.legal_actions_into(seat, &mut legal);
                chosen = common::lopti_progress(&g, seat, &legal, &mut rng);
                black_box(g.replay(seat, &legal[chosen])).expect("a legal action");
            });
            let in_hand = !lopti_rule_phase(&legal[chosen])
                && legal
                    .iter()
                    .all(|a| matches!(a, lopti::Action::CancelRule { .. }) || !lopti_rule_phase(a));
            if in_hand {
                allocations += counted;
                steps += 1;
            }
        }
    }
    (allocations, steps)
}

fn main() {
    // Criterion's and cargo's arguments (`--bench`) are not for this binary.
    let mut love_letter_replay = Vec::new();
    let mut amori_replay = Vec::new();
    println!("allocations per action (replay | apply | playout)");
    for seats in [2, 4] {
        let ll = measure::<love_letter::LoveLetter>(
            &love_letter::Config::default(),
            seats,
            common::uniform,
        );
        println!(
            "love_letter {seats}p: {:.3} | {:.3} | {:.3}",
            ll.replay, ll.apply, ll.playout
        );
        love_letter_replay.push(ll.replay);
        let lo = measure::<lopti::Lopti>(&lopti::Config::default(), seats, common::lopti_progress);
        println!(
            "lopti {seats}p: {:.3} | {:.3} | {:.3}",
            lo.replay, lo.apply, lo.playout
        );
        let am = measure::<amori::Amori>(&amori::Config::default(), seats, common::uniform);
        println!(
            "amori {seats}p: {:.3} | {:.3} | {:.3}",
            am.replay, am.apply, am.playout
        );
        amori_replay.push(am.replay);
    }
    assert!(
        love_letter_replay.iter().all(|a| *a == 0.0),
        "Love Letter's replay allocated: {love_letter_replay:?} per action"
    );
    for seats in [2, 4] {
        let (allocations, actions) = lopti_hand_replay(seats);
        println!("lopti {seats}p outside the rule phase: {allocations} in {actions} replays");
        assert!(
            actions > 0,
            "no Lopti actions outside the rule phase were replayed"
        );
        assert_eq!(
            allocations, 0,
            "Lopti's replay allocated outside the rule phase"
        );
        let (allocations, steps) = lopti_hand_playout(seats);
        println!("lopti {seats}p playout outside the rule phase: {allocations} in {steps} steps");
        assert!(steps > 0, "no Lopti playout steps outside the rule phase");
        assert_eq!(
            allocations, 0,
            "Lopti's playout allocated outside the rule phase"
        );
    }
    assert!(
        amori_replay.iter().all(|a| *a == 0.0),
        "Amori e Intrighi's replay allocated: {amori_replay:?} per action"
    );
}
