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

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, Utc};
use hmac::{Hmac, Mac};
use missive_store::{
    Attempt, Delivery, DeliveryKey, MatchId, Notification, NotificationKind, Reminder, Store,
};
use serde::Serialize;
use sha2::Sha256;
use tokio::sync::{Notify, Semaphore, watch};
use tokio::task::JoinSet;

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

/// Checks a webhook URL: absolute `http` or `https` (the latter in a build with the default
/// `webhook-tls` feature) with a host, no credentials, no fragment, at most [`MAX_URL`] bytes and, unless
/// `allow_private`, no host that is a non-public address or `localhost`.
pub fn validate_url(url: &str, allow_private: bool) -> Result<(), String> {
    if url.len() > MAX_URL {
        return Err(format!("url is longer than {MAX_URL} bytes"));
    }
    let parsed =
        reqwest::Url::parse(url).map_err(|e| format!("url {url:?} is not an absolute URL: {e}"))?;
    match parsed.scheme() {
        "http" => {}
        "https" if cfg!(feature = "webhook-tls") => {}
        "https" => {
            return Err(
                "this server was built without TLS for webhooks (feature webhook-tls): \
                 use an http:// url"
                    .into(),
            );
        }
        other => return Err(format!("url must be http:// or https://, not {other}:")),
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("url has no host".into());
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("url must not carry credentials".into());
    }
    if parsed.fragment().is_some() {
        return Err("url must not have a fragment".into());
    }
    if !allow_private {
        // The parser has normalised IP hosts (`2130706433` is `127.0.0.1`; IPv6 in brackets).
        let host = parsed.host_str().unwrap_or_default();
        let private = match host.trim_start_matches('[').trim_end_matches(']').parse() {
            Ok(ip) => !is_public(ip),
            Err(_) => {
                let name = host.trim_end_matches('.').to_ascii_lowercase();
                name == "localhost" || name.ends_with(".localhost")
            }
        };
        if private {
            return Err(
                "url must name a public host: loopback, private and link-local addresses \
                 are refused on this server (MISSIVE_WEBHOOK_ALLOW_PRIVATE)"
                    .into(),
            );
        }
    }
    Ok(())
}

/// Whether `ip` is a globally routable unicast address: not loopback, private, link-local,
/// shared (CGNAT), unspecified, broadcast, multicast, documentation, benchmarking or reserved;
/// an IPv4-mapped or -compatible IPv6 address is judged as its IPv4 address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4() {
            Some(v4) if v6.segments()[..5] == [0; 5] => is_public_v4(v4),
            _ => is_public_v6(v6),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (18..20).contains(&b))
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)
        || (first == 0x0064 && ip.segments()[1] == 0xff9b))
}

