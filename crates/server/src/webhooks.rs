//! "Your turn" webhooks: URL validation, payload signing and the delivery worker.
//!
//! Notifications are queued by the store in the same statement as the event that makes a seat
//! awaited (see `missive_store`'s outbox). One worker runs per server: it claims due rows
//! under a lease (so any number of replicas share the queue without delivering a row twice at
//! the same time), POSTs each body signed with the seat's secret, and records the outcome:
//! 2xx is delivered; anything else is retried after an exponential back-off with jitter, up to
//! [`Settings::max_attempts`]. A server that dies mid-delivery leaves the row leased; it is
//! claimed again once the lease runs out, so delivery is at least once and receivers should
//! deduplicate by the `x-missive-delivery` header.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use hmac::{Hmac, Mac};
use missive_store::{Attempt, Delivery, Store};
use sha2::Sha256;
use tokio::sync::{Notify, watch};

/// `<unix seconds>` of the attempt, covered by the signature.
pub const TIMESTAMP_HEADER: &str = "x-missive-timestamp";
/// `sha256=<hex HMAC-SHA256(secret, timestamp "." body)>`.
pub const SIGNATURE_HEADER: &str = "x-missive-signature";
/// `<match id>/<version>/<seat>`: the same on every attempt at one notification.
pub const DELIVERY_HEADER: &str = "x-missive-delivery";
/// The longest webhook URL accepted, in bytes.
pub const MAX_URL: usize = 2048;
/// Notifications claimed at once; they are posted concurrently.
const BATCH: u32 = 32;
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

/// Checks a webhook URL: absolute `http` (or `https`, in a build with the `webhook-tls`
/// feature) with a host, no credentials, no fragment,
/// at most [`MAX_URL`] bytes.
pub fn validate_url(url: &str) -> Result<(), String> {
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
    Ok(())
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

/// Runs the delivery worker until `stop` turns true. `wake` cuts the wait between polls short.
pub async fn run(
    store: Store,
    settings: Settings,
    wake: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
) {
    let client = match reqwest::Client::builder()
        .timeout(settings.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("missive-webhooks/", env!("CARGO_PKG_VERSION")))
        .build()
    {
        Ok(client) => client,
        Err(e) => {
            tracing::error!(error = %e, "webhook delivery disabled: no HTTP client");
            return;
        }
    };
    let lease = settings.lease();
    loop {
        if *stop.borrow() {
            return;
        }
        let now = Utc::now();
        let claimed = match store.claim_deliveries(now, now + lease, BATCH).await {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::warn!(error = %e, "webhook outbox unavailable");
                Vec::new()
            }
        };
        let full = claimed.len() == BATCH as usize;
        if !claimed.is_empty() {
            let deliveries = futures::future::join_all(
                claimed
                    .into_iter()
                    .map(|delivery| deliver(&store, &client, &settings, delivery)),
            );
            tokio::select! {
                _ = deliveries => {}
                // Unfinished attempts stay leased and are retried when the lease runs out.
                _ = stop.wait_for(|stop| *stop) => return,
            }
        }
        if full {
            continue;
        }
        tokio::select! {
            () = wake.notified() => {}
            () = tokio::time::sleep(settings.poll) => {}
            _ = stop.wait_for(|stop| *stop) => return,
        }
    }
}

/// One attempt at one notification, and its record.
async fn deliver(store: &Store, client: &reqwest::Client, settings: &Settings, d: Delivery) {
    let attempts = d.attempts.saturating_add(1);
    let failed = |status: Option<u16>, error: String| Attempt::Failed {
        status,
        error: truncate(error),
        retry_at: (attempts < settings.max_attempts)
            .then(|| Utc::now() + settings.backoff(attempts, unit_random())),
    };
    let attempt = match d.secret {
        None => Attempt::Failed {
            status: None,
            error: missive_store::REMOVED.into(),
            retry_at: None,
        },
        Some(secret) => {
            let timestamp = Utc::now().timestamp();
            let sent = client
                .post(&d.url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(TIMESTAMP_HEADER, timestamp.to_string())
                .header(SIGNATURE_HEADER, sign(&secret, timestamp, &d.body))
                .header(
                    DELIVERY_HEADER,
                    format!("{}/{}/{}", d.key.match_id, d.key.seq, d.key.seat),
                )
                .body(d.body.clone())
                .send()
                .await;
            match sent {
                Ok(response) if response.status().is_success() => Attempt::Delivered {
                    status: response.status().as_u16(),
                },
                Ok(response) => {
                    let status = response.status();
                    failed(Some(status.as_u16()), format!("HTTP {status}"))
                }
                Err(e) => failed(None, error_chain(&e)),
            }
        }
    };
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
            "http://127.0.0.1:8080/x?y=1",
        ] {
            assert_eq!(validate_url(good), Ok(()), "{good}");
        }
        assert_eq!(
            validate_url("https://game.example/hooks/turn").is_ok(),
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
            assert!(validate_url(bad).is_err(), "{bad}");
        }
    }
}
