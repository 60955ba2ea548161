//! Prometheus metrics through the `metrics` facade: the code records with `metrics::counter!`,
//! `gauge!` and `histogram!` (the store crate too, without knowing of Prometheus), and
//! [`install`] puts `metrics-exporter-prometheus`'s recorder behind the facade, whose handle
//! `/metrics` renders ([`render`]). Every series, its labels and meaning: docs/METRICS.md.
//!
//! Labels are bounded: a transport, an RPC or route pattern, a status class or gRPC code, an
//! operation name. Match ids, request ids and raw paths never become labels (they are in the
//! logs instead).

use std::collections::HashSet;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use metrics::{Label, Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Upper bounds of the latency histograms (requests and store operations), in seconds.
const LATENCY_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// Upper bounds of the group commit's batch sizes (appends per statement; at most 128).
const BATCH_BUCKETS: [f64; 9] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 96.0, 128.0];

/// How often the recorder folds recorded histogram samples into its buckets.
const UPKEEP: Duration = Duration::from_secs(5);

pub const REQUESTS: &str = "missive_requests_total";
pub const REQUEST_DURATION: &str = "missive_request_duration_seconds";
pub const ERRORS: &str = "missive_errors_total";
pub const ACTS: &str = "missive_acts_total";
pub const TURNS_DUE: &str = "missive_turns_due_total";
pub const TURNS_PLAYED: &str = "missive_turns_played_total";
pub const REMINDERS: &str = "missive_turn_reminders_queued_total";
pub const CACHE_HITS: &str = "missive_match_cache_hits_total";
pub const CACHE_MISSES: &str = "missive_match_cache_misses_total";
pub const WATCHERS: &str = "missive_watchers";
pub const WATCH_REPLAYS: &str = "missive_watch_replays_total";
pub const WEBHOOK_DELIVERIES: &str = "missive_webhook_deliveries_total";
pub const WEBHOOK_DEFERRALS: &str = "missive_webhook_deferrals_total";
pub const LIMITED: &str = "missive_limited_total";
/// The `limit` label values of [`LIMITED`].
pub const LIMITS: [&str; 5] = [
    "requests",
    "creates",
    "open_matches",
    "client_watches",
    "watches",
];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the Prometheus recorder as the process's metrics recorder (once; later calls do
/// nothing) and starts its upkeep. Must run inside the Tokio runtime.
pub fn install() {
    HANDLE.get_or_init(|| {
        let handle = builder()
            .install_recorder()
            .expect("no other metrics recorder is installed");
        describe();
        let upkeep = handle.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(UPKEEP);
            loop {
                tick.tick().await;
                upkeep.run_upkeep();
            }
        });
        handle
    });
}

/// The recorder's configuration: true histograms (not summaries), with buckets per metric.
fn builder() -> PrometheusBuilder {
    PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &LATENCY_BUCKETS)
        .and_then(|b| {
            b.set_buckets_for_metric(
                Matcher::Full(missive_store::metrics::GROUP_COMMIT_BATCH.into()),
                &BATCH_BUCKETS,
            )
        })
        .expect("bucket lists are not empty")
}

/// Everything recorded, in the Prometheus text format; empty before [`install`].
pub fn render() -> String {
    HANDLE
        .get()
        .map(PrometheusHandle::render)
        .unwrap_or_default()
}

/// Help texts, and the series a dashboard expects to see from the start at zero.
fn describe() {
    describe_counter!(
        REQUESTS,
        "Requests served, by transport, RPC, route and status (HTTP status class or gRPC code)."
    );
    describe_histogram!(
        REQUEST_DURATION,
        Unit::Seconds,
        "Request latency until the response (a stream's: until it opens), by transport, RPC and route."
    );
    describe_counter!(ERRORS, "Errors returned to callers, by gRPC code name.");
    describe_counter!(ACTS, "Actions accepted from players.");
    describe_counter!(
        TURNS_DUE,
        "Due turns the turn worker claimed: bot turns and passed deadlines."
    );
    describe_counter!(
        TURNS_PLAYED,
        "Turns this server played for a seat: bot moves and default actions of passed deadlines."
    );
    describe_counter!(REMINDERS, "Deadline reminders queued for delivery.");
    describe_counter!(
        CACHE_HITS,
        "Match lookups answered from the in-memory cache (caught up from the store if behind)."
    );
    describe_counter!(
        CACHE_MISSES,
        "Match lookups that loaded the match from the store (snapshot plus events)."
    );
    describe_gauge!(WATCHERS, "Watch streams open on this server.");
    describe_counter!(
        WATCH_REPLAYS,
        "Watch catch-ups that replayed a match's log from its start."
    );
    describe_counter!(
        WEBHOOK_DELIVERIES,
        "Webhook delivery attempts, by outcome: delivered, failed (to be retried), given_up."
    );
    describe_counter!(
        WEBHOOK_DEFERRALS,
        "Claimed webhook deliveries handed back unattempted, by reason: busy (the host's \
         concurrent deliveries are all in use) or backing_off (the host keeps failing)."
    );
    describe_counter!(
        LIMITED,
        "Requests refused for a client or server limit, by limit: requests, creates, open_matches, client_watches, watches."
    );
    missive_store::metrics::describe();
    for limit in LIMITS {
        counter!(LIMITED, "limit" => limit).absolute(0);
    }

    counter!(ACTS).absolute(0);
    for kind in ["bot", "timeout"] {
        counter!(TURNS_DUE, "kind" => kind).absolute(0);
        counter!(TURNS_PLAYED, "kind" => kind).absolute(0);
    }
    counter!(CACHE_HITS).absolute(0);
    counter!(CACHE_MISSES).absolute(0);
    gauge!(WATCHERS).set(0.0);
    counter!(WATCH_REPLAYS).absolute(0);
    for outcome in ["delivered", "failed", "given_up"] {
        counter!(WEBHOOK_DELIVERIES, "outcome" => outcome).absolute(0);
    }
    for reason in ["busy", "backing_off"] {
        counter!(WEBHOOK_DEFERRALS, "reason" => reason).absolute(0);
    }
}

