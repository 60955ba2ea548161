//! "Your turn" webhooks end to end: a local receiver on 127.0.0.1 gets signed notifications
//! when its seat becomes awaited, and a reminder before its deadline when the match sets one;
//! failing receivers get retries with growing gaps and the delivery is recorded; bad
//! registrations are refused; a removed webhook hears nothing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use hmac::{Hmac, Mac};
use missive_proto::v1 as pb;
use missive_proto::v1::missive_client::MissiveClient;
use serde_json::Value;
use sha2::Sha256;
use tonic::Code;
use tonic::transport::Channel;

use crate::helpers::{
    Backend, Lcg, Options, TestApp, act_with, authed, backend_tests, create_match, join_as, leave,
    love_letter_options, seat_act, seat_view, spawn_app_with,
};

/// Short back-offs and polls so retries happen within a test.
const FAST: Options = Options {
    allow_fixed_deck: false,
    capture_log: false,
    env: &[
        ("MISSIVE_WEBHOOK_POLL_MS", "40"),
        ("MISSIVE_WEBHOOK_RETRY_BASE_MS", "300"),
        ("MISSIVE_WEBHOOK_MAX_ATTEMPTS", "4"),
        ("MISSIVE_WEBHOOK_TIMEOUT_SECS", "2"),
    ],
};
const RETRY_BASE: Duration = Duration::from_millis(300);

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Hit {
    at: Instant,
    headers: HeaderMap,
    body: String,
}

#[derive(Debug, Clone)]
struct ReceiverState {
    hits: Arc<Mutex<Vec<Hit>>>,
    /// Requests still to answer 500 before answering 204.
    failures: Arc<AtomicUsize>,
}

/// A webhook receiver on a free local port.
#[derive(Debug)]
struct Receiver {
    url: String,
    state: ReceiverState,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    /// A receiver that answers 500 to its first `failures` requests, then 204.
    async fn start(failures: usize) -> Receiver {
        async fn hook(
            State(state): State<ReceiverState>,
            headers: HeaderMap,
            body: String,
        ) -> StatusCode {
            state.hits.lock().expect("hits").push(Hit {
                at: Instant::now(),
                headers,
                body,
            });
            let failing = state
                .failures
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            if failing {
                StatusCode::INTERNAL_SERVER_ERROR
            } else {
                StatusCode::NO_CONTENT
            }
        }
        let state = ReceiverState {
            hits: Arc::default(),
            failures: Arc::new(AtomicUsize::new(failures)),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/hooks/turn", listener.local_addr().expect("addr"));
        let app = axum::Router::new()
            .route("/hooks/turn", axum::routing::post(hook))
            .with_state(state.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("receiver serves");
        });
        Receiver { url, state, task }
    }

    fn hits(&self) -> Vec<Hit> {
        self.state.hits.lock().expect("hits").clone()
    }

