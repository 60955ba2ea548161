//! Each destination host as the delivery worker sees it: attempts in flight, failures in a
//! row and its back-off, so that a slow or dead receiver delays only its own deliveries.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::{BUSY_MIN, HOST_FAILURES, Settings, unit_random};

/// How a host fared in one attempt, for its back-off: it answered (2xx, or a 4xx that is about
/// the request), or it did not (no connection, no answer in time, 5xx, 408 or 429).
pub(super) type Answered = bool;

/// What the worker does with a claimed delivery to a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Post it now.
    Start,
    /// Every concurrent delivery the host is allowed is in flight: hand it back for this long.
    Busy(Duration),
    /// The host keeps failing: hand it back until the host is tried again, this long from now.
    BackingOff(Duration),
}

/// One destination host, as the worker sees it.
#[derive(Debug, Default)]
pub(super) struct Host {
    /// When each attempt in flight started.
    in_flight: Vec<Instant>,
    /// Consecutive attempts the host did not answer (see [`Answered`]).
    failures: u32,
    /// Back-offs in a row without an answer in between.
    trips: u32,
    /// While in the future, nothing is posted to the host; after it, one attempt at a time
    /// until one is answered.
    backing_off_until: Option<Instant>,
    /// A moving average of how long the host takes, answered or not.
    latency: Duration,
}

impl Host {
    pub(super) fn verdict(&self, now: Instant, settings: &Settings) -> Verdict {
        if let Some(until) = self.backing_off_until
            && until > now
        {
            return Verdict::BackingOff(until - now);
        }
        let allowed = if self.failures >= HOST_FAILURES {
            1
        } else {
            settings.host_concurrency
        };
        if self.in_flight.len() < allowed {
            return Verdict::Start;
        }
        // A slot frees up when the oldest attempt ends: look again after about as long as
        // it has taken so far (or as the host usually takes), within the attempt timeout.
        let oldest = self
            .in_flight
            .iter()
            .map(|started| now.saturating_duration_since(*started))
            .max()
            .unwrap_or_default();
        Verdict::Busy(
            oldest
                .max(self.latency)
                .clamp(BUSY_MIN, settings.timeout.max(BUSY_MIN)),
        )
    }

    pub(super) fn started(&mut self, now: Instant) {
        self.in_flight.push(now);
    }

    /// The attempt that started at `started` ended at `now`: `answered` is `None` when it
    /// never reached the network (a refused URL, a removed webhook).
    pub(super) fn finished(
        &mut self,
        started: Instant,
        now: Instant,
        answered: Option<Answered>,
        settings: &Settings,
    ) {
        if let Some(i) = self.in_flight.iter().position(|t| *t == started) {
            self.in_flight.swap_remove(i);
        }
        let Some(answered) = answered else { return };
        let took = now.saturating_duration_since(started);
        self.latency = (self.latency * 3 + took) / 4;
        if answered {
            self.failures = 0;
            self.trips = 0;
            self.backing_off_until = None;
            return;
        }
        self.failures = self.failures.saturating_add(1);
        let backing_off = self.backing_off_until.is_some_and(|until| until > now);
        if self.failures >= HOST_FAILURES && !backing_off {
            self.trips = self.trips.saturating_add(1);
            self.backing_off_until = Some(now + settings.backoff(self.trips, unit_random()));
        }
    }

    /// Nothing worth remembering: no attempt in flight and no failure.
    pub(super) fn idle(&self) -> bool {
        self.in_flight.is_empty() && self.failures == 0
    }
}

/// Hosts remembered beyond which the quiet ones are forgotten.
const HOSTS_KEPT: usize = 4096;

/// Forgets, once many hosts are remembered, those with nothing in flight and no back-off in
/// force for a while: what is left of them is a failure count or two.
pub(super) fn forget_quiet_hosts(hosts: &Mutex<HashMap<String, Host>>, settings: &Settings) {
    let mut table = hosts.lock().unwrap_or_else(PoisonError::into_inner);
    if table.len() > HOSTS_KEPT {
        let now = Instant::now();
        table.retain(|_, host| {
            !host.in_flight.is_empty()
                || host
                    .backing_off_until
                    .is_some_and(|until| until + settings.retry_max > now)
        });
    }
}