/// A request refused for going over `limit` (one of [`LIMITS`]).
pub fn record_limited(limit: &'static str) {
    counter!(LIMITED, "limit" => limit).increment(1);
}

/// One finished request. `rpc` is the API's RPC name (`Act`) or, for what is not an RPC of
/// the API, a bounded name of its own; `route` the transport's pattern for it; `status` the
/// HTTP status class (`2xx`) or the gRPC code name (`OK`).
pub fn record_request(
    transport: &'static str,
    rpc: String,
    route: String,
    status: &'static str,
    elapsed: Duration,
) {
    let mut labels = vec![
        Label::from_static_parts("transport", transport),
        Label::new("rpc", rpc),
        Label::new("route", route),
    ];
    metrics::histogram!(REQUEST_DURATION, labels.clone()).record(elapsed.as_secs_f64());
    labels.push(Label::from_static_parts("status", status));
    counter!(REQUESTS, labels).increment(1);
}

/// An error returned to a caller, by gRPC code name.
pub fn record_error(code: &'static str) {
    counter!(ERRORS, "code" => code).increment(1);
}

/// An accepted action.
pub fn record_act() {
    counter!(ACTS).increment(1);
}

/// A due turn the worker claimed: `bot` or `timeout`.
pub fn record_turn_due(bot: bool) {
    counter!(TURNS_DUE, "kind" => if bot { "bot" } else { "timeout" }).increment(1);
}

/// A turn this server played for a seat: `bot` or `timeout`.
pub fn record_turn(kind: &'static str) {
    counter!(TURNS_PLAYED, "kind" => kind).increment(1);
}

/// Reminders the turn worker queued.
pub fn record_reminders(queued: u32) {
    if queued > 0 {
        counter!(REMINDERS).increment(u64::from(queued));
    }
}

/// A match looked up in the cache: found (`hit`) or loaded from the store.
pub fn record_cache(hit: bool) {
    counter!(if hit { CACHE_HITS } else { CACHE_MISSES }).increment(1);
}

/// One webhook delivery attempt: `delivered`, `failed` or `given_up`.
pub fn record_delivery(outcome: &'static str) {
    counter!(WEBHOOK_DELIVERIES, "outcome" => outcome).increment(1);
}

/// Claimed webhook deliveries handed back unattempted: `busy` or `backing_off`.
pub fn record_deferrals(reason: &'static str, n: usize) {
    counter!(WEBHOOK_DEFERRALS, "reason" => reason).increment(n as u64);
}

/// A watch that caught up by replaying its match's log from the start: a watch that begins
/// behind the match, or one whose match this server had to load again.
pub fn record_watch_replay() {
    counter!(WATCH_REPLAYS).increment(1);
}

/// An open watch stream, counted in [`WATCHERS`] until dropped.
#[derive(Debug)]
pub struct Watcher(());

impl Watcher {
    pub fn open() -> Watcher {
        gauge!(WATCHERS).increment(1.0);
        Watcher(())
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        gauge!(WATCHERS).decrement(1.0);
    }
}

/// The HTTP status class of a status code: `2xx`, `4xx`…
pub fn status_class(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

/// The name of a `grpc-status` value (`0` → `OK`); `UNKNOWN` for anything else.
pub fn grpc_code_name(status: &str) -> &'static str {
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    status
        .parse::<usize>()
        .ok()
        .and_then(|i| NAMES.get(i).copied())
        .unwrap_or("UNKNOWN")
}

