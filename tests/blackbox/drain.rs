//! SIGTERM under load, as an orchestrator sends it before it replaces a server: readiness
//! turns false at once (the gRPC health service says NOT_SERVING, `/healthz` stops answering
//! 200), the calls in flight finish, watch streams end with UNAVAILABLE naming the version to
//! resume after, the process exits 0 well within its grace period, and every acknowledged act
//! is in the log exactly once; an act whose answer was lost is retried with its request id
//! on the server that replaces it, and applied once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use missive_proto::v1 as pb;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::Mutex;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use crate::harness::{
    Acked, Backend, Client, Dice, Server, Store, authed, logged_request_ids, over, play_http,
    read_sse, version,
};

const MATCHES: usize = 6;
const GRACE_SECS: u64 = 10;

/// One player pair's match and what its client knows of it.
#[derive(Debug, Default)]
struct Table {
    id: String,
    tokens: Vec<String>,
    acked: Vec<Acked>,
    /// An act sent without an answer (the connection was refused or cut): its token and body.
    unanswered: Option<(String, Value)>,
    /// Statuses other than 200 that came back while the server was draining.
    refusals: Vec<(StatusCode, Value)>,
}

/// Plays `table` until the match is over or the server stops answering.
async fn play_until_cut(client: Client, table: Arc<Mutex<Table>>, seed: u64) {
    let mut dice = Dice::new(seed);
    let (id, tokens) = {
        let t = table.lock().await;
        (t.id.clone(), t.tokens.clone())
    };
    let mut n = 0;
    loop {
        for token in &tokens {
            let Ok((StatusCode::OK, body)) = client
                .try_get(&format!("/v1/matches/{id}/view"), Some(token))
                .await
            else {
                return;
            };
            let view = &body["view"];
            if over(view) {
                return;
            }
            let legal = view["legalActions"].as_array().cloned().unwrap_or_default();
            if legal.is_empty() {
                continue;
            }
            n += 1;
            let request_id = format!("{id}-{n}");
            let act = json!({ "requestId": request_id, "action": legal[dice.below(legal.len())] });
            match client
                .try_post(&format!("/v1/matches/{id}/act"), &act, Some(token))
                .await
            {
                Ok((StatusCode::OK, answer)) => table.lock().await.acked.push(Acked {
                    request_id,
                    version: version(&answer["version"]),
                }),
                Ok(refused) => {
                    let mut t = table.lock().await;
                    t.refusals.push(refused);
                    t.unanswered = Some((token.clone(), act));
                    return;
                }
                Err(_) => {
                    table.lock().await.unanswered = Some((token.clone(), act));
                    return;
                }
            }
        }
    }
}

