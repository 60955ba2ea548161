//! "Your turn" webhooks: URL validation, payload signing and the delivery worker.
//!
//! Notifications are queued by the store in the same statement as the event that makes a seat
//! awaited (see `missive_store`'s outbox), and reminders before a deadline by the turn worker
//! (`turns.rs`). One worker runs per server: it claims due rows
//! under a lease (so any number of replicas share the queue without delivering a row twice at
//! the same time), POSTs each body signed with the seat's secret, and records the outcome:
//! 2xx is delivered; anything else is retried after an exponential back-off with jitter, up to
//! [`Settings::max_attempts`]. A server that dies mid-delivery leaves the row leased; it is
//! claimed again once the lease runs out, so delivery is at least once and receivers should
//! deduplicate by the `x-missive-delivery` header.
//!
//! Attempts run concurrently, bounded in all and per destination host, and a host that stops
//! answering backs off on its own (see [`run`]): a receiver that never answers delays its own
//! notifications, not everybody else's.
//!
//! Unless [`Settings::allow_private`] is set, webhooks only reach public addresses: a URL naming
//! a loopback, private, link-local or otherwise non-global address (or `localhost`) is refused
//! when registered and when delivered, and host names are resolved by [`PublicOnly`], which
//! drops every non-public address, so a name that resolves (or later re-resolves) to one inside
//! the server's network is never connected to.

mod address;
mod body;
mod host;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use chrono::Utc;
use missive_store::{Attempt, Delivery, DeliveryKey, Store};
use tokio::sync::{Notify, Semaphore, watch};
use tokio::task::JoinSet;

pub use address::{PublicOnly, is_public, validate_url};
pub use body::{delivery_id, sign, turn_reminder_body, your_turn, your_turn_body};
use host::{Answered, Host, Verdict, forget_quiet_hosts, host_of};

/// `<unix seconds>` of the attempt, covered by the signature.
pub const TIMESTAMP_HEADER: &str = "x-missive-timestamp";
/// `sha256=<hex HMAC-SHA256(secret, timestamp "." body)>`.
pub const SIGNATURE_HEADER: &str = "x-missive-signature";
/// `<match id>/<version>/<seat>`, and `/turn_reminder` after it for a reminder: the same on
/// every attempt at one notification (see [`delivery_id`]).
pub const DELIVERY_HEADER: &str = "x-missive-delivery";
/// The longest webhook URL accepted, in bytes.
pub const MAX_URL: usize = 2048;
/// Notifications claimed at most at once.
const BATCH: usize = 64;
/// Attempts in a row a host does not answer (see [`Answered`]) before it backs off.
pub const HOST_FAILURES: u32 = 3;
/// The shortest a delivery to a busy host is handed back for.
const BUSY_MIN: Duration = Duration::from_millis(50);
/// Longest error text kept in the record.
const MAX_ERROR: usize = 500;

/// The delivery worker's tuning; see the `webhook_*` settings in [`crate::Config`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The wait before the first retry.
    pub retry_base: Duration,
    /// The longest wait between two attempts.
    pub retry_max: Duration,
    /// Attempts before a notification is given up.
    pub max_attempts: u32,
    /// How often to look for due notifications when not woken.
    pub poll: Duration,
    /// How long a receiver has to answer.
    pub timeout: Duration,
    /// Whether webhooks may reach loopback, private and other non-public addresses (for
    /// receivers inside the operator's own network, and for tests).
    pub allow_private: bool,
    /// Attempts in flight at once, all hosts together.
    pub concurrency: usize,
    /// Attempts in flight at once to one host.
    pub host_concurrency: usize,
}

impl Settings {
    /// How long a claim lasts: longer than any attempt can take.
    fn lease(&self) -> Duration {
        self.timeout * 2 + Duration::from_secs(30)
    }

