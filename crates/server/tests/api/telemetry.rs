//! Telemetry of the real binary: `/metrics` after traffic on both transports, and JSON log
//! lines that carry a request's match id and request id.

use std::time::Duration;

use missive_proto::v1 as pb;
use missive_proto::v1::missive_client::MissiveClient;
use serde_json::{Value, json};
use tokio_stream::StreamExt;
use tonic::transport::Channel;

use crate::grpc::create_and_join;
use crate::helpers::{Backend, Options, TestApp, authed, seat_view, spawn_app, spawn_app_with};

/// The value of the series `name` whose labels include all of `labels`, summed over the
/// series that match (none: `None`).
fn series(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut found = None;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((key, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let (metric, label_text) = match key.split_once('{') {
            Some((metric, rest)) => (metric, rest.trim_end_matches('}')),
            None => (key, ""),
        };
        if metric != name
            || !labels
                .iter()
                .all(|(k, v)| label_text.split(',').any(|l| l == format!("{k}=\"{v}\"")))
        {
            continue;
        }
        let value: f64 = value.parse().expect("a number");
        *found.get_or_insert(0.0) += value;
    }
    found
}

/// The seat awaited now and its first legal action, from the seats' views over gRPC.
async fn mover(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    tokens: &[String],
) -> (usize, pb::GameAction) {
    for (seat, token) in tokens.iter().enumerate() {
        let view = seat_view(client, match_id, token).await;
        if view.awaiting.contains(&(seat as u32)) {
            return (seat, view.legal_actions[0].clone());
        }
    }
    panic!("nobody is awaited");
}

/// One act over gRPC with `request_id`.
async fn act_over_grpc(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    tokens: &[String],
    request_id: &str,
) {
    let (seat, action) = mover(client, match_id, tokens).await;
    client
        .act(authed(
            pb::ActRequest {
                match_id: match_id.to_owned(),
                action: Some(action),
                request_id: request_id.to_owned(),
                expected_version: None,
                seat: None,
                ..Default::default()
            },
            &tokens[seat],
        ))
        .await
        .expect("a legal action is accepted");
}

/// One act over HTTP/JSON with `request_id`, the action taken from the seat's JSON view.
async fn act_over_http(app: &TestApp, match_id: &str, tokens: &[String], request_id: &str) {
    for token in tokens {
        let view: Value = app
            .get_json(&format!("/v1/matches/{match_id}/view"), Some(token))
            .await;
        let Some(action) = view["view"]["legalActions"]
            .as_array()
            .and_then(|a| a.first())
        else {
            continue;
        };
        let response = app
            .http
            .post(app.url(&format!("/v1/matches/{match_id}/act")))
            .bearer_auth(token)
            .json(&json!({ "requestId": request_id, "action": action }))
            .send()
            .await
            .expect("act");
        assert_eq!(response.status(), reqwest::StatusCode::OK);
        return;
    }
    panic!("no seat has a legal action");
}

#[tokio::test]
async fn metrics_count_each_rpc_by_transport_and_time_the_store_the_cache_and_watchers() {
    let app = spawn_app(Backend::Postgres).await;
    let mut client = app.grpc().await;
    let (match_id, tokens) = create_and_join(&mut client, 2).await;
    let mut watch = client
        .watch_match(authed(
            pb::WatchMatchRequest {
                match_id: match_id.clone(),
                after_version: 0,
                seat: None,
            },
            &tokens[0],
        ))
        .await
        .expect("watch")
        .into_inner();
    act_over_grpc(&mut client, &match_id, &tokens, "metrics-grpc-1").await;
    act_over_http(&app, &match_id, &tokens, "metrics-http-1").await;

    let text = app.metrics().await;
    let grpc_act = [
        ("transport", "grpc"),
        ("rpc", "Act"),
        ("route", "missive.v1.Missive/Act"),
    ];
    let http_act = [
        ("transport", "http"),
        ("rpc", "Act"),
        ("route", "POST /v1/matches/{id}/act"),
    ];
    for (labels, ok) in [(grpc_act, "OK"), (http_act, "2xx")] {
        let mut counted = labels.to_vec();
        counted.push(("status", ok));
        assert_eq!(
            series(&text, "missive_requests_total", &counted),
            Some(1.0),
            "{labels:?}\n{text}"
        );
        assert_eq!(
            series(&text, "missive_request_duration_seconds_count", &labels),
            Some(1.0),
            "{text}"
        );
        let mut in_5s = labels.to_vec();
        in_5s.push(("le", "5"));
        assert_eq!(
            series(&text, "missive_request_duration_seconds_bucket", &in_5s),
            Some(1.0),
            "{text}"
        );
    }
    // Views over both transports, per RPC.
    assert!(
        series(
            &text,
            "missive_requests_total",
            &[("transport", "grpc"), ("rpc", "GetView")]
        )
        .is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert!(
        series(
            &text,
            "missive_requests_total",
            &[("transport", "http"), ("rpc", "GetView")]
        )
        .is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert_eq!(series(&text, "missive_acts_total", &[]), Some(2.0));
    for operation in ["append", "get_match", "create_match"] {
        assert!(
            series(
                &text,
                "missive_store_operation_duration_seconds_count",
                &[("operation", operation)]
            )
            .is_some_and(|n| n >= 1.0),
            "{operation}\n{text}"
        );
    }
    // Acts within a match go through PostgreSQL's group commit, one batch or more.
    assert!(
        series(&text, "missive_store_group_commit_batch_size_count", &[]).is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert!(
        series(&text, "missive_match_cache_hits_total", &[]).is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert!(
        series(&text, "missive_match_cache_misses_total", &[]).is_some(),
        "{text}"
    );
    assert_eq!(series(&text, "missive_watchers", &[]), Some(1.0), "{text}");
    // Match ids never become labels.
    assert!(!text.contains(&match_id), "{text}");

    // The watcher saw the acts; once it hangs up, the gauge falls back to zero.
    let first = tokio::time::timeout(Duration::from_secs(5), watch.next())
        .await
        .expect("an update in time");
    assert!(first.is_some_and(|u| u.is_ok()));
    drop(watch);
    let mut watchers = None;
    for _ in 0..100 {
        watchers = series(&app.metrics().await, "missive_watchers", &[]);
        if watchers == Some(0.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(watchers, Some(0.0));
}

#[tokio::test]
async fn json_log_lines_of_an_act_carry_its_match_id_and_request_id() {
    let app = spawn_app_with(
        Backend::Sqlite,
        Options {
            env: &[("MISSIVE_LOG_FORMAT", "json"), ("RUST_LOG", "info")],
            capture_log: true,
            ..Options::default()
        },
    )
    .await;
    let mut client = app.grpc().await;
    let (match_id, tokens) = create_and_join(&mut client, 2).await;
    act_over_grpc(&mut client, &match_id, &tokens, "json-log-grpc").await;
    act_over_http(&app, &match_id, &tokens, "json-log-http").await;

    let mut acts = Vec::new();
    for _ in 0..100 {
        let lines: Vec<Value> = app
            .log()
            .iter()
            .map(|line| {
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: not JSON: {line}"))
            })
            .collect();
        acts = lines
            .into_iter()
            .filter(|l| l["message"] == "action applied")
            .collect();
        if acts.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(acts.len(), 2, "{acts:?}");
    for (line, transport, request_id) in [
        (&acts[0], "grpc", "json-log-grpc"),
        (&acts[1], "http", "json-log-http"),
    ] {
        assert_eq!(line["level"], "INFO", "{line}");
        assert!(line["timestamp"].is_string(), "{line}");
        assert_eq!(line["span"]["name"], "request", "{line}");
        assert_eq!(line["span"]["transport"], transport, "{line}");
        assert_eq!(line["span"]["rpc"], "Act", "{line}");
        assert_eq!(line["span"]["match_id"], match_id.as_str(), "{line}");
        assert_eq!(line["span"]["request_id"], request_id, "{line}");
    }
}
