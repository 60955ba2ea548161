//! Prometheus metrics, kept in-process and rendered in the text exposition format at
//! `/metrics`: requests and latencies by transport and route, acts, turns played, the store's
//! group commit, and errors by code.
//!
//! A handful of counters does not justify a metrics framework; the registry is a mutex-guarded
//! map, touched once per request.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the latency histogram, in seconds.
const BUCKETS: [f64; 10] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

static REQUESTS: Mutex<BTreeMap<(String, String, String), Histogram>> = Mutex::new(BTreeMap::new());
static ERRORS: Mutex<BTreeMap<&'static str, u64>> = Mutex::new(BTreeMap::new());
static ACTS: AtomicU64 = AtomicU64::new(0);
static BOT_MOVES: AtomicU64 = AtomicU64::new(0);
static TIMEOUTS: AtomicU64 = AtomicU64::new(0);

/// One finished request: `transport` is `grpc` or `http`, `route` the method or path pattern.
pub fn record_request(transport: &str, route: &str, status: &str, elapsed: Duration) {
    let secs = elapsed.as_secs_f64();
    let mut map = REQUESTS.lock().unwrap_or_else(|e| e.into_inner());
    let h = map
        .entry((transport.to_owned(), route.to_owned(), status.to_owned()))
        .or_default();
    h.count += 1;
    h.sum += secs;
    for (i, bound) in BUCKETS.iter().enumerate() {
        if secs <= *bound {
            h.counts[i] += 1;
        }
    }
}

/// An error returned to a caller, by gRPC code name.
pub fn record_error(code: &'static str) {
    *ERRORS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(code)
        .or_default() += 1;
}

/// An accepted action.
pub fn record_act() {
    ACTS.fetch_add(1, Ordering::Relaxed);
}

/// A turn this server played for a seat: `bot` or `timeout`.
pub fn record_turn(kind: &str) {
    let counter = if kind == "bot" { &BOT_MOVES } else { &TIMEOUTS };
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Everything, in the Prometheus text format; `group_commit` is the store's, on PostgreSQL.
pub fn render(group_commit: Option<missive_store::GroupCommit>) -> String {
    let mut out = String::new();
    out.push_str(
        "# HELP missive_requests_total Requests served.\n# TYPE missive_requests_total counter\n",
    );
    let requests = REQUESTS.lock().unwrap_or_else(|e| e.into_inner());
    for ((transport, route, status), h) in requests.iter() {
        let _ = writeln!(
            out,
            "missive_requests_total{{transport=\"{transport}\",route=\"{route}\",status=\"{status}\"}} {}",
            h.count
        );
    }
    out.push_str("# HELP missive_request_duration_seconds Request latency.\n# TYPE missive_request_duration_seconds histogram\n");
    for ((transport, route, status), h) in requests.iter() {
        let labels = format!("transport=\"{transport}\",route=\"{route}\",status=\"{status}\"");
        for (bound, count) in BUCKETS.iter().zip(h.counts) {
            let _ = writeln!(
                out,
                "missive_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {count}"
            );
        }
        let _ = writeln!(
            out,
            "missive_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
            h.count
        );
        let _ = writeln!(
            out,
            "missive_request_duration_seconds_sum{{{labels}}} {}",
            h.sum
        );
        let _ = writeln!(
            out,
            "missive_request_duration_seconds_count{{{labels}}} {}",
            h.count
        );
    }
    drop(requests);
    out.push_str(
        "# HELP missive_acts_total Actions accepted.\n# TYPE missive_acts_total counter\n",
    );
    let _ = writeln!(out, "missive_acts_total {}", ACTS.load(Ordering::Relaxed));
    out.push_str("# HELP missive_turns_played_total Turns this server played for a seat: bot moves and default actions of passed deadlines.\n# TYPE missive_turns_played_total counter\n");
    let _ = writeln!(
        out,
        "missive_turns_played_total{{kind=\"bot\"}} {}",
        BOT_MOVES.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        out,
        "missive_turns_played_total{{kind=\"timeout\"}} {}",
        TIMEOUTS.load(Ordering::Relaxed)
    );
    if let Some(group) = group_commit {
        out.push_str("# HELP missive_store_group_commits_total Statements the store's group commit wrote, one commit each.\n# TYPE missive_store_group_commits_total counter\n");
        let _ = writeln!(
            out,
            "missive_store_group_commits_total {}",
            group.statements
        );
        out.push_str("# HELP missive_store_group_commit_appends_total Appends those statements carried.\n# TYPE missive_store_group_commit_appends_total counter\n");
        let _ = writeln!(
            out,
            "missive_store_group_commit_appends_total {}",
            group.rows
        );
    }
    out.push_str("# HELP missive_errors_total Errors returned, by gRPC code.\n# TYPE missive_errors_total counter\n");
    for (code, n) in ERRORS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        let _ = writeln!(out, "missive_errors_total{{code=\"{code}\"}} {n}");
    }
    out
}

/// A tower layer for the gRPC server: a tracing span per call, and its count and latency by
/// method and `grpc-status`.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrpcMetricsLayer;

impl<S> tower::Layer<S> for GrpcMetricsLayer {
    type Service = GrpcMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        GrpcMetrics(inner)
    }
}

/// See [`GrpcMetricsLayer`].
#[derive(Debug, Clone)]
pub struct GrpcMetrics<S>(S);

impl<S, B, RB> tower::Service<axum::http::Request<B>> for GrpcMetrics<S>
where
    S: tower::Service<axum::http::Request<B>, Response = axum::http::Response<RB>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = futures::future::BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: axum::http::Request<B>) -> Self::Future {
        use tracing::Instrument;
        let method = request.uri().path().to_owned();
        let span = tracing::info_span!("grpc", method = %method);
        let start = std::time::Instant::now();
        let future = self.0.call(request);
        Box::pin(
            async move {
                let result = future.await;
                let status = match &result {
                    // Errors are sent trailers-only, with the status in the headers; a
                    // successful call's status comes later in the trailers.
                    Ok(response) => response
                        .headers()
                        .get("grpc-status")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("0")
                        .to_owned(),
                    Err(_) => "transport-error".to_owned(),
                };
                tracing::debug!(status = %status, elapsed_ms = start.elapsed().as_millis() as u64, "grpc call");
                record_request("grpc", &method, &status, start.elapsed());
                result
            }
            .instrument(span),
        )
    }
}
