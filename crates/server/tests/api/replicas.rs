//! Several servers on one PostgreSQL database, a lost database, and a crash: watchers hear of
//! other replicas' actions promptly, racing acts serialise, a server cut off from the database
//! fails fast and recovers by itself, and a killed server loses nothing it acknowledged.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use missive_proto::v1 as pb;
use missive_proto::v1::missive_client::MissiveClient;
use missive_server::games::Registry;
use missive_store::{ChainCheck, Store, StoreOptions};
use sqlx::Connection;
use tokio::sync::mpsc;
use tonic::transport::Channel;
use tonic::{Code, Status};

use crate::grpc::create_and_join;
use crate::helpers::{
    Backend, Lcg, PgProxy, TestApp, audit_log, authed, backend_tests, spawn_app,
    spawn_replica_with, two_replicas, two_replicas_with,
};

/// One action to take: the awaited seat and its request (a fresh request id, no pinned version).
#[derive(Debug, Clone)]
struct Move {
    seat: usize,
    version: u64,
    request: pb::ActRequest,
}

async fn spectator_view(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
) -> Result<pb::MatchView, Status> {
    Ok(client
        .get_view(pb::GetViewRequest {
            match_id: match_id.to_owned(),
            seat: None,
        })
        .await?
        .into_inner()
        .view
        .expect("a view"))
}

/// The awaited seat's next action, chosen with `rng` among its legal ones; `None` once the
/// match is over.
async fn next_move(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    tokens: &[String],
    rng: &mut Lcg,
) -> Result<Option<Move>, Status> {
    let spectator = spectator_view(client, match_id).await?;
    if spectator.outcome.is_some() {
        return Ok(None);
    }
    let seat = spectator.awaiting[0] as usize;
    let mine = client
        .get_view(authed(
            pb::GetViewRequest {
                match_id: match_id.to_owned(),
                seat: None,
            },
            &tokens[seat],
        ))
        .await?
        .into_inner()
        .view
        .expect("a view");
    let action = mine.legal_actions[rng.below(mine.legal_actions.len())].clone();
    Ok(Some(Move {
        seat,
        version: mine.version,
        request: pb::ActRequest {
            match_id: match_id.to_owned(),
            action: Some(action),
            request_id: uuid::Uuid::new_v4().to_string(),
            expected_version: None,
            seat: None,
            ..Default::default()
        },
    }))
}

async fn act(
    client: &mut MissiveClient<Channel>,
    request: pb::ActRequest,
    token: &str,
) -> Result<pb::ActResponse, Status> {
    Ok(client.act(authed(request, token)).await?.into_inner())
}

/// Plays the match to its end over `client`, returning the request ids acknowledged.
async fn play_to_the_end(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    tokens: &[String],
    rng: &mut Lcg,
) -> Vec<String> {
    let mut acked = Vec::new();
    while let Some(mv) = next_move(client, match_id, tokens, rng)
        .await
        .expect("view")
    {
        act(client, mv.request.clone(), &tokens[mv.seat])
            .await
            .expect("a listed legal action is accepted");
        acked.push(mv.request.request_id);
    }
    acked
}

/// Every watch update's version and when it arrived.
/// A match created and joined through `a`, and a watch of it through `b` from the version `b`
/// reads now: the match's id, its seat tokens, that version and the watch's updates.
async fn watched_match(
    a: &mut MissiveClient<Channel>,
    b: &mut MissiveClient<Channel>,
) -> (
    String,
    Vec<String>,
    u64,
    mpsc::UnboundedReceiver<(u64, Instant)>,
) {
    let (match_id, tokens) = create_and_join(a, 2).await;
    let start = spectator_view(b, &match_id).await.expect("view").version;
    let updates = watch(b, &match_id, start).await;
    (match_id, tokens, start, updates)
}

