//! Love Letter engine throughput: replaying stored action lists (the cost of rebuilding a match
//! from its log) and random playouts that also enumerate legal actions (the cost of bots and
//! property tests), for 2 and 4 players. See `common` for what each figure counts.
//!
//! Run with `cargo bench -p missive-rules --bench love_letter`.

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use missive_rules::love_letter::{Config, LoveLetter};

fn replay(c: &mut Criterion) {
    for seats in [2, 4] {
        common::replay::<LoveLetter>(c, "love_letter", &Config::default(), seats, common::uniform);
    }
}

fn playouts(c: &mut Criterion) {
    for seats in [2, 4] {
        common::playouts::<LoveLetter>(
            c,
            "love_letter",
            &Config::default(),
            seats,
            common::uniform,
        );
    }
}

criterion_group!(benches, replay, playouts);
criterion_main!(benches);
