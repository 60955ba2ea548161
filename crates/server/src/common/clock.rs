//! The server's clock: the system's, or one that only moves when told to (tests).
//!
//! Everything that decides when a turn is due reads this clock: the time stamped on each
//! event (a deadline is that time plus the match's timeout) and the time the turn worker
//! claims due turns at. A test that holds a [`Clock::manual`] checks deadlines exactly, with
//! no sleeping: nothing is due until it advances the clock past the deadline.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};

#[derive(Debug, Clone, Default)]
pub struct Clock(Option<Arc<Mutex<DateTime<Utc>>>>);

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock(None)
    }

    /// A clock that reads `start` until [`Clock::advance`] moves it.
    pub fn manual(start: DateTime<Utc>) -> Clock {
        Clock(Some(Arc::new(Mutex::new(start))))
    }

    /// Now, to the microsecond (what the store keeps).
    pub fn now(&self) -> DateTime<Utc> {
        let now = match &self.0 {
            None => Utc::now(),
            Some(manual) => *manual.lock().unwrap_or_else(|e| e.into_inner()),
        };
        missive_store::truncate_to_micros(now)
    }

    /// Moves a manual clock forward by `by`; the system clock moves by itself.
    pub fn advance(&self, by: Duration) {
        if let Some(manual) = &self.0 {
            let mut now = manual.lock().unwrap_or_else(|e| e.into_inner());
            *now += chrono::Duration::from_std(by).unwrap_or(chrono::Duration::MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let start = DateTime::parse_from_rfc3339("2026-01-02T03:04:05.123456789Z")
            .expect("a time")
            .with_timezone(&Utc);
        let clock = Clock::manual(start);
        let read = clock.now();
        assert_eq!(read, missive_store::truncate_to_micros(start));
        assert_eq!(clock.now(), read);
        clock.clone().advance(Duration::from_secs(90));
        assert_eq!(clock.now(), read + chrono::Duration::seconds(90));
        let system = Clock::system();
        let before = Utc::now() - chrono::Duration::seconds(1);
        assert!(system.now() >= before);
    }
}
