//! Receivers that never answer hold up nobody else: with hundreds of deliveries queued for
//! blackholed receivers ahead of it, an honest receiver's "your turn" arrives about as fast as
//! on an idle worker, and the blackholed deliveries wait in the outbox, none lost and none
//! attempted twice at once. The delivery worker runs in this process on a store filled
//! directly, so that a queue of a thousand takes seconds to build.
//!
//! The figure in docs/OPERATIONS.md comes from the ignored test here:
//! `cargo test -p missive-server --test api webhook_pool::honest_delay_behind_a_thousand_blackholed -- --ignored --nocapture`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use chrono::Utc;
use missive_server::webhooks::{self, Settings};
use missive_store::{MatchId, MatchUpdate, NewEvent, NewMatch, Notification, Store};
use serde_json::json;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{Notify, watch};

use crate::clock::database;
use crate::helpers::{Backend, backend_tests};

/// The worker as a server runs it by default, but for a short poll and few attempts.
fn settings(timeout: Duration) -> Settings {
    Settings {
        retry_base: Duration::from_secs(5),
        retry_max: Duration::from_secs(3600),
        max_attempts: 3,
        poll: Duration::from_millis(50),
        timeout,
        allow_private: true,
        concurrency: 128,
        host_concurrency: 8,
    }
}

/// A receiver that answers 204 at once and notes when each request arrived.
struct Honest {
    url: String,
    arrivals: Arc<Mutex<Vec<(Instant, HeaderMap, String)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Honest {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Honest {
    async fn start() -> Honest {
        let arrivals: Arc<Mutex<Vec<(Instant, HeaderMap, String)>>> = Arc::default();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
        let seen = arrivals.clone();
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: HeaderMap, body: String| async move {
                seen.lock()
                    .expect("arrivals")
                    .push((Instant::now(), headers, body));
                StatusCode::NO_CONTENT
            }),
        );
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("receiver serves");
        });
        Honest {
            url,
            arrivals,
            task,
        }
    }

    /// How long after `since` the `n`-th request arrived; `None` if it did not within `within`.
    async fn nth_arrival(&self, n: usize, since: Instant, within: Duration) -> Option<Duration> {
        let deadline = since + within;
        loop {
            if let Some((at, _, _)) = self.arrivals.lock().expect("arrivals").get(n - 1) {
                return Some(at.saturating_duration_since(since));
            }
            if Instant::now() > deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

/// A receiver that takes connections and never says a word: every request to it times out.
/// Counts the connections it took.
struct Silent {
    url: String,
    accepted: Arc<Mutex<Vec<TcpStream>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Silent {
    async fn start(ip: &str) -> Silent {
        let listener = TcpListener::bind((ip, 0)).await.expect("bind");
        let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
        let accepted: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let held = accepted.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                held.lock().expect("held").push(stream);
            }
        });
        Silent {
            url,
            accepted,
            task,
        }
    }

    fn connections(&self) -> usize {
        self.accepted.lock().expect("held").len()
    }
}

/// A port that listens with the smallest backlog and never accepts: once the backlog is full,
/// connecting to it hangs. Listening while the returned listener lives.
async fn deaf(ip: &str) -> (String, TcpListener) {
    let socket = TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{ip}:0").parse().expect("address"))
        .expect("bind");
    let url = format!("http://{}/hook", socket.local_addr().expect("addr"));
    (url, socket.listen(1).expect("listen"))
}

/// A two-seat match whose seat 0 has its webhook at `url`.
async fn match_hooked_at(store: &Store, url: &str) -> MatchId {
    let id = uuid::Uuid::new_v4();
    let now = Utc::now();
    store
        .create_match(
            NewMatch {
                id,
                kind: "love-letter".to_owned(),
                config: json!({}),
                rules_version: 1,
                seat_count: 2,
                seed: [1; 32],
                seed_hash: [2; 32],
                turn_timeout_secs: None,
                turn_reminder_secs: None,
                created_at: now,
                start: MatchUpdate::default(),
                creator: None,
            },
            vec![event(None, 0)],
        )
        .await
        .expect("create");
    store
        .set_webhook(id, 0, url, [7; 32], now)
        .await
        .expect("set webhook");
    id
}