    /// Waits until at least `n` requests arrived; panics after `within`.
    async fn wait_for(&self, n: usize, within: Duration) -> Vec<Hit> {
        let deadline = Instant::now() + within;
        loop {
            let hits = self.hits();
            if hits.len() >= n {
                return hits;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {n} webhook requests arrived within {within:?}",
                hits.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Checks the signature headers of a hit against the secret, and returns the JSON body.
fn verify(hit: &Hit, secret_hex: &str) -> Value {
    let timestamp = hit.headers["x-missive-timestamp"].to_str().expect("text");
    let sent: i64 = timestamp.parse().expect("unix seconds");
    let now = chrono::Utc::now().timestamp();
    assert!((now - sent).abs() < 60, "timestamp {sent} is not recent");
    let secret = hex::decode(secret_hex).expect("hex secret");
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&secret).expect("key");
    mac.update(format!("{timestamp}.{}", hit.body).as_bytes());
    let expected = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    assert_eq!(
        hit.headers["x-missive-signature"].to_str().expect("text"),
        expected,
        "the signature checks out"
    );
    assert_eq!(hit.headers["content-type"], "application/json");
    serde_json::from_str(&hit.body).expect("a JSON body")
}

async fn create(client: &mut MissiveClient<Channel>) -> String {
    create_match(client, love_letter_options(2)).await
}

async fn join(client: &mut MissiveClient<Channel>, match_id: &str, seat: u32) -> String {
    join_as(client, match_id, &format!("player {seat}"), Some(seat))
        .await
        .seat_token
}

async fn set_webhook(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    token: &str,
    url: &str,
) -> Result<String, tonic::Status> {
    client
        .set_webhook(authed(
            pb::SetWebhookRequest {
                match_id: match_id.to_owned(),
                url: url.to_owned(),
                ..Default::default()
            },
            token,
        ))
        .await
        .map(|r| r.into_inner().secret)
}

async fn get_webhook(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    token: &str,
) -> pb::GetWebhookResponse {
    client
        .get_webhook(authed(
            pb::GetWebhookRequest {
                match_id: match_id.to_owned(),
            },
            token,
        ))
        .await
        .expect("get webhook")
        .into_inner()
}

/// Plays random legal actions from the match's current state (just started) until `seat` has
/// been newly awaited `times` times, counting the start; returns the versions at which it was.
/// Stops early if the match ends.
async fn play_until_awaited(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    tokens: &[String],
    seat: u32,
    times: usize,
) -> Vec<u64> {
    let mut rng = Lcg(7);
    let start = seat_view(client, match_id, &tokens[0]).await;
    let mut awaited = Vec::new();
    if start.awaiting.contains(&seat) {
        awaited.push(start.version);
    }
    let mut before = start.awaiting;
    for _ in 0..500 {
        if awaited.len() >= times {
            break;
        }
        let Some(&mover) = before.first() else { break };
        let mine = seat_view(client, match_id, &tokens[mover as usize]).await;
        let action = mine.legal_actions[rng.below(mine.legal_actions.len())].clone();
        let after = act_with(
            client,
            seat_act(match_id, mover, action, None),
            &tokens[mover as usize],
        )
        .await
        .view
        .expect("a view");
        if after.awaiting.contains(&seat) && !before.contains(&seat) {
            awaited.push(after.version);
        }
        if after.outcome.is_some() {
            break;
        }
        before = after.awaiting;
    }
    awaited
}

async fn a_seat_is_notified_each_time_its_turn_comes(backend: Backend) {
    let app = spawn_app_with(backend, FAST).await;
    let mut client = app.grpc().await;
    let receiver = Receiver::start(0).await;
    let match_id = create(&mut client).await;
    let first = join(&mut client, &match_id, 0).await;
    let secret = set_webhook(&mut client, &match_id, &first, &receiver.url)
        .await
        .expect("a local URL is accepted");
    assert_eq!(secret.len(), 64, "a hex 32-byte key");
    assert_eq!(
        get_webhook(&mut client, &match_id, &first).await.url,
        receiver.url
    );
    let second = join(&mut client, &match_id, 1).await;
    let tokens = [first, second];
    let versions = play_until_awaited(&mut client, &match_id, &tokens, 0, 3).await;
    assert!(!versions.is_empty(), "seat 0 never got a turn");
    let hits = receiver
        .wait_for(versions.len(), Duration::from_secs(15))
        .await;
    // Let any stray extra request arrive before counting.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let hits_now = receiver.hits();
    assert_eq!(hits_now.len(), versions.len(), "one request per turn");
    let mut got = Vec::new();
    for hit in &hits {
        let body = verify(hit, &secret);
        assert_eq!(body["type"], "your_turn");
        assert_eq!(body["matchId"], match_id.as_str());
        assert_eq!(body["seat"], 0, "only seat 0 registered");
        let version = body["version"].as_u64().expect("version");
        assert!(body["at"].as_str().is_some_and(|t| t.ends_with('Z')));
        assert_eq!(
            hit.headers["x-missive-delivery"].to_str().expect("text"),
            format!("{match_id}/{version}/0")
        );
        // Nothing beyond the seat and the version: no cards, no state.
        assert_eq!(body.as_object().map(|o| o.len()), Some(5), "{body}");
        got.push(version);
    }
    got.sort_unstable();
    assert_eq!(got, versions);
    // Each delivery is recorded.
    for &version in &versions {
        let d = wait_for_record(&mut client, &match_id, &tokens[0], version, |d| {
            d.delivered_at.is_some()
        })
        .await;
        assert_eq!((d.attempts, d.last_status), (1, Some(204)));
        assert_eq!(d.next_attempt_at, None);
        assert_eq!(d.url, receiver.url);
    }
    let record = get_webhook(&mut client, &match_id, &tokens[0]).await;
    assert_eq!(record.deliveries.len(), versions.len());
    let seat1 = get_webhook(&mut client, &match_id, &tokens[1]).await;
    assert_eq!(seat1.url, "");
    assert!(seat1.deliveries.is_empty());
}

backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    a_seat_is_notified_each_time_its_turn_comes:
    Postgres => a_seat_is_notified_each_time_its_turn_comes_on_postgres,
    Citus => a_seat_is_notified_each_time_its_turn_comes_on_citus,
    Sqlite => a_seat_is_notified_each_time_its_turn_comes_on_sqlite,
}

/// A started match whose seat 0 posts to `receiver`; plays until seat 0's first notification
/// is due and returns the match id, its tokens, the secret and that version.
async fn first_turn_of_seat_0(
    client: &mut MissiveClient<Channel>,
    receiver: &Receiver,
) -> (String, Vec<String>, String, u64) {
    let match_id = create(client).await;
    let first = join(client, &match_id, 0).await;
    let secret = set_webhook(client, &match_id, &first, &receiver.url)
        .await
        .expect("set webhook");
    let second = join(client, &match_id, 1).await;
    let tokens = vec![first, second];
    let versions = play_until_awaited(client, &match_id, &tokens, 0, 1).await;
    let version = *versions.first().expect("seat 0 gets a turn");
    (match_id, tokens, secret, version)
}

async fn a_failing_receiver_gets_retries_with_growing_gaps(backend: Backend) {
    let app = spawn_app_with(backend, FAST).await;
    let mut client = app.grpc().await;
    // Fails three times, then accepts: delivered at the fourth and last allowed attempt.
    let flaky = Receiver::start(3).await;
    let (match_id, tokens, secret, version) = first_turn_of_seat_0(&mut client, &flaky).await;
    let hits = flaky.wait_for(4, Duration::from_secs(20)).await;
    let gaps: Vec<Duration> = hits.windows(2).map(|w| w[1].at - w[0].at).collect();
    assert!(
        gaps[0] >= RETRY_BASE.mul_f64(0.7),
        "first retry too soon: {gaps:?}"
    );
    assert!(
        gaps[1] > gaps[0] && gaps[2] > gaps[1],
        "gaps grow: {gaps:?}"
    );
    for hit in &hits {
        let body = verify(hit, &secret);
        assert_eq!(body["version"], version);
        assert_eq!(hit.body, hits[0].body, "every retry posts the same body");
        assert_eq!(
            hit.headers["x-missive-delivery"],
            hits[0].headers["x-missive-delivery"]
        );
    }
    let delivered = wait_for_record(&mut client, &match_id, &tokens[0], version, |d| {
        d.delivered_at.is_some()
    })
    .await;
    assert_eq!(delivered.attempts, 4);
    assert_eq!(delivered.last_status, Some(204));
    assert_eq!(delivered.last_error, "");
    assert_eq!(delivered.next_attempt_at, None);

    // A receiver that never accepts is given up after the attempt limit, with the record kept.
    let broken = Receiver::start(usize::MAX).await;
    let (match_id, tokens, _, version) = first_turn_of_seat_0(&mut client, &broken).await;
    broken.wait_for(4, Duration::from_secs(20)).await;
    let given_up = wait_for_record(&mut client, &match_id, &tokens[0], version, |d| {
        d.next_attempt_at.is_none()
    })
    .await;
    assert_eq!(given_up.attempts, 4);
    assert_eq!(given_up.delivered_at, None);
    assert_eq!(given_up.last_status, Some(500));
    assert!(given_up.last_error.contains("500"), "{given_up:?}");
    // Longer than the next back-off would have been: no fifth attempt.
    tokio::time::sleep(RETRY_BASE * 10).await;
    assert_eq!(broken.hits().len(), 4);
}

/// Polls GetWebhook until the delivery of `version` satisfies `done`.
async fn wait_for_record(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    token: &str,
    version: u64,
    done: impl Fn(&pb::WebhookDelivery) -> bool,
) -> pb::WebhookDelivery {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let record = get_webhook(client, match_id, token).await;
        if let Some(d) = record.deliveries.iter().find(|d| d.version == version)
            && done(d)
        {
            return d.clone();
        }
        assert!(Instant::now() < deadline, "not recorded: {record:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A match whose seats have 3 s to act and a reminder 2 s before the end: seat 0's receiver
/// hears "your turn" when the seat becomes awaited (at once, or after seat 1's turn times out)
/// and the reminder a second later, signed like any notification and recorded with its type.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seat_is_reminded_before_its_deadline() {
    const REMIND: Options = Options {
        allow_fixed_deck: false,
        capture_log: false,
        env: &[
            ("MISSIVE_WEBHOOK_POLL_MS", "40"),
            ("MISSIVE_TURN_POLL_MS", "40"),
        ],
    };
    let app = spawn_app_with(Backend::Postgres, REMIND).await;
    let mut client = app.grpc().await;
    let receiver = Receiver::start(0).await;
    let match_id = create_match(
        &mut client,
        pb::CreateMatchRequest {
            turn_timeout_secs: Some(3),
            turn_reminder_secs: Some(2),
            ..love_letter_options(2)
        },
    )
    .await;
    let first = join(&mut client, &match_id, 0).await;
    let secret = set_webhook(&mut client, &match_id, &first, &receiver.url)
        .await
        .expect("a local URL is accepted");
    let second = join(&mut client, &match_id, 1).await;
    let info = seat_view(&mut client, &match_id, &second).await.r#match;
    assert_eq!(info.and_then(|m| m.turn_reminder_secs), Some(2));

    let hits = receiver.wait_for(2, Duration::from_secs(10)).await;
    let bodies: Vec<Value> = hits.iter().map(|hit| verify(hit, &secret)).collect();
    assert_eq!(bodies[0]["type"], "your_turn", "{bodies:?}");
    assert_eq!(bodies[1]["type"], "turn_reminder", "{bodies:?}");
    let reminder = &bodies[1];
    let version = reminder["version"].as_u64().expect("version");
    assert_eq!(version, bodies[0]["version"].as_u64().expect("version"));
    assert_eq!(reminder["seat"], 0);
    let time = |field: &str| {
        chrono::DateTime::parse_from_rfc3339(reminder[field].as_str().expect("a time"))
            .expect("rfc 3339")
    };
    assert_eq!(time("dueAt") - time("at"), chrono::Duration::seconds(2));
    assert_eq!(
        hits[1].headers["x-missive-delivery"]
            .to_str()
            .expect("text"),
        format!("{match_id}/{version}/0/turn_reminder")
    );
    let record = get_webhook(&mut client, &match_id, &first).await;
    let types: Vec<_> = record
        .deliveries
        .iter()
        .filter(|d| d.version == version)
        .map(|d| d.r#type.as_str())
        .collect();
    assert_eq!(types, ["turn_reminder", "your_turn"], "{record:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reminder_needs_a_deadline_it_comes_before() {
    let app = spawn_app_with(Backend::Sqlite, FAST).await;
    let mut client = app.grpc().await;
    for (timeout, reminder) in [(None, 5), (Some(60), 0), (Some(60), 60), (Some(60), 61)] {
        let refused = client
            .create_match(pb::CreateMatchRequest {
                turn_timeout_secs: timeout,
                turn_reminder_secs: Some(reminder),
                ..love_letter_options(2)
            })
            .await
            .expect_err("refused");
        assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
        assert!(
            refused.message().contains("turnReminderSecs"),
            "{refused:?}"
        );
    }
    let listed = client
        .list_matches(pb::ListMatchesRequest::default())
        .await
        .expect("list")
        .into_inner();
    assert!(listed.matches.is_empty(), "nothing was created: {listed:?}");
}

backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    a_failing_receiver_gets_retries_with_growing_gaps:
    Postgres => a_failing_receiver_gets_retries_with_growing_gaps_on_postgres,
    Citus => a_failing_receiver_gets_retries_with_growing_gaps_on_citus,
    Sqlite => a_failing_receiver_gets_retries_with_growing_gaps_on_sqlite,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_webhooks_cannot_point_inside_the_servers_network() {
    let app = spawn_app_with(
        Backend::Sqlite,
        Options {
            allow_fixed_deck: false,
            capture_log: false,
            env: &[("MISSIVE_WEBHOOK_ALLOW_PRIVATE", "false")],
        },
    )
    .await;
    let mut client = app.grpc().await;
    let match_id = create(&mut client).await;
    let token = join(&mut client, &match_id, 0).await;
    for url in [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "http://[::1]:9/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.7/hook",
    ] {
        let refused = set_webhook(&mut client, &match_id, &token, url)
            .await
            .expect_err(url);
        assert_eq!(refused.code(), Code::InvalidArgument, "{url}: {refused:?}");
        assert!(
            refused.message().contains("public host"),
            "{url}: {refused:?}"
        );
        assert_eq!(get_webhook(&mut client, &match_id, &token).await.url, "");
    }
    // A public host name is accepted (its addresses are checked again at each delivery), over
    // TLS too in the default build.
    let secure = set_webhook(
        &mut client,
        &match_id,
        &token,
        "https://game.example/hooks/turn",
    )
    .await
    .map(|_| ());
    assert_eq!(secure.is_ok(), cfg!(feature = "webhook-tls"), "{secure:?}");
    let public = "http://game.example/hooks/turn";
    set_webhook(&mut client, &match_id, &token, public)
        .await
        .expect("a public host");
    assert_eq!(
        get_webhook(&mut client, &match_id, &token).await.url,
        public
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_inside_the_network_is_not_delivered_once_the_guard_is_on() {
    // Registered while the server allowed loopback receivers...
    let mut app = spawn_app_with(Backend::Sqlite, FAST).await;
    let mut client = app.grpc().await;
    let receiver = Receiver::start(0).await;
    let match_id = create(&mut client).await;
    let first = join(&mut client, &match_id, 0).await;
    set_webhook(&mut client, &match_id, &first, &receiver.url)
        .await
        .expect("loopback is allowed here");
    // ...then the server comes back refusing them.
    app.set_env("MISSIVE_WEBHOOK_ALLOW_PRIVATE", "false");
    app.restart().await;
    let mut client = app.grpc().await;
    let second = join(&mut client, &match_id, 1).await;
    let tokens = [first, second];
    let versions = play_until_awaited(&mut client, &match_id, &tokens, 0, 1).await;
    assert!(!versions.is_empty(), "seat 0 never got a turn");
    let start = Instant::now();
    let record = loop {
        let record = get_webhook(&mut client, &match_id, &tokens[0]).await;
        if record.deliveries.iter().any(|d| d.attempts > 0) {
            break record;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{record:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let tried = record
        .deliveries
        .iter()
        .find(|d| d.attempts > 0)
        .expect("an attempt");
    assert!(tried.last_error.contains("public host"), "{tried:?}");
    assert_eq!(
        tried.next_attempt_at, None,
        "given up: it can never succeed"
    );
    assert_eq!(tried.delivered_at, None);
    assert!(receiver.hits().is_empty(), "{:?}", receiver.hits());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_webhook_registrations_are_refused_and_change_nothing() {
    let app = spawn_app_with(Backend::Sqlite, FAST).await;
    let mut client = app.grpc().await;
    let match_id = create(&mut client).await;
    let token = join(&mut client, &match_id, 0).await;
    let good = "http://game.example/hooks/turn";
    let long = format!("http://game.example/{}", "x".repeat(2048));
    for (url, why) in [
        ("ftp://game.example/hook", "not http"),
        ("/hooks/turn", "relative"),
        ("http://user:pw@game.example/hook", "credentials"),
        ("http://game.example/hook#x", "fragment"),
        (long.as_str(), "too long"),
    ] {
        let refused = set_webhook(&mut client, &match_id, &token, url)
            .await
            .expect_err(why);
        assert_eq!(refused.code(), Code::InvalidArgument, "{why}: {refused:?}");
    }
    let anonymous = client
        .set_webhook(pb::SetWebhookRequest {
            match_id: match_id.clone(),
            url: good.into(),
            ..Default::default()
        })
        .await
        .expect_err("no token");
    assert_eq!(anonymous.code(), Code::Unauthenticated);
    let forged = set_webhook(&mut client, &match_id, &"ab".repeat(32), good)
        .await
        .expect_err("a forged token");
    assert_eq!(forged.code(), Code::Unauthenticated);
    let other = create(&mut client).await;
    let wrong_match = set_webhook(&mut client, &other, &token, good)
        .await
        .expect_err("a token of another match");
    assert_eq!(wrong_match.code(), Code::Unauthenticated);
    let bad_id = set_webhook(&mut client, "not-a-uuid", &token, good)
        .await
        .expect_err("a bad id");
    assert_eq!(bad_id.code(), Code::InvalidArgument);
    let missing = set_webhook(&mut client, &uuid::Uuid::new_v4().to_string(), &token, good)
        .await
        .expect_err("no such match");
    assert_eq!(missing.code(), Code::NotFound);
    assert_eq!(get_webhook(&mut client, &match_id, &token).await.url, "");
    // Over HTTP: a bad URL is a 400, a body naming another match too, and nothing is stored.
    let put = |body: Value| {
        app.http
            .put(app.url(&format!("/v1/matches/{match_id}/webhook")))
            .bearer_auth(&token)
            .json(&body)
            .send()
    };
    let response = put(serde_json::json!({ "url": "gopher://x" }))
        .await
        .expect("http");
    assert_eq!(response.status(), 400);
    let response = put(serde_json::json!({ "matchId": other, "url": good }))
        .await
        .expect("http");
    assert_eq!(response.status(), 400);
    assert_eq!(get_webhook(&mut client, &match_id, &token).await.url, "");
}

/// Registers over HTTP, removes over HTTP, and checks no notification follows; a seat's
/// webhook also goes when its player leaves the open match.
async fn a_removed_webhook_hears_nothing(app: &TestApp) {
    let mut client = app.grpc().await;
    let receiver = Receiver::start(0).await;
    let match_id = create(&mut client).await;
    let route = app.url(&format!("/v1/matches/{match_id}/webhook"));

    // A player who leaves an open match takes their webhook along.
    let leaver = join(&mut client, &match_id, 0).await;
    set_webhook(&mut client, &match_id, &leaver, &receiver.url)
        .await
        .expect("set");
    leave(&mut client, &match_id, &leaver).await;
    let first = join(&mut client, &match_id, 0).await;
    assert_eq!(get_webhook(&mut client, &match_id, &first).await.url, "");

    let set: Value = app
        .http
        .put(&route)
        .bearer_auth(&first)
        .json(&serde_json::json!({ "url": receiver.url }))
        .send()
        .await
        .expect("put")
        .json()
        .await
        .expect("json");
    let secret = set["secret"].as_str().expect("secret");
    assert_eq!(secret.len(), 64);
    let again = set_webhook(&mut client, &match_id, &first, &receiver.url)
        .await
        .expect("replace");
    assert_ne!(again, secret, "each registration draws a new secret");
    let got: Value = app
        .http
        .get(&route)
        .bearer_auth(&first)
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    assert_eq!(got["url"], receiver.url.as_str());
    let removed = app
        .http
        .delete(&route)
        .bearer_auth(&first)
        .send()
        .await
        .expect("delete");
    assert_eq!(removed.status(), 200);
    let second = join(&mut client, &match_id, 1).await;
    let tokens = [first, second];
    let versions = play_until_awaited(&mut client, &match_id, &tokens, 0, 2).await;
    assert!(!versions.is_empty(), "seat 0 never got a turn");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(receiver.hits().is_empty(), "{:?}", receiver.hits());
    let record = get_webhook(&mut client, &match_id, &tokens[0]).await;
    assert_eq!(record.url, "");
    assert!(record.deliveries.is_empty(), "{record:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_webhook_hears_nothing_on_postgres() {
    let app = spawn_app_with(Backend::Postgres, FAST).await;
    a_removed_webhook_hears_nothing(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_webhook_hears_nothing_on_sqlite() {
    let app = spawn_app_with(Backend::Sqlite, FAST).await;
    a_removed_webhook_hears_nothing(&app).await;
}