/// A resolver that keeps only public addresses (see [`is_public`]); a name with none left is
/// an error, so the connection is never attempted.
#[derive(Debug, Default)]
pub struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let all: Vec<_> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<_> = all.into_iter().filter(|a| is_public(a.ip())).collect();
            if public.is_empty() {
                return Err(format!("{host} resolves to no public address").into());
            }
            Ok(Box::new(public.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The [`DELIVERY_HEADER`] of a notification: one id per outbox row, the same on every attempt.
pub fn delivery_id(key: &DeliveryKey) -> String {
    let id = format!("{}/{}/{}", key.match_id, key.seq, key.seat);
    match key.kind {
        NotificationKind::YourTurn => id,
        kind => format!("{id}/{}", kind.as_str()),
    }
}

/// The payload posted to a seat's webhook when the event `seq` makes it awaited. It carries no
/// game state: the receiver fetches the seat's view with the seat's token.
pub fn your_turn_body(match_id: MatchId, seq: u64, seat: u8, at: DateTime<Utc>) -> String {
    Body {
        at: &at.to_rfc3339_opts(SecondsFormat::Micros, true),
        due_at: None,
        match_id: &match_id.to_string(),
        seat,
        kind: NotificationKind::YourTurn.as_str(),
        version: seq,
    }
    .encode()
}

/// The payload posted to a seat's webhook at `remind_at`, ahead of its deadline `due_at`, while
/// it is awaited after event `seq` (the version to act on). Like [`your_turn_body`], it carries
/// no game state.
pub fn turn_reminder_body(r: &Reminder) -> String {
    Body {
        at: &r.remind_at.to_rfc3339_opts(SecondsFormat::Micros, true),
        due_at: Some(&r.due_at.to_rfc3339_opts(SecondsFormat::Micros, true)),
        match_id: &r.match_id.to_string(),
        seat: r.seat,
        kind: NotificationKind::TurnReminder.as_str(),
        version: r.seq,
    }
    .encode()
}

/// A notification's payload, its fields in the byte order of their keys (the order the bodies
/// have always been sent in).
#[derive(Serialize)]
struct Body<'a> {
    at: &'a str,
    #[serde(rename = "dueAt", skip_serializing_if = "Option::is_none")]
    due_at: Option<&'a str>,
    #[serde(rename = "matchId")]
    match_id: &'a str,
    seat: u8,
    #[serde(rename = "type")]
    kind: &'a str,
    version: u64,
}

impl Body<'_> {
    fn encode(&self) -> String {
        // Strings and integers always serialise.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The "your turn" notifications of `seats`, newly awaited after the event `seq` appended at
/// `at`, for [`missive_store::MatchUpdate::notify`].
pub fn your_turn(
    match_id: MatchId,
    seq: u64,
    at: DateTime<Utc>,
    seats: impl IntoIterator<Item = u8>,
) -> Vec<Notification> {
    // The store keeps the event's time to the microsecond; the body says what it keeps.
    let at = missive_store::truncate_to_micros(at);
    seats
        .into_iter()
        .map(|seat| Notification {
            seat,
            body: your_turn_body(match_id, seq, seat, at),
        })
        .collect()
}

/// The signature header's value for `body` sent at `timestamp` (unix seconds).
pub fn sign(secret: &[u8; 32], timestamp: i64, body: &str) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key size");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
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

/// How a host fared in one attempt, for its back-off: it answered (2xx, or a 4xx that is about
/// the request), or it did not (no connection, no answer in time, 5xx, 408 or 429).
type Answered = bool;

/// What the worker does with a claimed delivery to a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Post it now.
    Start,
    /// Every concurrent delivery the host is allowed is in flight: hand it back for this long.
    Busy(Duration),
    /// The host keeps failing: hand it back until the host is tried again, this long from now.
    BackingOff(Duration),
}

/// One destination host, as the worker sees it.
#[derive(Debug, Default)]
struct Host {
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
    fn verdict(&self, now: Instant, settings: &Settings) -> Verdict {
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

    fn started(&mut self, now: Instant) {
        self.in_flight.push(now);
    }

    /// The attempt that started at `started` ended at `now`: `answered` is `None` when it
    /// never reached the network (a refused URL, a removed webhook).
    fn finished(
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
    fn idle(&self) -> bool {
        self.in_flight.is_empty() && self.failures == 0
    }
}

/// Hosts remembered beyond which the quiet ones are forgotten.
const HOSTS_KEPT: usize = 4096;

/// Forgets, once many hosts are remembered, those with nothing in flight and no back-off in
/// force for a while: what is left of them is a failure count or two.
fn forget_quiet_hosts(hosts: &Mutex<HashMap<String, Host>>, settings: &Settings) {
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
fn host_of(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    Some(parsed.host_str()?.to_ascii_lowercase())
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

    fn settings() -> Settings {
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

    #[test]
    fn bodies_are_these_exact_bytes() {
        let id: MatchId = "0b9e6c1e-5a4f-4d2b-9c3e-7f1a2b3c4d5e"
            .parse()
            .expect("uuid");
        let at = DateTime::parse_from_rfc3339("2026-01-02T03:04:05.678901234Z")
            .expect("time")
            .with_timezone(&Utc);
        let due_at = at + chrono::Duration::seconds(30);
        assert_eq!(
            your_turn_body(id, 7, 1, at),
            r#"{"at":"2026-01-02T03:04:05.678901Z","matchId":"0b9e6c1e-5a4f-4d2b-9c3e-7f1a2b3c4d5e","seat":1,"type":"your_turn","version":7}"#
        );
        assert_eq!(
            your_turn(id, 7, at, [1]),
            [Notification {
                seat: 1,
                body: your_turn_body(id, 7, 1, at)
            }]
        );
        let reminder = Reminder {
            match_id: id,
            seq: 7,
            seat: 2,
            due_at,
            remind_at: at,
        };
        assert_eq!(
            turn_reminder_body(&reminder),
            r#"{"at":"2026-01-02T03:04:05.678901Z","dueAt":"2026-01-02T03:04:35.678901Z","matchId":"0b9e6c1e-5a4f-4d2b-9c3e-7f1a2b3c4d5e","seat":2,"type":"turn_reminder","version":7}"#
        );
    }

    #[test]
    fn signatures_cover_the_timestamp_and_the_body() {
        let secret = [7u8; 32];
        let sig = sign(&secret, 1_700_000_000, r#"{"a":1}"#);
        assert!(sig.starts_with("sha256="));
        assert_eq!(sig.len(), "sha256=".len() + 64);
        assert_ne!(sig, sign(&secret, 1_700_000_001, r#"{"a":1}"#));
        assert_ne!(sig, sign(&secret, 1_700_000_000, r#"{"a":2}"#));
        assert_ne!(sig, sign(&[8u8; 32], 1_700_000_000, r#"{"a":1}"#));
        // Computed independently (Python's hmac module) for this key and message.
        assert_eq!(
            sig,
            "sha256=fa499c40baa09b566dfde0859145f8950e319e3b0f33a29fa072f3fa436334b1"
        );
    }

    #[test]
    fn only_absolute_http_urls_without_credentials_are_accepted() {
        for good in [
            "http://game.example/hooks/turn",
            "http://203.0.113.9.nip.example:8080/x?y=1",
            "http://8.8.8.8/x",
            "http://[2606:4700::1111]/x",
        ] {
            assert_eq!(validate_url(good, false), Ok(()), "{good}");
        }
        assert_eq!(
            validate_url("https://game.example/hooks/turn", false).is_ok(),
            cfg!(feature = "webhook-tls")
        );
        let long = format!("http://a.example/{}", "x".repeat(MAX_URL));
        for bad in [
            "",
            "/relative",
            "ftp://a.example/",
            "file:///etc/passwd",
            "http://user:pw@a.example/",
            "http://a.example/#frag",
            "not a url",
            long.as_str(),
        ] {
            assert!(validate_url(bad, true).is_err(), "{bad}");
        }
    }

    #[test]
    fn urls_inside_the_servers_network_are_refused_unless_allowed() {
        for inside in [
            "http://127.0.0.1:8080/x",
            "http://localhost/x",
            "http://LOCALHOST./x",
            "http://db.localhost/x",
            "http://10.1.2.3/x",
            "http://172.16.0.1/x",
            "http://192.168.1.1/x",
            "http://169.254.169.254/latest/meta-data",
            "http://100.64.0.1/x",
            "http://0.0.0.0/x",
            "http://[::1]/x",
            "http://[fd00::1]/x",
            "http://[fe80::1]/x",
            "http://[::ffff:127.0.0.1]/x",
            "http://2130706433/x",
        ] {
            let refused = validate_url(inside, false).expect_err(inside);
            assert!(refused.contains("public host"), "{inside}: {refused}");
            assert_eq!(validate_url(inside, true), Ok(()), "{inside}");
        }
    }

    #[test]
    fn public_means_globally_routable() {
        for (ip, public) in [
            ("8.8.8.8", true),
            ("203.0.112.1", true),
            ("127.0.0.1", false),
            ("10.0.0.1", false),
            ("172.31.255.255", false),
            ("172.32.0.1", true),
            ("192.168.0.1", false),
            ("169.254.1.1", false),
            ("100.64.0.1", false),
            ("100.128.0.1", true),
            ("192.0.0.8", false),
            ("192.0.2.1", false),
            ("198.18.0.1", false),
            ("224.0.0.1", false),
            ("240.0.0.1", false),
            ("255.255.255.255", false),
            ("2606:4700::1111", true),
            ("::1", false),
            ("::", false),
            ("fc00::1", false),
            ("fe80::1", false),
            ("ff02::1", false),
            ("2001:db8::1", false),
            ("64:ff9b::a00:1", false),
            ("::ffff:10.0.0.1", false),
            ("::ffff:8.8.8.8", true),
        ] {
            let ip: IpAddr = ip.parse().expect(ip);
            assert_eq!(is_public(ip), public, "{ip}");
        }
    }

    #[tokio::test]
    async fn the_resolver_drops_addresses_inside_the_network() {
        use reqwest::dns::Resolve;
        let name: reqwest::dns::Name = "localhost".parse().expect("a name");
        let refused = match PublicOnly.resolve(name).await {
            Ok(addrs) => panic!("localhost resolved to {:?}", addrs.collect::<Vec<_>>()),
            Err(e) => e.to_string(),
        };
        assert!(refused.contains("no public address"), "{refused}");
    }
}
