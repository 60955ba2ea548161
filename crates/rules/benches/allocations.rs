//! Heap allocations per action of each engine, counted by a counting global allocator: on the
//! replay path ([`Game::replay`]), through [`Game::apply`] (which returns the observations),
//! and in playouts (legal actions into a reused buffer, then `replay`). Love Letter's and
//! Amori e Intrighi's replays and playouts must allocate nothing, nor Lopti's listing of legal
//! actions in any phase, nor its replay of any action outside the rule phase (creating,
//! proposing, voting on and cancelling rules, and the roshambo that breaks a tied vote, keep
//! rules' text and lists on the heap); the run fails otherwise.
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

/// What Lopti playouts allocate, each step counted on its own.
#[derive(Debug, Default)]
struct LoptiPlayout {
    /// Allocations listing a seat's legal actions into a reused buffer, in every phase.
    listing: usize,
    listings: usize,
    /// Allocations replaying the chosen action in a hand: when nothing listed but a
    /// withdrawal belongs to the rule phase, and a withdrawal was not the one chosen.
    hand_replay: usize,
    hand_steps: usize,
}

fn lopti_playout(seats: u8) -> LoptiPlayout {
    let mut legal = Vec::new();
    let mut counts = LoptiPlayout::default();
    // Twice, counting the second time: the first builds the rule catalogue (once per process)
    // and grows the buffer to the longest listing, as a long-running player's would be.
    for _ in 0..2 {
        counts = lopti_playouts(seats, &mut legal);
    }
    counts
}

fn lopti_playouts(seats: u8, legal: &mut Vec<lopti::Action>) -> LoptiPlayout {
    let mut counts = LoptiPlayout::default();
    let starts = common::starts::<lopti::Lopti>(&lopti::Config::default(), seats);
    for (seed, mut g) in starts.into_iter().enumerate() {
        let mut rng = missive_rules::GameRng::new(missive_rules::Seed::from_u64(seed as u64 + 7));
        while let Some(seat) = g.awaiting().iter().next() {
            counts.listing += count(|| {
                legal.clear();
                g.legal_actions_into(seat, legal);
            });
            counts.listings += 1;
            let chosen = common::lopti_progress(&g, seat, legal, &mut rng);
            let replayed = count(|| {
                black_box(g.replay(seat, &legal[chosen])).expect("a legal action");
            });
            let in_hand = !lopti_rule_phase(&legal[chosen])
                && legal
                    .iter()
                    .all(|a| matches!(a, lopti::Action::CancelRule { .. }) || !lopti_rule_phase(a));
            if in_hand {
                counts.hand_replay += replayed;
                counts.hand_steps += 1;
            }
        }
    }
    counts
}

fn main() {
    // Criterion's and cargo's arguments (`--bench`) are not for this binary.
    let mut love_letter_replay = Vec::new();
    let mut love_letter_playout = Vec::new();
    let mut amori_replay = Vec::new();
    let mut amori_playout = Vec::new();
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
        love_letter_playout.push(ll.playout);
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
        amori_playout.push(am.playout);
    }
    assert!(
        love_letter_replay.iter().all(|a| *a == 0.0),
        "Love Letter's replay allocated: {love_letter_replay:?} per action"
    );
    assert!(
        love_letter_playout.iter().all(|a| *a == 0.0),
        "Love Letter's playout allocated: {love_letter_playout:?} per action"
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
        let playout = lopti_playout(seats);
        println!(
            "lopti {seats}p playouts: {} in {} listings, {} in {} replays in a hand",
            playout.listing, playout.listings, playout.hand_replay, playout.hand_steps
        );
        assert!(playout.hand_steps > 0, "no Lopti playout steps in a hand");
        assert_eq!(
            playout.listing, 0,
            "listing Lopti's legal actions allocated"
        );
        assert_eq!(
            playout.hand_replay, 0,
            "Lopti's playout allocated outside the rule phase"
        );
    }
    assert!(
        amori_replay.iter().all(|a| *a == 0.0),
        "Amori e Intrighi's replay allocated: {amori_replay:?} per action"
    );
    assert!(
        amori_playout.iter().all(|a| *a == 0.0),
        "Amori e Intrighi's playout allocated: {amori_playout:?} per action"
    );
}