fn event(actor: Option<u8>, n: u64) -> NewEvent {
    NewEvent {
        kind: if actor.is_some() { "action" } else { "created" }.to_owned(),
        actor,
        request_id: actor.map(|_| format!("r{n}")),
        payload: json!({ "n": n }),
        at: Utc::now(),
    }
}

/// Appends `n` events to the match, each making seat 0 awaited: `n` notifications queued.
async fn queue(store: &Store, id: MatchId, n: u64) {
    for i in 1..=n {
        store
            .append(
                id,
                i,
                vec![event(Some(1), i)],
                MatchUpdate {
                    notify: vec![Notification {
                        seat: 0,
                        body: format!("{{\"match\":\"{id}\",\"n\":{i}}}"),
                    }],
                    ..MatchUpdate::default()
                },
            )
            .await
            .expect("append");
    }
}

/// Queues `n` notifications to `url`, spread over matches of `per_match` each, appended
/// concurrently.
async fn queue_many(store: &Store, url: &str, n: u64, per_match: u64) -> Vec<MatchId> {
    let mut tasks = tokio::task::JoinSet::new();
    let mut ids = Vec::new();
    let mut left = n;
    while left > 0 {
        let count = left.min(per_match);
        left -= count;
        let id = match_hooked_at(store, url).await;
        ids.push(id);
        let store = store.clone();
        tasks.spawn(async move { queue(&store, id, count).await });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("queued");
    }
    ids
}

/// One honest notification, queued now: when its append returned.
async fn queue_honest(store: &Store, receiver: &Honest, wake: &Notify) -> Instant {
    let id = match_hooked_at(store, &receiver.url).await;
    queue(store, id, 1).await;
    let queued = Instant::now();
    // What the service does after an append that queued a notification.
    wake.notify_one();
    queued
}

/// The delivery worker on `store`; stops when the sender is dropped or sends true.
fn worker(store: &Store, settings: Settings) -> (Arc<Notify>, watch::Sender<bool>) {
    let wake = Arc::new(Notify::new());
    let (stop_tx, stop) = watch::channel(false);
    tokio::spawn(webhooks::run(store.clone(), settings, wake.clone(), stop));
    (wake, stop_tx)
}

/// What the blackholed deliveries of `matches` look like in the outbox: (rows, rows delivered
/// or given up, most attempts of a row).
async fn outbox(store: &Store, matches: &[MatchId]) -> (usize, usize, u32) {
    let (mut rows, mut settled, mut attempts) = (0, 0, 0);
    for &id in matches {
        for record in store.deliveries(id, None, 10_000).await.expect("records") {
            rows += 1;
            if record.next_attempt_at.is_none() {
                settled += 1;
            }
            attempts = attempts.max(record.attempts);
        }
    }
    (rows, settled, attempts)
}

