//! The typed event log writes what the log has always held: real matches of every game (bots
//! to the end, seats joined and left, a deadline passing, a match abandoned, one cancelled)
//! are played through the server, and every stored event, read into its typed form and
//! written back, has the same canonical bytes and so the same hash.

use std::time::{Duration, Instant};

use missive_proto::v1 as pb;
use missive_server::events::Event;
use missive_store::{MatchId, NewEvent, Store, StoreOptions, canonical_bytes, event_hash};

use crate::deal::games;
use crate::helpers::{Backend, leave, spawn_app};

async fn wait_until(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let start = Instant::now();
    while !done().await {
        assert!(start.elapsed() < Duration::from_secs(60), "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_stored_event_re_encodes_to_its_bytes_and_hash() {
    let app = spawn_app(Backend::Postgres).await;
    let mut client = app.grpc().await;
    let mut ids = Vec::new();
    // Every game and seat count, played by bots to the end.
    for game in games() {
        for seats in game.seats.clone() {
            let created = client
                .create_match(pb::CreateMatchRequest {
                    options: Some(game.options.clone()),
                    seat_count: seats,
                    bots: (0..seats)
                        .map(|seat| pb::BotSeat {
                            seat,
                            strategy: "random".into(),
                            nonce: if seat == 0 {
                                "chosen".into()
                            } else {
                                String::new()
                            },
                        })
                        .collect(),
                    ..Default::default()
                })
                .await
                .expect("create")
                .into_inner();
            ids.push(created.r#match.expect("info").match_id);
        }
    }
    // People: a seat taken and left before the start, a deadline that passes, and a leave
    // that abandons the match.
    let created = client
        .create_match(pb::CreateMatchRequest {
            options: Some(games()[0].options.clone()),
            seat_count: 2,
            turn_timeout_secs: Some(1),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner()
        .r#match
        .expect("info");
    let id = created.match_id.clone();
    let join = |player: &str, nonce: Option<&str>| pb::JoinMatchRequest {
        match_id: id.clone(),
        player: player.into(),
        nonce: nonce.map(str::to_owned),
        request_id: format!("join-{player}-0123456789abcdef"),
        ..Default::default()
    };
    let passer = client
        .join_match(join("passer", None))
        .await
        .expect("join")
        .into_inner();
    leave(&mut client, &id, &passer.seat_token).await;
    client
        .join_match(join("ann", Some("ann-nonce")))
        .await
        .expect("join");
    let bob = client
        .join_match(join("bob", None))
        .await
        .expect("join")
        .into_inner();
    let store = Store::connect(
        app.database_url(),
        StoreOptions {
            notify: false,
            ..StoreOptions::default()
        },
    )
    .await
    .expect("store");
    let match_id: MatchId = id.parse().expect("uuid");
    wait_until("a deadline passes", async || {
        store
            .read_events(match_id, 0, u32::MAX)
            .await
            .expect("events")
            .iter()
            .any(|e| e.kind == "timeout")
    })
    .await;
    leave(&mut client, &id, &bob.seat_token).await;
    ids.push(id);
    // An open match cancelled by its creator.
    let created = client
        .create_match(pb::CreateMatchRequest {
            options: Some(games()[0].options.clone()),
            seat_count: 2,
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    let cancelled = created.r#match.expect("info").match_id;
    client
        .cancel_match(pb::CancelMatchRequest {
            match_id: cancelled.clone(),
            cancel_token: created.cancel_token,
            request_id: "cancel-1".into(),
        })
        .await
        .expect("cancel");
    ids.push(cancelled);
    for id in &ids {
        let id: MatchId = id.parse().expect("uuid");
        wait_until("the bots finish", async || {
            store.get_match(id).await.expect("match").status.as_str() != "active"
        })
        .await;
    }

    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    for id in &ids {
        let id: MatchId = id.parse().expect("uuid");
        let mut prev = missive_store::GENESIS_HASH;
        for stored in store.read_events(id, 0, u32::MAX).await.expect("events") {
            let typed = Event::parse(&stored.kind, &stored.payload)
                .unwrap_or_else(|e| panic!("event {} of {id}: {e}", stored.seq));
            let written = NewEvent {
                payload: typed.payload(),
                ..stored.to_new()
            };
            assert_eq!(
                canonical_bytes(id, stored.seq, &written),
                canonical_bytes(id, stored.seq, &stored.to_new()),
                "event {} of {id} ({})",
                stored.seq,
                stored.kind
            );
            let hash = event_hash(&prev, &canonical_bytes(id, stored.seq, &written));
            assert_eq!(hash, stored.hash, "event {} of {id}", stored.seq);
            prev = hash;
            *kinds.entry(stored.kind.clone()).or_default() += 1;
        }
    }
    for kind in ["created", "joined", "left", "action", "timeout", "closed"] {
        assert!(
            kinds.get(kind).is_some_and(|n| *n > 0),
            "no {kind} event among {kinds:?}"
        );
    }
    eprintln!("{} matches re-encoded: {kinds:?}", ids.len());
}
