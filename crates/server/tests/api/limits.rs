//! The per-client limits (docs/API.md, "Limits"), on servers started with low ones: over a
//! limit both transports answer RESOURCE_EXHAUSTED with when to retry (HTTP 429 `Retry-After`,
//! gRPC `google.rpc.RetryInfo`) and nothing changes; one client over its limit does not slow
//! another; health, metrics and the web client are never limited; watch streams are capped;
//! a slow sender is cut off; a creator's open matches (not its started ones) are capped.
//!
//! Clients are told apart here by `X-Forwarded-For` from the trusted loopback peer
//! (`MISSIVE_TRUSTED_PROXIES=127.0.0.1`), as behind a load balancer.

use std::time::{Duration, Instant};

use missive_proto::v1 as pb;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::Code;
use tonic_types::StatusExt;

use crate::helpers::{
    Backend, Options, RAISED_LIMITS, TestApp, love_letter_options, spawn_app_with,
};

/// The raised limits, with `low` on top (later settings win).
fn env(low: &[(&'static str, &'static str)]) -> &'static [(&'static str, &'static str)] {
    let mut all: Vec<(&str, &str)> = RAISED_LIMITS.to_vec();
    all.push(("MISSIVE_TRUSTED_PROXIES", "127.0.0.1"));
    all.extend_from_slice(low);
    Box::leak(all.into_boxed_slice())
}

async fn spawn(low: &[(&'static str, &'static str)]) -> TestApp {
    spawn_app_with(
        Backend::Sqlite,
        Options {
            env: env(low),
            ..Options::default()
        },
    )
    .await
}

/// `GET path` as the client at `ip`.
async fn get_as(app: &TestApp, ip: &str, path: &str) -> reqwest::Response {
    app.http
        .get(app.url(path))
        .header("x-forwarded-for", ip)
        .send()
        .await
        .expect("GET")
}

fn create_body() -> Value {
    json!({ "options": { "loveLetter": {} }, "seatCount": 2 })
}

async fn create_as(app: &TestApp, ip: &str, body: &Value) -> reqwest::Response {
    app.http
        .post(app.url("/v1/matches"))
        .header("x-forwarded-for", ip)
        .json(body)
        .send()
        .await
        .expect("POST /v1/matches")
}

/// A gRPC request from the client at `ip`.
fn as_client<T>(ip: &str, message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("x-forwarded-for", ip.parse().expect("metadata"));
    request
}