async fn an_honest_receiver_is_not_held_up_by_blackholed_ones(backend: Backend) {
    const BLACKHOLED: u64 = 300;
    let (url, _db, _dir) = database(backend).await;
    let store = Store::connect(&url, crate::helpers::patient_store())
        .await
        .expect("store");
    // Different addresses, so different hosts: 127.0.0.0/8 is all loopback.
    let honest = Honest::start().await;
    let silent = Silent::start("127.0.0.2").await;
    let (deaf_url, _deaf) = deaf("127.0.0.3").await;
    let timeout = Duration::from_secs(5);
    let settings = settings(timeout);
    let host_concurrency = settings.host_concurrency;
    let mut blackholed = queue_many(&store, &silent.url, BLACKHOLED / 2, 50).await;
    blackholed.extend(queue_many(&store, &deaf_url, BLACKHOLED / 2, 50).await);
    let started = Instant::now();
    let (wake, stop) = worker(&store, settings);
    // The worker is busy with the blackholed deliveries when the honest one comes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let queued = queue_honest(&store, &honest, &wake).await;
    let delay = honest
        .nth_arrival(1, queued, Duration::from_secs(30))
        .await
        .expect("the honest receiver heard within 30 s");
    assert!(
        delay < Duration::from_secs(2),
        "the honest receiver heard {delay:?} after its notification was queued, behind \
         {BLACKHOLED} blackholed deliveries"
    );
    {
        let arrivals = honest.arrivals.lock().expect("arrivals");
        let (_, headers, body) = &arrivals[0];
        assert!(body.contains("\"n\":1"), "{body}");
        assert!(headers.contains_key(webhooks::SIGNATURE_HEADER));
        assert!(headers.contains_key(webhooks::DELIVERY_HEADER));
    }
    // No blackholed attempt has timed out yet: at most the host's bound of them was made to
    // the silent receiver, and every blackholed delivery is still in the outbox, pending.
    assert!(
        started.elapsed() < timeout,
        "the checks below assume no attempt has timed out yet"
    );
    let connections = silent.connections();
    assert!(
        (1..=host_concurrency).contains(&connections),
        "{connections} connections to one host, bound {host_concurrency}"
    );
    let (rows, settled, attempts) = outbox(&store, &blackholed).await;
    assert_eq!(
        rows, BLACKHOLED as usize,
        "every blackholed delivery is queued"
    );
    assert_eq!(settled, 0, "none delivered or given up");
    assert_eq!(attempts, 0, "none attempted to the end yet");
    let _ = stop.send(true);
}

backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    an_honest_receiver_is_not_held_up_by_blackholed_ones:
    Postgres => an_honest_receiver_is_not_held_up_by_blackholed_ones_on_postgres,
    Citus => an_honest_receiver_is_not_held_up_by_blackholed_ones_on_citus,
    Sqlite => an_honest_receiver_is_not_held_up_by_blackholed_ones_on_sqlite,
}

/// The figure in docs/OPERATIONS.md: an honest receiver's delay on an idle worker, then behind
/// a thousand blackholed deliveries (half to a receiver that takes connections and never
/// answers, half to one that never takes them), with the default timeout and bounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run it with --ignored --nocapture"]
async fn honest_delay_behind_a_thousand_blackholed() {
    const BLACKHOLED: u64 = 1000;
    let (url, _db, _dir) = database(Backend::Postgres).await;
    let store = Store::connect(&url, crate::helpers::patient_store())
        .await
        .expect("store");
    let honest = Honest::start().await;
    let silent = Silent::start("127.0.0.2").await;
    let (deaf_url, _deaf) = deaf("127.0.0.3").await;
    let settings = Settings {
        poll: Duration::from_secs(1),
        ..settings(Duration::from_secs(10))
    };
    let (wake, stop) = worker(&store, settings);
    let queued = queue_honest(&store, &honest, &wake).await;
    let idle = honest
        .nth_arrival(1, queued, Duration::from_secs(60))
        .await
        .expect("heard when idle");
    let started = Instant::now();
    queue_many(&store, &silent.url, BLACKHOLED / 2, 100).await;
    queue_many(&store, &deaf_url, BLACKHOLED / 2, 100).await;
    let filled = started.elapsed();
    wake.notify_one();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let queued = queue_honest(&store, &honest, &wake).await;
    let loaded = honest
        .nth_arrival(2, queued, Duration::from_secs(600))
        .await
        .expect("heard behind the blackholed deliveries");
    println!(
        "honest receiver's delay: idle {:.1} ms; behind {BLACKHOLED} blackholed deliveries \
         {:.1} ms (queue filled in {:.1} s; {} connections held by the silent receiver)",
        idle.as_secs_f64() * 1e3,
        loaded.as_secs_f64() * 1e3,
        filled.as_secs_f64(),
        silent.connections(),
    );
    let _ = stop.send(true);
}