async fn watch(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    after_version: u64,
) -> mpsc::UnboundedReceiver<(u64, Instant)> {
    let mut stream = client
        .watch_match(pb::WatchMatchRequest {
            match_id: match_id.to_owned(),
            after_version,
            seat: None,
        })
        .await
        .expect("watch")
        .into_inner();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            match stream.message().await {
                Ok(Some(update)) => {
                    if tx.send((update.version, Instant::now())).is_err() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(status) => {
                    eprintln!("the watch stream failed: {status:?}");
                    break;
                }
            }
        }
    });
    rx
}

/// The next watch update, within a bound.
async fn next_update(updates: &mut mpsc::UnboundedReceiver<(u64, Instant)>) -> (u64, Instant) {
    tokio::time::timeout(Duration::from_secs(10), updates.recv())
        .await
        .expect("the watcher hears of the update")
        .expect("the stream is open")
}

/// Straight to the database, not through any server.
async fn store_of(app: &TestApp) -> Store {
    Store::connect(
        app.database_url(),
        StoreOptions {
            notify: false,
            ..StoreOptions::default()
        },
    )
    .await
    .expect("the store")
}

/// The stored log holds each acknowledged request exactly once and nothing else, gap-free from
/// 1, and its hash chain verifies.
async fn assert_log_holds_exactly(store: &Store, match_id: &str, acked: &[String]) {
    let id = match_id.parse().expect("uuid");
    let events = store.read_events(id, 0, u32::MAX).await.expect("events");
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    let expected: Vec<u64> = (1..=events.len() as u64).collect();
    assert_eq!(seqs, expected, "gap-free from 1");
    let mut held: HashMap<&str, usize> = HashMap::new();
    for event in &events {
        if let Some(request) = &event.request_id {
            *held.entry(request).or_default() += 1;
        }
    }
    for request in acked {
        assert_eq!(
            held.get(request.as_str()),
            Some(&1),
            "acknowledged request {request} is in the log exactly once"
        );
    }
    assert_eq!(
        held.values().sum::<usize>(),
        acked.len(),
        "every request in the log was acknowledged"
    );
    assert_eq!(
        store.verify_chain(id).await.expect("verify"),
        ChainCheck::Valid {
            events: events.len() as u64
        }
    );
}

fn verify_audit(match_id: &str, log: &pb::AuditLog) {
    let id = match_id.parse().expect("uuid");
    missive_server::audit::verify(&Registry::new(), id, log).expect("the exported log verifies");
}

