//! Amori e Intrighi engine throughput: replaying stored action lists and random playouts, for
//! 2 and 4 players. Matches are played uniformly at random among legal actions (random play
//! ends, as the property tests check). See `common` for what each figure counts.
//!
//! Run with `cargo bench -p missive-rules --bench amori`.

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use missive_rules::amori::{Amori, Config};

fn replay(c: &mut Criterion) {
    for seats in [2, 4] {
        common::replay::<Amori>(c, "amori", &Config::default(), seats, common::uniform);
    }
}

fn playouts(c: &mut Criterion) {
    for seats in [2, 4] {
        common::playouts::<Amori>(c, "amori", &Config::default(), seats, common::uniform);
    }
}

criterion_group!(benches, replay, playouts);
criterion_main!(benches);
