//! Lopti engine throughput: replaying stored action lists and playouts, for 2 and 4 players,
//! sessions of the default number of hands. Uniformly random play need not end a Lopti hand
//! (a pile can be picked up forever), so playouts pick as the property tests do
//! ([`common::lopti_progress`]). See `common` for what each figure counts.
//!
//! Run with `cargo bench -p missive-rules --bench lopti`.

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use missive_rules::lopti::{Config, Lopti};

fn replay(c: &mut Criterion) {
    for seats in [2, 4] {
        common::replay::<Lopti>(
            c,
            "lopti",
            &Config::default(),
            seats,
            common::lopti_progress,
        );
    }
}

fn playouts(c: &mut Criterion) {
    for seats in [2, 4] {
        common::playouts::<Lopti>(
            c,
            "lopti",
            &Config::default(),
            seats,
            common::lopti_progress,
        );
    }
}

criterion_group!(benches, replay, playouts);
criterion_main!(benches);