fn median_and_max(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    (samples[samples.len() / 2], samples[samples.len() - 1])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_on_one_replica_sees_actions_made_on_another_promptly() {
    // The watcher's own timer is a minute: only a notification can wake it in time.
    let settings = [("MISSIVE_WATCH_RECHECK_MS", "60000".into())];
    let (_first, second, mut a, mut b) = two_replicas_with(Backend::Postgres, &settings).await;
    let (match_id, tokens, start, mut updates) = watched_match(&mut a, &mut b).await;
    let mut rng = Lcg(21);
    let mut expected = start;
    let mut latencies = Vec::new();
    while latencies.len() < 20 {
        let Some(mv) = next_move(&mut a, &match_id, &tokens, &mut rng)
            .await
            .expect("view")
        else {
            break;
        };
        let acted = act(&mut a, mv.request, &tokens[mv.seat])
            .await
            .expect("act");
        let acked = Instant::now();
        expected += 1;
        assert_eq!(acted.version, expected);
        let (version, seen) = tokio::time::timeout(Duration::from_secs(5), updates.recv())
            .await
            .expect("the watcher on the other replica hears of the action")
            .expect("the stream is open");
        assert_eq!(version, expected, "in order, none missed");
        latencies.push(seen.saturating_duration_since(acked));
    }
    assert!(latencies.len() >= 5, "enough actions to measure");
    let count = latencies.len();
    let (median, max) = median_and_max(latencies);
    eprintln!(
        "watch across replicas: {count} actions, from the actor's ack to the other replica's \
         watcher: median {median:?}, max {max:?}"
    );
    assert!(max < Duration::from_secs(1), "prompt: {max:?}");
    // The other replica folded each action into its cached match from the version it had: no
    // catch-up replayed the log from its start.
    assert_eq!(
        second.metric("missive_watch_replays_total").await,
        Some(0),
        "a watcher at the match's version is told, not replayed to"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_notifications_a_watcher_catches_up_on_its_own_timer() {
    let settings = [
        ("MISSIVE_NOTIFY", "false".into()),
        ("MISSIVE_WATCH_RECHECK_MS", "300".into()),
    ];
    let (_first, second, mut a, mut b) = two_replicas_with(Backend::Postgres, &settings).await;
    let (match_id, tokens, start, mut updates) = watched_match(&mut a, &mut b).await;
    let mut rng = Lcg(8);
    let mut latencies = Vec::new();
    for expected in start + 1..start + 4 {
        let Some(mv) = next_move(&mut a, &match_id, &tokens, &mut rng)
            .await
            .expect("view")
        else {
            break;
        };
        act(&mut a, mv.request, &tokens[mv.seat])
            .await
            .expect("act");
        let acked = Instant::now();
        let (version, seen) = tokio::time::timeout(Duration::from_secs(5), updates.recv())
            .await
            .expect("the timer finds the action")
            .expect("the stream is open");
        assert_eq!(version, expected);
        latencies.push(seen.saturating_duration_since(acked));
    }
    let (median, max) = median_and_max(latencies);
    eprintln!("watch across replicas on the 300 ms timer alone: median {median:?}, max {max:?}");
    assert_eq!(second.metric("missive_watch_replays_total").await, Some(0));
    // A watch that begins behind the match replays its log, once.
    let mut behind = watch(&mut b, &match_id, 0).await;
    let (first_update, _) = next_update(&mut behind).await;
    assert_eq!(first_update, 1);
    assert_eq!(second.metric("missive_watch_replays_total").await, Some(1));
    assert!(
        max < Duration::from_secs(2),
        "within a few periods: {max:?}"
    );
}

backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    joins_on_two_replicas_never_give_one_seat_twice:
    Postgres => joins_on_two_replicas_never_give_one_seat_twice_on_postgres,
    Citus => joins_on_two_replicas_never_give_one_seat_twice_on_citus,
}

async fn joins_on_two_replicas_never_give_one_seat_twice(backend: Backend) {
    let (_first, _second, mut a, mut b) = two_replicas(backend).await;
    let join = |seat: Option<u32>, player: &str| pb::JoinMatchRequest {
        match_id: String::new(),
        player: player.to_owned(),
        seat,
        ..Default::default()
    };
    let created = a
        .create_match(pb::CreateMatchRequest {
            seat_count: 3,
            ..crate::helpers::love_letter_options(3)
        })
        .await
        .expect("create")
        .into_inner()
        .r#match
        .expect("match info");
    let id = created.match_id;
    let with_id = |mut request: pb::JoinMatchRequest| {
        request.match_id = id.clone();
        request
    };
    // A has the new match cached; B takes seat 0 behind its back.
    let on_b = b
        .join_match(with_id(join(None, "on b")))
        .await
        .expect("join on b")
        .into_inner();
    assert_eq!(on_b.seat, 0);
    // A's cache says seat 0 is free: asking for it is refused once A has looked again...
    let taken = a
        .join_match(with_id(join(Some(0), "wants 0")))
        .await
        .expect_err("seat 0 is taken");
    assert_eq!(taken.code(), Code::FailedPrecondition, "{taken:?}");
    // ...and any free seat is one B did not take.
    let on_a = a
        .join_match(with_id(join(None, "on a")))
        .await
        .expect("join on a")
        .into_inner();
    assert_eq!(on_a.seat, 1);
    let last = b
        .join_match(with_id(join(None, "last")))
        .await
        .expect("the last seat")
        .into_inner();
    assert_eq!(last.seat, 2);
    let full = a
        .join_match(with_id(join(None, "late")))
        .await
        .expect_err("full");
    assert_eq!(full.code(), Code::FailedPrecondition, "{full:?}");
    let info = last.r#match.expect("match info");
    assert_eq!(info.status, pb::MatchStatus::Active as i32);
    let players: Vec<_> = info.seats.iter().map(|s| s.player.as_str()).collect();
    assert_eq!(players, ["on b", "on a", "last"]);
}

backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    racing_acts_on_one_match_from_two_replicas_serialise:
    Postgres => racing_acts_on_one_match_from_two_replicas_serialise_on_postgres,
    Citus => racing_acts_on_one_match_from_two_replicas_serialise_on_citus,
}

async fn racing_acts_on_one_match_from_two_replicas_serialise(backend: Backend) {
    let (first, _second, mut a, mut b) = two_replicas(backend).await;
    let (match_id, tokens) = create_and_join(&mut a, 2).await;
    let mut rng = Lcg(5);
    let mut acked = Vec::new();
    let mut races = 0;
    for round in 0..24 {
        let Some(mv) = next_move(&mut a, &match_id, &tokens, &mut rng)
            .await
            .expect("view")
        else {
            break;
        };
        races += 1;
        let token = &tokens[mv.seat];
        let (mut on_a, mut on_b) = (mv.request.clone(), mv.request.clone());
        on_a.request_id = format!("a-{round}");
        on_b.request_id = format!("b-{round}");
        match round % 3 {
            0 => {
                // Both pin the version: exactly one wins, the other is told ABORTED.
                on_a.expected_version = Some(mv.version);
                on_b.expected_version = Some(mv.version);
                let raced = tokio::join!(
                    act(&mut a, on_a.clone(), token),
                    act(&mut b, on_b.clone(), token)
                );
                let (won, lost) = match raced {
                    (Ok(won), Err(lost)) => ((won, on_a), lost),
                    (Err(lost), Ok(won)) => ((won, on_b), lost),
                    other => panic!("exactly one of two pinned acts wins: {other:?}"),
                };
                assert_eq!(lost.code(), Code::Aborted, "{lost:?}");
                assert_eq!(won.0.version, mv.version + 1);
                assert!(!won.0.duplicate);
                acked.push(won.1.request_id);
            }
            1 => {
                // The same request sent to both: applied once; the other answer is its duplicate.
                let raced = tokio::join!(
                    act(&mut a, mv.request.clone(), token),
                    act(&mut b, mv.request.clone(), token)
                );
                let (x, y) = (raced.0.expect("answered"), raced.1.expect("answered"));
                assert_eq!(
                    [x.duplicate, y.duplicate].iter().filter(|d| !**d).count(),
                    1,
                    "applied exactly once"
                );
                assert_eq!((x.version, y.version), (mv.version + 1, mv.version + 1));
                acked.push(mv.request.request_id.clone());
            }
            _ => {
                // Two different unpinned requests: the loser is retried on the state the winner
                // left, where the rules may refuse it (the seat is no longer awaited).
                let raced = tokio::join!(
                    act(&mut a, on_a.clone(), token),
                    act(&mut b, on_b.clone(), token)
                );
                let mut versions = Vec::new();
                for (result, request) in [(raced.0, on_a), (raced.1, on_b)] {
                    match result {
                        Ok(done) => {
                            assert!(!done.duplicate);
                            versions.push(done.version);
                            acked.push(request.request_id);
                        }
                        Err(refused) => {
                            assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}")
                        }
                    }
                }
                versions.sort();
                assert!(
                    versions == [mv.version + 1] || versions == [mv.version + 1, mv.version + 2],
                    "one applied first, the other after it or not at all: {versions:?}"
                );
            }
        }
    }
    assert!(races >= 6, "enough races before the match ended");
    // Finish on alternating servers.
    loop {
        let mut moved = false;
        for client in [&mut a, &mut b] {
            if let Some(mv) = next_move(client, &match_id, &tokens, &mut rng)
                .await
                .expect("view")
            {
                act(client, mv.request.clone(), &tokens[mv.seat])
                    .await
                    .expect("act");
                acked.push(mv.request.request_id);
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    assert_log_holds_exactly(&store_of(&first).await, &match_id, &acked).await;
    verify_audit(&match_id, &audit_log(&mut b, &match_id).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_database_fails_fast_with_unavailable_and_recovers_by_itself() {
    let first = spawn_app(Backend::Postgres).await;
    let proxy = PgProxy::start().await;
    let second = spawn_replica_with(
        &first,
        &[
            ("DATABASE_URL", proxy.url(first.database_url())),
            ("MISSIVE_DB_ACQUIRE_TIMEOUT_MS", "1000".into()),
            ("MISSIVE_WATCH_RECHECK_MS", "60000".into()),
        ],
    )
    .await;
    let mut a = first.grpc().await;
    let mut b = second.grpc().await;
    let (match_id, tokens) = create_and_join(&mut b, 2).await;
    let mut updates = watch(&mut b, &match_id, 0).await;
    let mut rng = Lcg(3);
    let mut acked = Vec::new();
    let mv = next_move(&mut b, &match_id, &tokens, &mut rng)
        .await
        .expect("view")
        .expect("a move");
    act(&mut b, mv.request.clone(), &tokens[mv.seat])
        .await
        .expect("act");
    acked.push(mv.request.request_id);

    proxy.cut();
    let health = |app: &TestApp| {
        let request = app.http.get(app.url("/healthz"));
        async move { request.send().await.expect("healthz answers").status() }
    };
    // Requests fail with UNAVAILABLE / 503, promptly, and change nothing.
    let mv = next_move(&mut a, &match_id, &tokens, &mut rng)
        .await
        .expect("the other replica still serves")
        .expect("a move");
    let started = Instant::now();
    let refused = act(&mut b, mv.request.clone(), &tokens[mv.seat])
        .await
        .expect_err("no database, no acknowledgement");
    let act_failed_after = started.elapsed();
    assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
    let viewed = spectator_view(&mut b, &match_id)
        .await
        .expect_err("no database, no view");
    assert_eq!(viewed.code(), Code::Unavailable, "{viewed:?}");
    let started = Instant::now();
    assert_eq!(health(&second).await, 503, "not ready without its database");
    let health_failed_after = started.elapsed();
    let over_http = second.get(&format!("/v1/matches/{match_id}/view")).await;
    assert_eq!(over_http.status(), 503);
    assert!(
        act_failed_after < Duration::from_secs(5) && health_failed_after < Duration::from_secs(5),
        "bounded: act {act_failed_after:?}, healthz {health_failed_after:?}"
    );
    assert_eq!(
        spectator_view(&mut a, &match_id)
            .await
            .expect("view")
            .version,
        mv.version,
        "the refused act changed nothing"
    );
    // The client retries on the other replica; the cut-off server cannot hear of it.
    let retried = act(&mut a, mv.request.clone(), &tokens[mv.seat])
        .await
        .expect("the other replica acts");
    assert!(!retried.duplicate);
    acked.push(mv.request.request_id.clone());

    proxy.restore();
    let restored = Instant::now();
    while health(&second).await != 200 {
        assert!(
            restored.elapsed() < Duration::from_secs(15),
            "ready again by itself"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let healthy_after = restored.elapsed();
    // The same request again on the recovered server: already applied, so a duplicate.
    let again = act(&mut b, mv.request.clone(), &tokens[mv.seat])
        .await
        .expect("served again");
    assert!(again.duplicate, "applied once");
    assert_eq!(again.version, retried.version);
    // The watcher on the cut-off server gets the update it was never told of, before anything
    // else happens on that server: its listener re-connected and had every watcher re-check
    // (its own timer is a minute).
    let mut versions = Vec::new();
    let caught_up_after = loop {
        let (version, at) = next_update(&mut updates).await;
        versions.push(version);
        if version == retried.version {
            break at.saturating_duration_since(restored);
        }
    };
    let played = play_to_the_end(&mut b, &match_id, &tokens, &mut rng).await;
    acked.extend(played);
    let last = spectator_view(&mut b, &match_id)
        .await
        .expect("view")
        .version;
    while versions.last() != Some(&last) {
        versions.push(next_update(&mut updates).await.0);
    }
    let expected: Vec<u64> = (1..=last).collect();
    assert_eq!(versions, expected, "every update, in order");
    eprintln!(
        "database cut: act UNAVAILABLE after {act_failed_after:?}, healthz 503 after \
         {health_failed_after:?}; restored: healthz 200 after {healthy_after:?}, the watcher had \
         the update it missed {caught_up_after:?} after the restore"
    );
    assert_log_holds_exactly(&store_of(&first).await, &match_id, &acked).await;
    verify_audit(&match_id, &audit_log(&mut a, &match_id).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_while_clients_act_loses_no_acknowledged_action() {
    const MATCHES: usize = 4;
    let mut app = spawn_app(Backend::Postgres).await;
    let mut client = app.grpc().await;
    let mut matches = Vec::new();
    for _ in 0..MATCHES {
        matches.push(create_and_join(&mut client, 2).await);
    }
    let acks = Arc::new(AtomicUsize::new(0));
    let mut players = Vec::new();
    for (i, (match_id, tokens)) in matches.iter().cloned().enumerate() {
        let mut client = app.grpc().await;
        let acks = acks.clone();
        players.push(tokio::spawn(async move {
            let mut rng = Lcg(100 + i as u64);
            let mut acked = Vec::new();
            loop {
                let Ok(Some(mv)) = next_move(&mut client, &match_id, &tokens, &mut rng).await
                else {
                    return (acked, None);
                };
                match act(&mut client, mv.request.clone(), &tokens[mv.seat]).await {
                    Ok(_) => {
                        acked.push(mv.request.request_id);
                        acks.fetch_add(1, Ordering::SeqCst);
                    }
                    // In flight when the server died: it may or may not have been applied.
                    Err(_) => return (acked, Some(mv)),
                }
            }
        }));
    }
    let started = Instant::now();
    while acks.load(Ordering::SeqCst) < 10 * MATCHES && started.elapsed() < Duration::from_secs(10)
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    app.kill();
    let mut results = Vec::new();
    for player in players {
        results.push(
            tokio::time::timeout(Duration::from_secs(20), player)
                .await
                .expect("clients notice the crash")
                .expect("player task"),
        );
    }
    let acked_before: usize = results.iter().map(|(acked, _)| acked.len()).sum();
    assert!(acked_before >= MATCHES, "clients were acting when it died");

    app.restart().await;
    let mut client = app.grpc().await;
    let store = store_of(&app).await;
    let (mut in_flight, mut had_committed) = (0, 0);
    for (i, ((match_id, tokens), (mut acked, pending))) in
        matches.into_iter().zip(results).enumerate()
    {
        if let Some(mv) = pending {
            // Retried with the same request id: applied now, or reported as the duplicate of
            // what committed before the crash; never twice.
            let retried = act(&mut client, mv.request.clone(), &tokens[mv.seat])
                .await
                .expect("a retry after the restart is answered");
            in_flight += 1;
            had_committed += usize::from(retried.duplicate);
            acked.push(mv.request.request_id);
        }
        let mut rng = Lcg(200 + i as u64);
        acked.extend(play_to_the_end(&mut client, &match_id, &tokens, &mut rng).await);
        assert_log_holds_exactly(&store, &match_id, &acked).await;
        verify_audit(&match_id, &audit_log(&mut client, &match_id).await);
    }
    eprintln!(
        "crash: {acked_before} actions acknowledged before SIGKILL, {in_flight} in flight \
         ({had_committed} of them had committed); all present once after the restart"
    );
}

/// On Citus, a match is played on while its shards move to another worker and back
/// (`citus_move_shard_placement`, writes blocked while the rows are copied): every act is
/// answered, a client that is refused meanwhile retries with its request id, and the log ends
/// holding each acknowledged act exactly once, its chain valid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_match_is_played_on_while_its_shards_move_between_workers_on_citus() {
    if !crate::helpers::citus_available() {
        return;
    }
    let app = spawn_app(Backend::Citus).await;
    let mut client = app.grpc().await;
    let (match_id, tokens) = create_and_join(&mut client, 2).await;
    let mut admin = sqlx::PgConnection::connect(app.database_url())
        .await
        .expect("the coordinator");
    let (shard, mut from): (i64, String) = sqlx::query_as(
        "SELECT s.shardid, p.nodename || ':' || p.nodeport
         FROM pg_dist_shard s JOIN pg_dist_placement pl USING (shardid)
         JOIN pg_dist_node p USING (groupid)
         WHERE s.logicalrelid = 'matches'::regclass
           AND get_shard_id_for_distribution_column('matches', $1::uuid) = s.shardid",
    )
    .bind(&match_id)
    .fetch_one(&mut admin)
    .await
    .expect("the match's shard");
    let workers: Vec<String> = sqlx::query_scalar(
        "SELECT nodename || ':' || nodeport FROM pg_dist_node
         WHERE groupid <> 0 AND noderole = 'primary' AND isactive ORDER BY nodeid",
    )
    .fetch_all(&mut admin)
    .await
    .expect("the workers");
    assert!(workers.len() >= 2, "a cluster of two workers or more");

    let mut rng = Lcg(11);
    let mut acked = Vec::new();
    let mut moves = 0;
    while let Some(mv) = next_move(&mut client, &match_id, &tokens, &mut rng)
        .await
        .expect("view")
    {
        // Every fourth act, the match's shard group starts moving to the other worker while
        // the act is sent.
        let moving = (acked.len() % 4 == 0 && moves < 4).then(|| {
            let to = workers
                .iter()
                .find(|w| **w != from)
                .expect("another")
                .clone();
            let url = app.database_url().to_owned();
            let (from_, to_) = (from.clone(), to.clone());
            from = to;
            moves += 1;
            tokio::spawn(async move {
                let mut conn = sqlx::PgConnection::connect(&url)
                    .await
                    .expect("coordinator");
                let (fh, fp) = from_.split_once(':').expect("host:port");
                let (th, tp) = to_.split_once(':').expect("host:port");
                sqlx::query(
                    "SELECT citus_move_shard_placement($1, $2, $3::int, $4, $5::int,
                        shard_transfer_mode => 'block_writes')",
                )
                .bind(shard)
                .bind(fh)
                .bind(fp)
                .bind(th)
                .bind(tp)
                .execute(&mut conn)
                .await
                .expect("the shard group moves")
            })
        });
        let token = &tokens[mv.seat];
        let mut tries = 0;
        loop {
            match act(&mut client, mv.request.clone(), token).await {
                Ok(_) => break,
                Err(status) if status.code() == Code::Unavailable && tries < 20 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(status) => panic!("an act while the shard moves: {status:?}"),
            }
        }
        acked.push(mv.request.request_id);
        if let Some(moving) = moving {
            moving.await.expect("the move finished");
        }
    }
    assert!(
        moves >= 2,
        "the shards moved at least there and back ({moves})"
    );
    let store = store_of(&app).await;
    assert_log_holds_exactly(&store, &match_id, &acked).await;
}