/// The gRPC methods this server serves, `package.Service/Method`, read once from the
/// descriptor sets it registers for reflection.
fn grpc_methods() -> &'static HashSet<String> {
    static METHODS: OnceLock<HashSet<String>> = OnceLock::new();
    METHODS.get_or_init(|| {
        use prost::Message;
        let sets: [&[u8]; 4] = [
            missive_proto::FILE_DESCRIPTOR_SET,
            tonic_health::pb::FILE_DESCRIPTOR_SET,
            tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET,
            tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
        ];
        let mut methods = HashSet::new();
        for set in sets {
            let Ok(set) = prost_types::FileDescriptorSet::decode(set) else {
                continue;
            };
            for file in set.file {
                let package = file.package();
                for service in &file.service {
                    for method in &service.method {
                        methods.insert(format!("{package}.{}/{}", service.name(), method.name()));
                    }
                }
            }
        }
        methods
    })
}

/// The `rpc` and `route` labels of a gRPC call to `path`: the method name and
/// `package.Service/Method` for a method this server serves, `unknown` for any other path (a
/// client may send any path; labels must stay bounded).
pub fn grpc_labels(path: &str) -> (String, String) {
    let method = path.trim_start_matches('/');
    if !grpc_methods().contains(method) {
        return ("unknown".into(), "unknown".into());
    }
    let rpc = if method.starts_with("missive.") {
        method.rsplit('/').next().unwrap_or(method).to_owned()
    } else {
        method.to_owned()
    };
    (rpc, method.to_owned())
}

/// A tower layer for the gRPC server: a tracing span per call (with the match and request ids
/// the service records on it), and its count and latency by method and gRPC code.
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
        let (rpc, route) = grpc_labels(request.uri().path());
        let span = crate::telemetry::request_span("grpc", &rpc);
        let start = Instant::now();
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
                        .map_or("OK", grpc_code_name),
                    Err(_) => "TRANSPORT_ERROR",
                };
                let elapsed = start.elapsed();
                tracing::debug!(status, elapsed_ms = elapsed.as_millis() as u64, "grpc call");
                record_request("grpc", rpc, route, status, elapsed);
                result
            }
            .instrument(span),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` with a recorder of this configuration, and renders what it recorded.
    fn recorded(f: impl FnOnce()) -> String {
        let recorder = builder().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, f);
        handle.render()
    }

    #[test]
    fn requests_are_counted_and_timed_in_histogram_buckets() {
        let text = recorded(|| {
            record_request(
                "grpc",
                "Act".into(),
                "missive.v1.Missive/Act".into(),
                "OK",
                Duration::from_millis(3),
            );
        });
        let labels = r#"transport="grpc",rpc="Act",route="missive.v1.Missive/Act""#;
        assert!(
            text.contains(&format!(
                r#"missive_requests_total{{{labels},status="OK"}} 1"#
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                r#"missive_request_duration_seconds_bucket{{{labels},le="0.005"}} 1"#
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                r#"missive_request_duration_seconds_bucket{{{labels},le="0.0025"}} 0"#
            )),
            "{text}"
        );
    }

    #[test]
    fn batch_sizes_get_their_own_buckets() {
        let text = recorded(|| {
            metrics::histogram!(missive_store::metrics::GROUP_COMMIT_BATCH).record(12.0);
        });
        assert!(
            text.contains(r#"missive_store_group_commit_batch_size_bucket{le="16"} 1"#),
            "{text}"
        );
    }

    #[test]
    fn a_watcher_counts_while_it_lives() {
        let recorder = builder().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            let one = Watcher::open();
            drop(Watcher::open());
            assert!(handle.render().contains("missive_watchers 1\n"));
            drop(one);
            assert!(handle.render().contains("missive_watchers 0\n"));
        });
    }

    #[test]
    fn only_served_grpc_methods_become_labels() {
        assert_eq!(
            grpc_labels("/missive.v1.Missive/Act"),
            ("Act".into(), "missive.v1.Missive/Act".into())
        );
        assert_eq!(
            grpc_labels("/grpc.health.v1.Health/Check").0,
            "grpc.health.v1.Health/Check"
        );
        assert_eq!(
            grpc_labels("/missive.v1.Missive/NoSuchThing"),
            ("unknown".into(), "unknown".into())
        );
        assert_eq!(grpc_labels("/a/b/c").0, "unknown");
    }

    #[test]
    fn codes_and_classes_are_named() {
        assert_eq!(grpc_code_name("0"), "OK");
        assert_eq!(grpc_code_name("5"), "NOT_FOUND");
        assert_eq!(grpc_code_name("16"), "UNAUTHENTICATED");
        assert_eq!(grpc_code_name("99"), "UNKNOWN");
        assert_eq!(grpc_code_name("x"), "UNKNOWN");
        assert_eq!(status_class(201), "2xx");
        assert_eq!(status_class(404), "4xx");
        assert_eq!(status_class(503), "5xx");
    }
}