/// The host a delivery goes to, for its bound and back-off: the URL's host name or address,
/// whatever the port. `None` for a URL that cannot be parsed (its attempt never connects).
pub(super) fn host_of(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    Some(parsed.host_str()?.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhooks::tests::settings;

    #[test]
    fn a_host_takes_its_bound_then_is_busy_for_about_as_long_as_its_attempts_take() {
        let s = settings();
        let t0 = Instant::now();
        let mut host = Host::default();
        for _ in 0..s.host_concurrency {
            assert_eq!(host.verdict(t0, &s), Verdict::Start);
            host.started(t0);
        }
        assert_eq!(host.verdict(t0, &s), Verdict::Busy(BUSY_MIN));
        // The longer the attempts in flight have run, the longer the wait; never past the
        // timeout.
        let later = t0 + Duration::from_millis(400);
        assert_eq!(
            host.verdict(later, &s),
            Verdict::Busy(Duration::from_millis(400))
        );
        assert_eq!(
            host.verdict(t0 + Duration::from_secs(60), &s),
            Verdict::Busy(s.timeout)
        );
        host.finished(t0, later, Some(true), &s);
        assert_eq!(host.verdict(later, &s), Verdict::Start);
        assert!(!host.idle());
        host.finished(t0, later, Some(true), &s);
        assert!(host.idle());
    }

    #[test]
    fn a_failing_host_backs_off_then_takes_one_attempt_until_it_answers() {
        let s = settings();
        let t0 = Instant::now();
        let mut host = Host::default();
        let mut now = t0;
        // Failures below the threshold change nothing; an answer resets the count.
        for _ in 0..HOST_FAILURES - 1 {
            host.started(now);
            host.finished(now, now, Some(false), &s);
        }
        host.started(now);
        host.finished(now, now, Some(true), &s);
        assert_eq!(host.failures, 0);
        // An attempt that never reached the network says nothing about the host.
        host.started(now);
        host.finished(now, now, None, &s);
        assert_eq!((host.failures, host.in_flight.len()), (0, 0));
        for _ in 0..HOST_FAILURES {
            host.started(now);
            host.finished(now, now, Some(false), &s);
        }
        let Verdict::BackingOff(wait) = host.verdict(now, &s) else {
            panic!("{:?}", host.verdict(now, &s))
        };
        assert!(
            wait <= s.backoff(1, 0.0) && wait >= s.backoff(1, 0.999),
            "{wait:?}"
        );
        // Another failure of an attempt already in flight does not lengthen the back-off.
        host.started(now);
        host.finished(now, now, Some(false), &s);
        assert_eq!(host.verdict(now, &s), Verdict::BackingOff(wait));
        // After it: one attempt at a time.
        now += wait;
        assert_eq!(host.verdict(now, &s), Verdict::Start);
        host.started(now);
        assert!(matches!(host.verdict(now, &s), Verdict::Busy(_)));
        // It fails: a longer back-off.
        host.finished(now, now, Some(false), &s);
        let Verdict::BackingOff(second) = host.verdict(now, &s) else {
            panic!("{:?}", host.verdict(now, &s))
        };
        assert!(second >= s.backoff(2, 0.999), "{second:?}");
        // The next one is answered: the host is back to its full bound.
        now += second;
        host.started(now);
        host.finished(now, now, Some(true), &s);
        for _ in 0..s.host_concurrency {
            assert_eq!(host.verdict(now, &s), Verdict::Start);
            host.started(now);
        }
        assert!(matches!(host.verdict(now, &s), Verdict::Busy(_)));
    }

    #[test]
    fn hosts_are_told_apart_by_name_not_port_or_case() {
        assert_eq!(
            host_of("http://Hooks.Example:8080/a").as_deref(),
            Some("hooks.example")
        );
        assert_eq!(
            host_of("https://hooks.example/b"),
            host_of("http://HOOKS.example:1/c")
        );
        assert_ne!(host_of("http://127.0.0.2/x"), host_of("http://127.0.0.3/x"));
        assert_eq!(host_of("not a url"), None);
    }
}