    /// The wait after the `attempts`-th failed attempt: `retry_base · 2^(attempts-1)`, less up
    /// to a quarter of it as `unit` (in `[0, 1)`) goes from 0 to 1, capped at `retry_max`. The
    /// jitter spreads retries out without letting a later wait be shorter than an earlier one
    /// (capping after the jitter keeps that true at the cap too).
    pub fn backoff(&self, attempts: u32, unit: f64) -> Duration {
        let doublings = attempts.saturating_sub(1).min(31);
        let full = self.retry_base.saturating_mul(1u32 << doublings);
        full.mul_f64(1.0 - 0.25 * unit.clamp(0.0, 1.0))
            .min(self.retry_max)
    }
}

/// The delivery worker's settings, from the server's configuration.
impl From<&crate::config::Webhooks> for Settings {
    fn from(config: &crate::config::Webhooks) -> Self {
        Settings {
            retry_base: Duration::from_millis(config.webhook_retry_base_ms.max(1)),
            retry_max: Duration::from_secs(config.webhook_retry_max_secs.max(1)),
            max_attempts: config.webhook_max_attempts.max(1),
            poll: Duration::from_millis(config.webhook_poll_ms.max(10)),
            timeout: Duration::from_secs(config.webhook_timeout_secs.max(1)),
            allow_private: config.webhook_allow_private,
            concurrency: config.webhook_concurrency.max(1),
            host_concurrency: config
                .webhook_host_concurrency
                .clamp(1, config.webhook_concurrency.max(1)),
        }
    }
}

/// A number in `[0, 1)` from the OS generator, for jitter (0 if it fails).
fn unit_random() -> f64 {
    let mut bytes = [0u8; 4];
    match getrandom::fill(&mut bytes) {
        Ok(()) => f64::from(u32::from_le_bytes(bytes)) / (f64::from(u32::MAX) + 1.0),
        Err(_) => 0.0,
    }
}

