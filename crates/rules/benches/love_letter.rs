//! Love Letter benchmarks (being written).
fn main() {}
