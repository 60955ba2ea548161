//! What one timed step measured: operations completed inside the window and their latencies.

use std::collections::BTreeMap;
use std::time::Duration;

/// Operations that completed within a step's window, with their latencies.
#[derive(Debug, Default)]
pub(crate) struct Step {
    pub(crate) ops: u64,
    pub(crate) latencies: Vec<Duration>,
    pub(crate) window: Duration,
    /// Failed operations by gRPC code (or error text); a healthy run has none.
    pub(crate) errors: BTreeMap<String, u64>,
    /// Protobuf bytes of the answers and updates received during the window.
    pub(crate) received: u64,
}

impl Step {
    pub(crate) fn record(&mut self, latency: Duration) {
        self.ops += 1;
        self.latencies.push(latency);
    }

    pub(crate) fn error(&mut self, what: impl Into<String>) {
        *self.errors.entry(what.into()).or_default() += 1;
    }

    /// Folds another step's counts in; windows of steps run side by side are the same window.
    pub(crate) fn merge(&mut self, other: Step) {
        self.ops += other.ops;
        self.received += other.received;
        self.latencies.extend(other.latencies);
        for (k, v) in other.errors {
            *self.errors.entry(k).or_default() += v;
        }
    }

    /// Adds a later step of the same kind: counts and windows both add up.
    pub(crate) fn append(&mut self, other: Step) {
        let window = self.window + other.window;
        self.merge(other);
        self.window = window;
    }

    pub(crate) fn rate(&self) -> f64 {
        if self.window.is_zero() {
            return 0.0;
        }
        self.ops as f64 / self.window.as_secs_f64()
    }

    /// The `p`-th percentile latency (0 < p ≤ 100), in milliseconds; 0 with no samples.
    pub(crate) fn percentile_ms(&mut self, p: f64) -> f64 {
        if self.latencies.is_empty() {
            return 0.0;
        }
        self.latencies.sort_unstable();
        let rank = ((p / 100.0) * self.latencies.len() as f64).ceil() as usize;
        let index = rank.clamp(1, self.latencies.len()) - 1;
        self.latencies[index].as_secs_f64() * 1e3
    }

    pub(crate) fn errors_text(&self) -> String {
        self.errors
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(ms: &[u64]) -> Step {
        let mut s = Step::default();
        for &m in ms {
            s.record(Duration::from_millis(m));
        }
        s
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut s = step(&(1..=100).rev().collect::<Vec<_>>());
        assert_eq!(s.percentile_ms(50.0), 50.0);
        assert_eq!(s.percentile_ms(99.0), 99.0);
        assert_eq!(s.percentile_ms(100.0), 100.0);
        assert_eq!(step(&[7]).percentile_ms(99.0), 7.0);
        assert_eq!(Step::default().percentile_ms(50.0), 0.0);
    }

    #[test]
    fn appended_steps_add_windows_and_counts() {
        let mut a = step(&[1, 2]);
        a.window = Duration::from_secs(2);
        let mut b = step(&[3, 4, 5, 6]);
        b.window = Duration::from_secs(1);
        b.error("Aborted");
        a.append(b);
        assert_eq!(a.ops, 6);
        assert_eq!(a.window, Duration::from_secs(3));
        assert_eq!(a.rate(), 2.0);
        assert_eq!(a.errors_text(), "Aborted: 1");
    }
}