#[tokio::test]
async fn sigterm_under_load_drains_and_loses_nothing_acknowledged() {
    let store = Store::new(Backend::Postgres).await;
    let grace = GRACE_SECS.to_string();
    let mut server = Server::start(&store, &[("MISSIVE_SHUTDOWN_GRACE_SECS", &grace)]).await;
    let client = server.client();
    let mut tables = Vec::new();
    for _ in 0..MATCHES {
        let id = client
            .create(
                json!({ "loveLetter": { "edition": "LOVE_LETTER_EDITION_2019" } }),
                2,
            )
            .await;
        let tokens = vec![client.join(&id, "ann").await, client.join(&id, "bob").await];
        tables.push(Arc::new(Mutex::new(Table {
            id,
            tokens,
            ..Table::default()
        })));
    }
    // A match nobody plays while the server drains (those played may end first): its watch
    // streams are open when the signal comes.
    let watched = client
        .create(
            json!({ "loveLetter": { "edition": "LOVE_LETTER_EDITION_2019" } }),
            2,
        )
        .await;
    let watch_token = client.join(&watched, "cy").await;
    client.join(&watched, "di").await;

    // Watchers before the signal: a readiness prober on the gRPC health service, a seat's
    // gRPC watch and the same seat's SSE watch.
    let channel = tonic::transport::Endpoint::from_shared(server.grpc_addr.clone())
        .expect("endpoint")
        .connect()
        .await
        .expect("gRPC connects");
    let mut health = HealthClient::new(channel.clone())
        .watch(tonic_health::pb::HealthCheckRequest {
            service: String::new(),
        })
        .await
        .expect("health watch")
        .into_inner();
    let first = health.message().await.expect("status").expect("a status");
    assert_eq!(first.status(), ServingStatus::Serving);
    let mut grpc = missive_proto::v1::missive_client::MissiveClient::new(channel);
    let mut grpc_watch = grpc
        .watch_match(authed(
            pb::WatchMatchRequest {
                match_id: watched.clone(),
                ..Default::default()
            },
            &watch_token,
        ))
        .await
        .expect("WatchMatch")
        .into_inner();
    let sse = client
        .http
        .get(format!("{}/v1/matches/{watched}/watch", client.base))
        .bearer_auth(&watch_token)
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .expect("SSE watch opens");
    let sse = tokio::spawn(read_sse(sse, usize::MAX));

    // Load: every table plays as fast as its client can.
    let players: Vec<_> = tables
        .iter()
        .enumerate()
        .map(|(n, table)| tokio::spawn(play_until_cut(client.clone(), table.clone(), n as u64)))
        .collect();
    tokio::time::sleep(Duration::from_millis(800)).await;

    server.signal("TERM");
    let signalled = Instant::now();

    // Readiness: the prober hears NOT_SERVING at once.
    let status = tokio::time::timeout(Duration::from_secs(2), health.message())
        .await
        .expect("the health watch hears the drain")
        .expect("a status")
        .expect("not ended");
    assert_eq!(status.status(), ServingStatus::NotServing);
    let heard = signalled.elapsed();
    assert!(
        heard < Duration::from_millis(500),
        "readiness turned false after {heard:?}"
    );
    drop(health);
    // ... and /healthz no longer says ok (503 while the listener is open, refused after).
    let healthz = client.try_get("/healthz", None).await;
    assert!(!matches!(healthz, Ok((StatusCode::OK, _))), "{healthz:?}");

    // Watch streams end with a status a client resumes from.
    let mut last = 0;
    let cut = loop {
        match grpc_watch.message().await {
            Ok(Some(update)) => last = update.version,
            Ok(None) => panic!("a drained watch does not end as if the match were over"),
            Err(status) => break status,
        }
    };
    assert_eq!(cut.code(), tonic::Code::Unavailable, "{cut:?}");
    assert!(
        cut.message().contains(&format!("afterVersion={last}")),
        "{cut:?}"
    );
    let (events, ended) = sse.await.expect("SSE reader");
    assert!(ended, "the SSE stream is closed by the server");
    let (kind, _, data) = events.last().expect("the stream said something");
    assert_eq!(kind, "error", "{data}");
    let error: Value = serde_json::from_str(data).expect("JSON error");
    assert_eq!(error["code"], "UNAVAILABLE", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("afterVersion="),
        "{error}"
    );

    // The process exits 0, without waiting out the grace period.
    let exit = server
        .exited_within(Duration::from_secs(GRACE_SECS + 5))
        .await
        .expect("the server exits by itself");
    let took = signalled.elapsed();
    assert!(exit.success(), "exit status {exit:?}");
    assert!(
        took < Duration::from_secs(GRACE_SECS),
        "drained in {took:?}"
    );
    for player in players {
        player.await.expect("player task");
    }

    // The server that replaces it: every lost answer is retried with its request id and
    // applied once; every match plays to its end; each log holds every acknowledged act
    // exactly once and in order.
    server.restart().await;
    let client = server.client();
    let mut total = 0;
    for (n, table) in tables.iter().enumerate() {
        let mut table = table.lock().await;
        for (status, body) in &table.refusals {
            assert_eq!(
                *status,
                StatusCode::SERVICE_UNAVAILABLE,
                "only a draining refusal: {body}"
            );
        }
        if let Some((token, act)) = table.unanswered.take() {
            let (status, answer) = client
                .post(&format!("/v1/matches/{}/act", table.id), &act, Some(&token))
                .await;
            assert_eq!(status, StatusCode::OK, "the retry is answered: {answer}");
            table.acked.push(Acked {
                request_id: act["requestId"].as_str().expect("id").to_owned(),
                version: version(&answer["version"]),
            });
        }
        let id = table.id.clone();
        let tokens = table.tokens.clone();
        let rest = play_http(&client, &id, &tokens, &mut Dice::new(100 + n as u64), 2_000).await;
        table.acked.extend(rest);
        let logged = logged_request_ids(&client.history(&id, None).await);
        let acked: Vec<String> = table.acked.iter().map(|a| a.request_id.clone()).collect();
        assert_eq!(logged, acked, "{id}: every acknowledged act once, in order");
        total += acked.len();
    }
    eprintln!("drain: readiness off after {heard:?}, exit 0 after {took:?}, {total} acts checked");
}