fn truncate(mut text: String) -> String {
    if text.len() > MAX_ERROR {
        let mut end = MAX_ERROR;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// Runs the delivery worker until `stop` turns true. `wake` cuts the wait between polls short.
///
/// Attempts run concurrently, up to [`Settings::concurrency`] in all and
/// [`Settings::host_concurrency`] per host. A host that fails [`HOST_FAILURES`] attempts in a
/// row backs off (for [`Settings::backoff`] of its back-offs in a row) and is then tried one
/// attempt at a time until it answers. A claimed delivery that cannot start at once, its host
/// busy or backing off, is handed back to the outbox unattempted, due again when the host may
/// take it ([`Store::defer_deliveries`]): it is never held past its lease, so a slow or dead
/// host delays only its own deliveries.
pub async fn run(
    store: Store,
    settings: Settings,
    wake: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
) {
    let mut builder = reqwest::Client::builder()
        .timeout(settings.timeout)
        .connect_timeout(settings.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(settings.host_concurrency)
        .user_agent(concat!("missive-webhooks/", env!("CARGO_PKG_VERSION")));
    if !settings.allow_private {
        // A proxy would resolve the name itself, past the filter.
        builder = builder.dns_resolver(Arc::new(PublicOnly)).no_proxy();
    }
    let client = match builder.build() {
        Ok(client) => client,
        Err(e) => {
            tracing::error!(error = %e, "webhook delivery disabled: no HTTP client");
            return;
        }
    };
    let settings = Arc::new(settings);
    let lease = settings.lease();
    let slots = Arc::new(Semaphore::new(settings.concurrency.max(1)));
    let hosts: Arc<Mutex<HashMap<String, Host>>> = Arc::default();
    let finished = Arc::new(Notify::new());
    // Dropped on return: attempts cut short stay leased and are retried when the lease runs out.
    let mut attempts = JoinSet::new();
    // When the earliest delivery handed back falls due again.
    let mut recheck: Option<Instant> = None;
    loop {
        if *stop.borrow() {
            return;
        }
        while attempts.try_join_next().is_some() {}
        let free = slots.available_permits().min(BATCH);
        if free == 0 {
            tokio::select! {
                () = finished.notified() => {}
                _ = stop.wait_for(|stop| *stop) => return,
            }
            continue;
        }
        if recheck.is_some_and(|at| at <= Instant::now()) {
            recheck = None;
        }
        forget_quiet_hosts(&hosts, &settings);
        let now = Utc::now();
        let lease_until = now + lease;
        let claimed = match store.claim_deliveries(now, lease_until, free as u32).await {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::warn!(error = %e, "webhook outbox unavailable");
                Vec::new()
            }
        };
        let full = claimed.len() == free;
        // Deliveries handed back, by host: their keys, how long until due, and why.
        let mut deferred: HashMap<String, (Vec<DeliveryKey>, Duration, &'static str)> =
            HashMap::new();
        for delivery in claimed {
            let host = host_of(&delivery.url);
            let started = Instant::now();
            // Only this loop takes slots, and it claimed no more than were free: a slot is
            // there (were it not, the delivery would be handed back like a busy host's).
            let permit = slots.clone().try_acquire_owned().ok();
            let verdict = match (&host, &permit) {
                (_, None) => Verdict::Busy(BUSY_MIN),
                (None, Some(_)) => Verdict::Start,
                (Some(host), Some(_)) => {
                    let mut table = hosts.lock().unwrap_or_else(PoisonError::into_inner);
                    let state = table.entry(host.clone()).or_default();
                    let verdict = state.verdict(started, &settings);
                    if verdict == Verdict::Start {
                        state.started(started);
                    }
                    verdict
                }
            };
            let (wait, reason) = match verdict {
                Verdict::Start => (Duration::ZERO, ""),
                Verdict::Busy(wait) => (wait, "busy"),
                Verdict::BackingOff(wait) => (wait, "backing_off"),
            };
            let Some(permit) = permit.filter(|_| verdict == Verdict::Start) else {
                deferred
                    .entry(host.unwrap_or_default())
                    .or_insert_with(|| (Vec::new(), wait, reason))
                    .0
                    .push(delivery.key);
                continue;
            };
            let (store, client, settings) = (store.clone(), client.clone(), settings.clone());
            let (hosts, finished) = (hosts.clone(), finished.clone());
            attempts.spawn(async move {
                let answered = deliver(&store, &client, &settings, delivery).await;
                if let Some(host) = host {
                    let mut table = hosts.lock().unwrap_or_else(PoisonError::into_inner);
                    if let Some(state) = table.get_mut(&host) {
                        state.finished(started, Instant::now(), answered, &settings);
                        if state.idle() {
                            table.remove(&host);
                        }
                    }
                }
                drop(permit);
                finished.notify_one();
            });
        }
        for (host, (keys, wait, reason)) in deferred {
            let due = Instant::now() + wait;
            recheck = Some(recheck.map_or(due, |at| at.min(due)));
            crate::metrics::record_deferrals(reason, keys.len());
            let due_at = Utc::now() + wait;
            if let Err(e) = store.defer_deliveries(&keys, lease_until, due_at).await {
                // They stay leased, and are claimed again once the lease runs out.
                tracing::warn!(host, error = %e, "webhook deliveries not handed back");
            }
        }
        if full {
            continue;
        }
        let sleep = recheck.map_or(settings.poll, |at| {
            at.saturating_duration_since(Instant::now())
                .min(settings.poll)
        });
        tokio::select! {
            () = wake.notified() => {}
            () = tokio::time::sleep(sleep) => {}
            _ = stop.wait_for(|stop| *stop) => return,
        }
    }
}

/// One attempt at one notification, and its record; whether its host answered (`None` when
/// it was not posted).
async fn deliver(
    store: &Store,
    client: &reqwest::Client,
    settings: &Settings,
    d: Delivery,
) -> Option<Answered> {
    let attempts = d.attempts.saturating_add(1);
    let failed = |status: Option<u16>, error: String| Attempt::Failed {
        status,
        error: truncate(error),
        retry_at: (attempts < settings.max_attempts)
            .then(|| Utc::now() + settings.backoff(attempts, unit_random())),
    };
    let mut answered = None;
    let attempt = match (d.secret, validate_url(&d.url, settings.allow_private)) {
        (None, _) => Attempt::Failed {
            status: None,
            error: missive_store::REMOVED.into(),
            retry_at: None,
        },
        // Registered before the server refused such URLs: it never will be deliverable.
        (Some(_), Err(refused)) => Attempt::Failed {
            status: None,
            error: truncate(refused),
            retry_at: None,
        },
        (Some(secret), Ok(())) => {
            let timestamp = Utc::now().timestamp();
            let sent = client
                .post(&d.url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(TIMESTAMP_HEADER, timestamp.to_string())
                .header(SIGNATURE_HEADER, sign(&secret, timestamp, &d.body))
                .header(DELIVERY_HEADER, delivery_id(&d.key))
                .body(d.body.clone())
                .send()
                .await;
            match sent {
                Ok(response) if response.status().is_success() => {
                    answered = Some(true);
                    Attempt::Delivered {
                        status: response.status().as_u16(),
                    }
                }
                Ok(response) => {
                    let status = response.status();
                    answered = Some(
                        !(status.is_server_error()
                            || status == reqwest::StatusCode::REQUEST_TIMEOUT
                            || status == reqwest::StatusCode::TOO_MANY_REQUESTS),
                    );
                    failed(Some(status.as_u16()), format!("HTTP {status}"))
                }
                Err(e) => {
                    answered = Some(false);
                    failed(None, error_chain(&e))
                }
            }
        }
    };
    crate::metrics::record_delivery(match &attempt {
        Attempt::Delivered { .. } => "delivered",
        Attempt::Failed { retry_at: None, .. } => "given_up",
        Attempt::Failed { .. } => "failed",
    });
    match &attempt {
        Attempt::Delivered { .. } => {
            tracing::debug!(match_id = %d.key.match_id, seq = d.key.seq, seat = d.key.seat, "webhook delivered");
        }
        Attempt::Failed {
            error, retry_at, ..
        } => {
            tracing::info!(
                match_id = %d.key.match_id, seq = d.key.seq, seat = d.key.seat, attempts,
                error = %error, given_up = retry_at.is_none(), "webhook delivery failed"
            );
        }
    }
    if let Err(e) = store.record_delivery(d.key, &attempt, Utc::now()).await {
        // The row stays leased and is attempted again once the lease runs out.
        tracing::warn!(match_id = %d.key.match_id, error = %e, "webhook delivery not recorded");
    }
    answered
}

/// The error and its causes on one line (reqwest's own message is only the outermost).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn settings() -> Settings {
        Settings {
            retry_base: Duration::from_millis(100),
            retry_max: Duration::from_secs(2),
            max_attempts: 5,
            poll: Duration::from_millis(50),
            timeout: Duration::from_secs(1),
            allow_private: false,
            concurrency: 16,
            host_concurrency: 2,
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_below_and_stops_at_the_cap() {
        let s = settings();
        assert_eq!(s.backoff(1, 0.0), Duration::from_millis(100));
        assert_eq!(s.backoff(2, 0.0), Duration::from_millis(200));
        assert_eq!(s.backoff(3, 0.0), Duration::from_millis(400));
        assert_eq!(s.backoff(3, 1.0), Duration::from_millis(300));
        assert_eq!(s.backoff(10, 0.0), Duration::from_secs(2));
        assert_eq!(s.backoff(u32::MAX, 0.0), Duration::from_secs(2));
        // The shortest wait after n+1 failures is never below the longest after n.
        for n in 1..8 {
            assert!(s.backoff(n + 1, 0.999) >= s.backoff(n, 0.0), "{n}");
        }
    }
}