/// A 429 with a whole-second `Retry-After` of at least 1 and a body naming the limit.
async fn assert_429(response: reqwest::Response, names: &str) -> u64 {
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = response
        .headers()
        .get("retry-after")
        .expect("a Retry-After header")
        .to_str()
        .expect("text")
        .parse()
        .expect("whole seconds");
    assert!(retry_after >= 1, "{retry_after}");
    let body: Value = response.json().await.expect("a JSON body");
    assert_eq!(body["code"], "RESOURCE_EXHAUSTED", "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains(names), "{message:?} does not name {names}");
    retry_after
}

/// RESOURCE_EXHAUSTED with a `RetryInfo` detail and a message naming the limit; the delay.
fn assert_exhausted(status: &tonic::Status, names: &str) -> Duration {
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(
        status.message().contains(names),
        "{:?} does not name {names}",
        status.message()
    );
    status
        .get_details_retry_info()
        .and_then(|info| info.retry_delay)
        .expect("a RetryInfo detail with a retry delay")
}

async fn open_matches(app: &TestApp, ip: &str) -> usize {
    let response = get_as(app, ip, "/v1/matches").await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.expect("json");
    body["matches"].as_array().map_or(0, Vec::len)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_request_rate_both_transports_say_when_to_retry_and_others_go_on() {
    let app = spawn(&[
        ("MISSIVE_RATE_LIMIT_PER_SEC", "1"),
        ("MISSIVE_RATE_LIMIT_BURST", "5"),
    ])
    .await;
    let flooder = "192.0.2.1";
    // The burst, then refusals.
    for n in 0..5 {
        let response = get_as(&app, flooder, "/v1/matches").await;
        assert_eq!(response.status(), StatusCode::OK, "request {n}");
    }
    let retry = assert_429(get_as(&app, flooder, "/v1/matches").await, "rate limit").await;
    assert!(retry <= 1, "one request a second: {retry}");
    // The same client over gRPC shares the count: refused, with the delay in the details.
    let mut grpc = app.grpc().await;
    let refused = grpc
        .list_matches(as_client(flooder, pb::ListMatchesRequest::default()))
        .await
        .expect_err("over the rate");
    let delay = assert_exhausted(&refused, "rate limit");
    assert!(
        delay > Duration::ZERO && delay <= Duration::from_secs(1),
        "{delay:?}"
    );
    // Another client is not slowed by the first, on either transport.
    for _ in 0..3 {
        assert_eq!(
            get_as(&app, "192.0.2.2", "/v1/matches").await.status(),
            StatusCode::OK
        );
    }
    grpc.list_matches(as_client("192.0.2.3", pb::ListMatchesRequest::default()))
        .await
        .expect("another client's call");
    // Health, metrics, the OpenAPI document and the web client are never limited, whoever asks.
    for path in ["/healthz", "/metrics", "/openapi.json", "/"] {
        for _ in 0..8 {
            let response = get_as(&app, flooder, path).await;
            assert_eq!(response.status(), StatusCode::OK, "{path}");
        }
    }
    let channel = tonic::transport::Endpoint::from_shared(app.grpc_addr.clone())
        .expect("address")
        .connect()
        .await
        .expect("connect");
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    for _ in 0..8 {
        let answer = health
            .check(as_client(
                flooder,
                tonic_health::pb::HealthCheckRequest::default(),
            ))
            .await
            .expect("health is not limited")
            .into_inner();
        assert_eq!(
            answer.status,
            tonic_health::pb::health_check_response::ServingStatus::Serving as i32
        );
    }
    // The refusals are counted.
    let refusals = app
        .metric("missive_limited_total{limit=\"requests\"}")
        .await
        .expect("the series is exported");
    assert!(refusals >= 2, "{refusals}");
    // After the wait the client is let through again.
    tokio::time::sleep(delay + Duration::from_millis(50)).await;
    assert_eq!(
        get_as(&app, flooder, "/v1/matches").await.status(),
        StatusCode::OK
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarding_headers_are_ignored_without_a_trusted_proxy() {
    let app = spawn_app_with(
        Backend::Sqlite,
        Options {
            env: Box::leak(
                [
                    RAISED_LIMITS.as_slice(),
                    &[
                        ("MISSIVE_RATE_LIMIT_PER_SEC", "1"),
                        ("MISSIVE_RATE_LIMIT_BURST", "3"),
                    ],
                ]
                .concat()
                .into_boxed_slice(),
            ),
            ..Options::default()
        },
    )
    .await;
    // Each request claims another address; all are the one loopback peer.
    for n in 0..3 {
        let response = get_as(&app, &format!("192.0.2.{n}"), "/v1/matches").await;
        assert_eq!(response.status(), StatusCode::OK);
    }
    assert_429(
        get_as(&app, "192.0.2.200", "/v1/matches").await,
        "rate limit",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creations_are_limited_more_strictly_bots_cost_more_and_refusals_change_nothing() {
    let app = spawn(&[
        ("MISSIVE_CREATE_LIMIT_PER_MIN", "1"),
        ("MISSIVE_CREATE_LIMIT_BURST", "3"),
    ])
    .await;
    let creator = "192.0.2.10";
    let observer = "192.0.2.11";
    // One bot seat: this creation counts 2 of the burst of 3.
    let with_bot = json!({
        "options": { "loveLetter": {} },
        "seatCount": 3,
        "bots": [{ "seat": 0, "strategy": "" }]
    });
    assert_eq!(
        create_as(&app, creator, &with_bot).await.status(),
        StatusCode::CREATED
    );
    assert_eq!(
        create_as(&app, creator, &create_body()).await.status(),
        StatusCode::CREATED
    );
    let before = open_matches(&app, observer).await;
    assert_eq!(before, 2);
    // Over: refused over HTTP and gRPC, and nothing is created.
    let retry = assert_429(
        create_as(&app, creator, &create_body()).await,
        "MISSIVE_CREATE_LIMIT_PER_MIN",
    )
    .await;
    assert!((1..=60).contains(&retry), "{retry}");
    let mut grpc = app.grpc().await;
    let refused = grpc
        .create_match(as_client(creator, love_letter_options(2)))
        .await
        .expect_err("over the creation rate");
    let delay = assert_exhausted(&refused, "creation rate limit");
    assert!(delay > Duration::from_secs(1), "{delay:?}");
    assert_eq!(open_matches(&app, observer).await, before);
    // Bad input is refused before it is counted or stored: an over-long request id, a bot
    // strategy name past its length, a player name past its length.
    let other = "192.0.2.12";
    for (body, field) in [
        (
            json!({ "options": { "loveLetter": {} }, "requestId": "r".repeat(129) }),
            "requestId",
        ),
        (
            json!({ "options": { "loveLetter": {} }, "bots": [{ "seat": 0, "strategy": "s".repeat(10_000) }] }),
            "bots.strategy",
        ),
    ] {
        let response = create_as(&app, other, &body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let body: Value = response.json().await.expect("json");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(message.contains(field), "{message}");
        assert!(
            message.len() < 200,
            "the value is not repeated whole: {message}"
        );
    }
    assert_eq!(open_matches(&app, observer).await, before);
    // The other client still has its whole burst: the refusals above cost it nothing.
    for _ in 0..3 {
        assert_eq!(
            create_as(&app, other, &create_body()).await.status(),
            StatusCode::CREATED
        );
    }
    let matches = open_matches(&app, observer).await;
    let id = {
        let response = get_as(&app, observer, "/v1/matches").await;
        let body: Value = response.json().await.expect("json");
        body["matches"][0]["matchId"]
            .as_str()
            .expect("id")
            .to_owned()
    };
    let response = app
        .http
        .post(app.url(&format!("/v1/matches/{id}/join")))
        .header("x-forwarded-for", observer)
        .json(&json!({ "player": "p".repeat(65) }))
        .send()
        .await
        .expect("join");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let after: Value = get_as(&app, observer, &format!("/v1/matches/{id}"))
        .await
        .json()
        .await
        .expect("json");
    let seats = after["match"]["seats"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        seats.iter().all(|s| s
            .get("player")
            .is_none_or(|p| p.as_str().is_none_or(|p| !p.starts_with("ppp")))),
        "{after}"
    );
    assert_eq!(open_matches(&app, observer).await, matches);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_creators_open_matches_are_capped_with_a_refusal_that_names_no_setting() {
    let app = spawn(&[("MISSIVE_MAX_OPEN_MATCHES", "2")]).await;
    let creator = "192.0.2.20";
    let first = json!({ "options": { "loveLetter": {} }, "requestId": "cap-first" });
    let created = create_as(&app, creator, &first).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let created: Value = created.json().await.expect("json");
    assert_eq!(
        create_as(&app, creator, &create_body()).await.status(),
        StatusCode::CREATED
    );
    // At the cap: refused on both transports, saying what to do and naming no setting.
    let refused = create_as(&app, creator, &create_body()).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = refused.headers()["retry-after"]
        .to_str()
        .expect("text")
        .parse()
        .expect("whole seconds");
    assert!(retry >= 1);
    let body: Value = refused.json().await.expect("json");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("2 matches waiting for players") && message.contains("cancel one"),
        "{message}"
    );
    assert!(message.contains("CancelMatch"), "{message}");
    assert!(
        !message.contains("MISSIVE_"),
        "no setting is named: {message}"
    );
    let mut grpc = app.grpc().await;
    let refused = grpc
        .create_match(as_client(creator, love_letter_options(2)))
        .await
        .expect_err("at the cap");
    assert_exhausted(&refused, "open match cap");
    assert!(!refused.message().contains("MISSIVE_"), "{refused:?}");
    // A retry of a creation that went through still answers its match.
    let again = create_as(&app, creator, &first).await;
    assert!(again.status().is_success(), "{}", again.status());
    let again: Value = again.json().await.expect("json");
    assert_eq!(again["match"]["matchId"], created["match"]["matchId"]);
    // The cap is the creator's: another client creates.
    assert_eq!(
        create_as(&app, "192.0.2.21", &create_body()).await.status(),
        StatusCode::CREATED
    );
    assert_eq!(open_matches(&app, "192.0.2.22").await, 3);
    assert!(
        app.metric("missive_limited_total{limit=\"open_matches\"}")
            .await
            .is_some_and(|n| n >= 2)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_creator_at_the_cap_creates_again_after_cancelling_one_and_started_matches_do_not_count()
{
    let app = spawn(&[("MISSIVE_MAX_OPEN_MATCHES", "1")]).await;
    let creator = "192.0.2.30";
    let created = create_as(&app, creator, &create_body()).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let created: Value = created.json().await.expect("json");
    let id = created["match"]["matchId"].as_str().expect("id").to_owned();
    let cancel_token = created["cancelToken"].as_str().expect("a cancel token");
    assert_eq!(
        create_as(&app, creator, &create_body()).await.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "the open match counts"
    );
    let cancelled = app
        .http
        .post(app.url(&format!("/v1/matches/{id}/cancel")))
        .header("x-forwarded-for", creator)
        .json(&json!({ "cancelToken": cancel_token }))
        .send()
        .await
        .expect("cancel");
    assert_eq!(cancelled.status(), StatusCode::OK);
    // The place is free again; the new match fills up and starts, and no longer counts.
    let created = create_as(&app, creator, &create_body()).await;
    assert_eq!(
        created.status(),
        StatusCode::CREATED,
        "cancelling frees a place"
    );
    let created: Value = created.json().await.expect("json");
    let id = created["match"]["matchId"].as_str().expect("id").to_owned();
    for player in ["ann", "bob"] {
        let joined = app
            .http
            .post(app.url(&format!("/v1/matches/{id}/join")))
            .header("x-forwarded-for", "192.0.2.31")
            .json(&json!({ "player": player }))
            .send()
            .await
            .expect("join");
        assert_eq!(joined.status(), StatusCode::OK);
    }
    // Bots in every seat: started at once, so never counted either.
    let bots = json!({
        "options": { "loveLetter": {} },
        "seatCount": 2,
        "bots": [{ "seat": 0 }, { "seat": 1 }]
    });
    assert_eq!(
        create_as(&app, creator, &bots).await.status(),
        StatusCode::CREATED,
        "the started match does not count"
    );
    assert_eq!(
        create_as(&app, creator, &create_body()).await.status(),
        StatusCode::CREATED,
        "nor does the bots' match"
    );
    assert_eq!(
        create_as(&app, creator, &create_body()).await.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "the new open match does"
    );
}

/// Opens an SSE watch of `id` as the client at `ip`; the response is held open.
async fn sse_as(app: &TestApp, ip: &str, id: &str) -> reqwest::Response {
    app.http
        .get(app.url(&format!("/v1/matches/{id}/watch")))
        .header("x-forwarded-for", ip)
        .send()
        .await
        .expect("watch")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_streams_are_capped_per_client_and_per_server() {
    let app = spawn(&[
        ("MISSIVE_MAX_WATCHES_PER_CLIENT", "2"),
        ("MISSIVE_MAX_WATCHES", "3"),
    ])
    .await;
    let created = create_as(&app, "192.0.2.40", &create_body()).await;
    let created: Value = created.json().await.expect("json");
    let id = created["match"]["matchId"].as_str().expect("id").to_owned();
    let (a, b) = ("192.0.2.41", "192.0.2.42");
    let watch = |ip: &str| {
        as_client(
            ip,
            pb::WatchMatchRequest {
                match_id: id.clone(),
                after_version: 0,
                seat: None,
            },
        )
    };
    let mut grpc = app.grpc().await;
    // Client a: one SSE stream and one gRPC stream, then no more on either transport.
    let a_sse = sse_as(&app, a, &id).await;
    assert_eq!(a_sse.status(), StatusCode::OK);
    let a_grpc = grpc.watch_match(watch(a)).await.expect("a's second stream");
    assert_429(sse_as(&app, a, &id).await, "MISSIVE_MAX_WATCHES_PER_CLIENT").await;
    let refused = grpc
        .watch_match(watch(a))
        .await
        .expect_err("a's third stream");
    assert_exhausted(&refused, "MISSIVE_MAX_WATCHES_PER_CLIENT");
    // Client b: the server's last place, then the server is full.
    let b_sse = sse_as(&app, b, &id).await;
    assert_eq!(b_sse.status(), StatusCode::OK);
    let refused = grpc
        .watch_match(watch(b))
        .await
        .expect_err("the server is full");
    assert_exhausted(&refused, "MISSIVE_MAX_WATCHES)");
    // Reads are not watches: still served.
    assert_eq!(
        get_as(&app, b, &format!("/v1/matches/{id}")).await.status(),
        StatusCode::OK
    );
    // A closed stream gives its place back.
    drop(a_grpc);
    let deadline = Instant::now() + Duration::from_secs(10);
    let _b_grpc = loop {
        match grpc.watch_match(watch(b)).await {
            Ok(stream) => break stream,
            Err(status) => {
                assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
                assert!(Instant::now() < deadline, "the place was not given back");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    drop((a_sse, b_sse));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_trickling_its_headers_is_cut_off_after_the_header_timeout() {
    let app = spawn(&[("MISSIVE_HEADER_READ_TIMEOUT_SECS", "1")]).await;
    let addr = app.http_base.trim_start_matches("http://").to_owned();
    let stream = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let (mut reader, mut writer) = stream.into_split();
    let started = Instant::now();
    // Read until the server closes the connection.
    let closed = tokio::spawn(async move {
        let mut answer = Vec::new();
        let _ = reader.read_to_end(&mut answer).await;
        (started.elapsed(), answer)
    });
    // One byte every 100 ms, for up to 8 s: a header that never ends.
    let request = format!(
        "GET /healthz HTTP/1.1\r\nHost: {addr}\r\nX-Slow: {}",
        "a".repeat(200)
    );
    let mut sent = 0;
    for byte in request.bytes() {
        if closed.is_finished() || started.elapsed() > Duration::from_secs(8) {
            break;
        }
        if writer.write_all(&[byte]).await.is_err() {
            break;
        }
        sent += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (after, answer) = tokio::time::timeout(Duration::from_secs(5), closed)
        .await
        .expect("the server closed the connection")
        .expect("reader");
    assert!(
        after < Duration::from_secs(4),
        "closed after {after:?} ({sent} bytes sent)"
    );
    assert!(
        sent < request.len(),
        "the whole header was sent: not cut off"
    );
    let answer = String::from_utf8_lossy(&answer);
    assert!(!answer.contains("200 OK"), "{answer}");
    // The server goes on serving others.
    assert_eq!(
        get_as(&app, "192.0.2.50", "/healthz").await.status(),
        StatusCode::OK
    );
}

/// `GET path` from the one loopback address, with a player token or none.
async fn get_with(app: &TestApp, jwt: Option<&str>, path: &str) -> reqwest::Response {
    let mut request = app.http.get(app.url(path));
    if let Some(jwt) = jwt {
        request = request.bearer_auth(jwt);
    }
    request.send().await.expect("GET")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_in_player_is_limited_as_themselves_not_by_their_address() {
    let mut low = vec![
        ("MISSIVE_RATE_LIMIT_PER_SEC", "1"),
        ("MISSIVE_RATE_LIMIT_BURST", "4"),
    ];
    low.extend_from_slice(crate::players::PLAYER_TOKENS);
    let app = spawn(&low).await;
    // Ann, Bob and an anonymous client, all from 127.0.0.1.
    let ann = crate::players::player_token("ann");
    let bob = crate::players::player_token("bob");
    for n in 0..4 {
        let response = get_with(&app, Some(&ann), "/v1/me/matches").await;
        assert_eq!(response.status(), StatusCode::OK, "request {n}");
    }
    assert_429(
        get_with(&app, Some(&ann), "/v1/me/matches").await,
        "rate limit",
    )
    .await;
    // Ann's allowance is hers: Bob's and the address's are untouched.
    for n in 0..4 {
        let bob_answer = get_with(&app, Some(&bob), "/v1/me/matches").await;
        assert_eq!(bob_answer.status(), StatusCode::OK, "bob {n}");
        let anonymous = get_with(&app, None, "/v1/matches").await;
        assert_eq!(anonymous.status(), StatusCode::OK, "anonymous {n}");
    }
}
