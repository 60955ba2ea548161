//! A full match of every game, as a client plays it: create, join every seat, then each seat
//! plays one of the legal actions its view offers until the match is over. Checked from the
//! outside only: the outcome shown, the acknowledged acts in the public audit log exactly
//! once and in order, and a spectator offered nothing to play.

use serde_json::Value;

use crate::harness::{
    Backend, Client, Dice, Server, Store, games, logged_request_ids, over, play_grpc, play_http,
};

const MAX_ACTS: usize = 20_000;

async fn join_all(client: &Client, id: &str, seats: u32) -> Vec<String> {
    let mut tokens = Vec::new();
    for seat in 0..seats {
        tokens.push(client.join(id, &format!("player-{seat}")).await);
    }
    tokens
}

/// What every finished match shows anyone: an outcome, a revealed seed matching the
/// commitment, and an audit log holding exactly the acknowledged acts, in order.
async fn check_finished(client: &Client, id: &str, acked: &[crate::harness::Acked]) {
    let spectator = client.view(id, None).await;
    assert!(over(&spectator), "{spectator}");
    assert_eq!(
        spectator["match"]["status"], "MATCH_STATUS_FINISHED",
        "{spectator}"
    );
    assert!(
        spectator["outcome"].is_object(),
        "a finished match shows its outcome: {spectator}"
    );
    assert_eq!(
        spectator["legalActions"],
        Value::Array(vec![]),
        "spectators play nothing"
    );
    let history = client.history(id, None).await;
    let logged = logged_request_ids(&history);
    let acknowledged: Vec<String> = acked.iter().map(|a| a.request_id.clone()).collect();
    assert_eq!(
        logged, acknowledged,
        "the log holds every acknowledged act once, in order"
    );
    let versions: Vec<u64> = acked.iter().map(|a| a.version).collect();
    assert!(
        versions.windows(2).all(|w| w[0] < w[1]),
        "versions grow: {versions:?}"
    );
    assert_eq!(
        history["audit"]["seedCommitment"], spectator["match"]["seedCommitment"],
        "the audit log's commitment is the one published at creation"
    );
}

async fn every_game_over_http(backend: Backend) {
    let store = Store::new(backend).await;
    let server = Server::start(&store, &[]).await;
    let client = server.client();
    for (n, (game, options, seats)) in games().into_iter().enumerate() {
        let id = client.create(options, seats).await;
        let tokens = join_all(&client, &id, seats).await;
        let acked = play_http(
            &client,
            &id,
            &tokens,
            &mut Dice::new(n as u64 + 7),
            MAX_ACTS,
        )
        .await;
        assert!(!acked.is_empty(), "{game}: someone played");
        check_finished(&client, &id, &acked).await;
    }
}

#[tokio::test]
async fn every_game_plays_to_its_end_over_http_on_the_embedded_store() {
    every_game_over_http(Backend::Sqlite).await;
}

#[tokio::test]
async fn every_game_plays_to_its_end_over_http_on_postgres() {
    every_game_over_http(Backend::Postgres).await;
}

#[tokio::test]
async fn every_game_plays_to_its_end_over_grpc() {
    let store = Store::new(Backend::Postgres).await;
    let server = Server::start(&store, &[]).await;
    let client = server.client();
    let mut grpc = server.grpc().await;
    for (n, (game, options, seats)) in games().into_iter().enumerate() {
        // Created and joined over HTTP, played over gRPC: one match, either transport.
        let id = client.create(options, seats).await;
        let tokens = join_all(&client, &id, seats).await;
        let acked = play_grpc(
            &mut grpc,
            &id,
            &tokens,
            &mut Dice::new(n as u64 + 70),
            MAX_ACTS,
        )
        .await;
        assert!(!acked.is_empty(), "{game}: someone played");
        check_finished(&client, &id, &acked).await;
    }
}
