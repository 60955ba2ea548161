//! Cancelling an open match and the expiry of open matches nobody joins: a cancel by the
//! match's cancel token (or its creator's player token) ends it, abandoned, with a `closed`
//! entry in its history and its audit log, which verifies; every other caller, and a cancel
//! after the start, is refused and changes nothing; a retry answers the same; an open match
//! expires once idle for the configured time, closed once however many servers race for it.

use std::process::Command;
use std::time::{Duration, Instant};

use missive_proto::v1 as pb;
use missive_server::clock::Clock;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tonic::Code;

use crate::helpers::{
    Backend, Options, ScratchDb, TestApp, authed, love_letter_options, spawn_app, spawn_app_with,
};

/// Creates a two-seat Love Letter match over HTTP, with `body` merged in; its id and cancel
/// token.
async fn create(app: &TestApp, extra: Value) -> (String, String) {
    let mut body = json!({ "options": { "loveLetter": {} }, "seatCount": 2 });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    let response = app.post("/v1/matches", &body).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let created: Value = response.json().await.expect("json");
    let id = created["match"]["matchId"].as_str().expect("id").to_owned();
    let token = created["cancelToken"]
        .as_str()
        .expect("a cancel token")
        .to_owned();
    (id, token)
}

/// `POST /v1/matches/{id}/cancel` with `body`, as `bearer` if given.
async fn cancel(app: &TestApp, id: &str, body: Value, bearer: Option<&str>) -> reqwest::Response {
    let mut request = app
        .http
        .post(app.url(&format!("/v1/matches/{id}/cancel")))
        .json(&body);
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    request.send().await.expect("cancel")
}

async fn get_json(app: &TestApp, path: &str) -> Value {
    let response = app.get(path).await;
    assert_eq!(response.status(), StatusCode::OK, "{path}");
    response.json().await.expect("json")
}

/// The match's status and version.
async fn status(app: &TestApp, id: &str) -> (String, u64) {
    let info = get_json(app, &format!("/v1/matches/{id}")).await;
    let version = info["match"]["version"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .or_else(|| info["match"]["version"].as_u64())
        .expect("a version");
    (
        info["match"]["status"].as_str().expect("status").to_owned(),
        version,
    )
}

/// The history's entries that close the match, and the audit's `closed` events.
fn closures(history: &Value) -> (Vec<Value>, Vec<Value>) {
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let entries = list(&history["entries"])
        .into_iter()
        .filter(|e| e.get("closed").is_some())
        .collect();
    let events = list(&history["audit"]["events"])
        .into_iter()
        .filter(|e| e["kind"] == "closed")
        .collect();
    (entries, events)
}

/// Saves `history` and runs `missive verify` on it: the exit code and what it printed.
fn verify(id: &str, history: &Value) -> (Option<i32>, String) {
    let dir = std::env::temp_dir().join(format!("missive-cancel-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let file = dir.join(format!("{id}.json"));
    std::fs::write(&file, serde_json::to_vec(history).expect("JSON")).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_missive"))
        .args(["verify", &file.display().to_string()])
        .env("MISSIVE_GRPC_ADDR", "127.0.0.1:0")
        .env("MISSIVE_HTTP_ADDR", "127.0.0.1:0")
        .output()
        .expect("the missive binary runs");
    let _ = std::fs::remove_dir_all(&dir);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), said)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_by_token_abandons_the_open_match_with_a_closed_entry_that_verifies() {
    for backend in [Backend::Postgres, Backend::Sqlite] {
        let app = spawn_app(backend).await;
        let (id, token) = create(&app, json!({})).await;
        assert_eq!(token.len(), 32, "{token}");
        assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");
        let ann = app.http_join(&id, "ann").await;
        // Ann watches as her seat, from where the match is now.
        let (_, version) = status(&app, &id).await;
        let mut client = app.grpc().await;
        let mut updates = client
            .watch_match(authed(
                pb::WatchMatchRequest {
                    match_id: id.clone(),
                    after_version: version,
                    seat: None,
                },
                &ann,
            ))
            .await
            .expect("watch")
            .into_inner();

        let response = cancel(&app, &id, json!({ "cancelToken": token }), None).await;
        assert_eq!(response.status(), StatusCode::OK, "{backend:?}");
        let cancelled: Value = response.json().await.expect("json");
        assert_eq!(cancelled["match"]["status"], "MATCH_STATUS_ABANDONED");
        assert!(
            cancelled["match"]["seed"].is_string(),
            "revealed: {cancelled}"
        );
        assert_eq!(
            status(&app, &id).await,
            ("MATCH_STATUS_ABANDONED".into(), version + 1)
        );

        // The watch sees the end like any other: the closure, then the stream ends.
        let update = tokio::time::timeout(Duration::from_secs(10), updates.message())
            .await
            .expect("an update in time")
            .expect("no error")
            .expect("the closure's update");
        assert_eq!(update.version, version + 1);
        assert!(
            update.entries.iter().any(|e| matches!(
                e.entry,
                Some(pb::history_entry::Entry::Closed(pb::MatchClosed { reason }))
                    if reason == pb::CloseReason::Cancelled as i32
            )),
            "{update:?}"
        );
        let view = update.view.expect("a view");
        assert!(
            view.game.is_none() && view.legal_actions.is_empty(),
            "{view:?}"
        );
        let end = tokio::time::timeout(Duration::from_secs(10), updates.message())
            .await
            .expect("the stream ends in time");
        assert!(matches!(end, Ok(None)), "{end:?}");

        // History and audit log both record it; the exported history verifies.
        let history = get_json(&app, &format!("/v1/matches/{id}/history")).await;
        let (entries, events) = closures(&history);
        assert_eq!(entries.len(), 1, "{history}");
        assert_eq!(entries[0]["closed"]["reason"], "CLOSE_REASON_CANCELLED");
        assert_eq!(events.len(), 1, "{history}");
        assert!(events[0].get("actor").is_none(), "no seat closes a match");
        assert_eq!(events[0]["closed"]["reason"], "CLOSE_REASON_CANCELLED");
        let (code, said) = verify(&id, &history);
        assert_eq!(code, Some(0), "{backend:?}: {said}");

        // A cancelled match takes no more joins, and has no rematch.
        let refused = app
            .post(
                &format!("/v1/matches/{id}/join"),
                &json!({ "player": "bob" }),
            )
            .await;
        assert_eq!(refused.status(), StatusCode::CONFLICT);
        let rematch = app
            .http
            .post(app.url(&format!("/v1/matches/{id}/rematch")))
            .bearer_auth(&ann)
            .json(&json!({}))
            .send()
            .await
            .expect("rematch");
        assert_eq!(rematch.status(), StatusCode::CONFLICT);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_or_missing_token_a_seat_token_and_a_cancel_after_the_start_change_nothing() {
    for backend in [Backend::Postgres, Backend::Sqlite] {
        let app = spawn_app(backend).await;
        let (id, token) = create(&app, json!({})).await;
        let (_, other_token) = create(&app, json!({})).await;
        let ann = app.http_join(&id, "ann").await;
        let before = status(&app, &id).await;
        assert_eq!(before.0, "MATCH_STATUS_OPEN");
        for (body, bearer, expected, why) in [
            (
                json!({ "cancelToken": other_token }),
                None,
                StatusCode::FORBIDDEN,
                "another match's token",
            ),
            (
                json!({ "cancelToken": "0".repeat(32) }),
                None,
                StatusCode::FORBIDDEN,
                "a made-up token",
            ),
            (json!({}), None, StatusCode::UNAUTHORIZED, "no token"),
            (
                json!({}),
                Some(ann.as_str()),
                StatusCode::UNAUTHORIZED,
                "a seat holder without the cancel token",
            ),
            (
                json!({ "cancelToken": ann }),
                None,
                StatusCode::FORBIDDEN,
                "a seat token as a cancel token",
            ),
        ] {
            let response = cancel(&app, &id, body, bearer).await;
            assert_eq!(response.status(), expected, "{backend:?}: {why}");
            assert_eq!(status(&app, &id).await, before, "{why} changes nothing");
        }
        // Over gRPC too.
        let mut client = app.grpc().await;
        let refused = client
            .cancel_match(pb::CancelMatchRequest {
                match_id: id.clone(),
                cancel_token: other_token.clone(),
                request_id: String::new(),
            })
            .await
            .expect_err("another match's token");
        assert_eq!(refused.code(), Code::PermissionDenied);

        // Once the match has started, even its token cannot cancel it.
        app.http_join(&id, "bob").await;
        let started = status(&app, &id).await;
        assert_eq!(started.0, "MATCH_STATUS_ACTIVE");
        let response = cancel(&app, &id, json!({ "cancelToken": token }), None).await;
        assert_eq!(response.status(), StatusCode::CONFLICT);
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["rule"], "match-started", "{body}");
        assert!(
            body["message"]
                .as_str()
                .unwrap_or_default()
                .contains("started"),
            "{body}"
        );
        assert_eq!(status(&app, &id).await, started, "nothing changed");
        let history = get_json(&app, &format!("/v1/matches/{id}/history")).await;
        assert!(closures(&history).0.is_empty(), "{history}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_cancel_answers_the_same_and_a_retried_creation_the_same_cancel_token() {
    for backend in [Backend::Postgres, Backend::Sqlite] {
        let app = spawn_app(backend).await;
        let request = json!({ "requestId": format!("create-{}", uuid::Uuid::new_v4()) });
        let (id, token) = create(&app, request.clone()).await;
        let (again, again_token) = create(&app, request).await;
        assert_eq!((again, again_token), (id.clone(), token.clone()));

        let body = json!({ "cancelToken": token, "requestId": "cancel-1" });
        let first = cancel(&app, &id, body.clone(), None).await;
        assert_eq!(first.status(), StatusCode::OK);
        let first: Value = first.json().await.expect("json");
        let retried = cancel(&app, &id, body, None).await;
        assert_eq!(retried.status(), StatusCode::OK, "{backend:?}");
        let retried: Value = retried.json().await.expect("json");
        assert_eq!(retried, first, "the same answer");
        // Over gRPC too, and a new cancel of a match that is over is refused.
        let mut client = app.grpc().await;
        let over_grpc = client
            .cancel_match(pb::CancelMatchRequest {
                match_id: id.clone(),
                cancel_token: token.clone(),
                request_id: "cancel-1".into(),
            })
            .await
            .expect("the retry over gRPC")
            .into_inner();
        assert_eq!(
            over_grpc.r#match.map(|m| m.status),
            Some(pb::MatchStatus::Abandoned as i32)
        );
        let response = cancel(
            &app,
            &id,
            json!({ "cancelToken": token, "requestId": "cancel-2" }),
            None,
        )
        .await;
        assert_eq!(response.status(), StatusCode::CONFLICT);
        let refused: Value = response.json().await.expect("json");
        assert_eq!(refused["rule"], "match-over", "{refused}");
        let history = get_json(&app, &format!("/v1/matches/{id}/history")).await;
        assert_eq!(closures(&history).1.len(), 1, "closed once: {history}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_creating_player_cancels_with_the_player_token_and_no_one_else_does() {
    for backend in [Backend::Postgres, Backend::Sqlite] {
        let app = crate::players::spawn_with_players(backend).await;
        let alice = crate::players::player_token("alice");
        let bob = crate::players::player_token("bob");
        let mut client = app.grpc().await;
        let created = client
            .create_match(authed(love_letter_options(2), &alice))
            .await
            .expect("create")
            .into_inner();
        let id = created.r#match.expect("match").match_id;
        let by = |jwt: &str| {
            authed(
                pb::CancelMatchRequest {
                    match_id: id.clone(),
                    ..Default::default()
                },
                jwt,
            )
        };
        let refused = client.cancel_match(by(&bob)).await.expect_err("not bob's");
        assert_eq!(refused.code(), Code::PermissionDenied, "{backend:?}");
        let cancelled = client
            .cancel_match(by(&alice))
            .await
            .expect("alice created it")
            .into_inner();
        assert_eq!(
            cancelled.r#match.map(|m| m.status),
            Some(pb::MatchStatus::Abandoned as i32)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_match_expires_after_the_configured_time_and_its_audit_verifies() {
    for backend in [Backend::Postgres, Backend::Sqlite] {
        let app = spawn_app_with(
            backend,
            Options {
                env: &[("MISSIVE_OPEN_MATCH_EXPIRY_SECS", "2")],
                ..Options::default()
            },
        )
        .await;
        let created_at = Instant::now();
        let (id, _) = create(&app, json!({})).await;
        app.http_join(&id, "ann").await;
        let joined_at = Instant::now();
        let deadline = joined_at + Duration::from_secs(30);
        loop {
            let (status, _) = status(&app, &id).await;
            if status == "MATCH_STATUS_ABANDONED" {
                break;
            }
            assert_eq!(status, "MATCH_STATUS_OPEN");
            assert!(
                Instant::now() < deadline,
                "{backend:?}: not expired in time"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            created_at.elapsed() >= Duration::from_secs(2),
            "expired only after the expiry time"
        );
        let history = get_json(&app, &format!("/v1/matches/{id}/history")).await;
        let (entries, events) = closures(&history);
        assert_eq!(entries.len(), 1, "{history}");
        assert_eq!(entries[0]["closed"]["reason"], "CLOSE_REASON_EXPIRED");
        assert_eq!(events.len(), 1, "{history}");
        // Measured from the last event, the join: at least 2 s after it.
        let time = |v: &Value| {
            chrono::DateTime::parse_from_rfc3339(v.as_str().expect("a time")).expect("RFC 3339")
        };
        let all = history["audit"]["events"].as_array().expect("events");
        let closed_at = time(&events[0]["at"]);
        let joined = time(&all[all.len() - 2]["at"]);
        assert!(
            closed_at - joined >= chrono::Duration::seconds(2),
            "{joined} → {closed_at}"
        );
        let (code, said) = verify(&id, &history);
        assert_eq!(code, Some(0), "{backend:?}: {said}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_expiring_the_same_matches_write_one_closure_each() {
    const MATCHES: usize = 12;
    let db = ScratchDb::create().await;
    let clock = Clock::manual(chrono::Utc::now());
    let after = Duration::from_secs(60);
    let (first, second) = (
        crate::clock::service(&db.url, &clock, Some(after)).await,
        crate::clock::service(&db.url, &clock, Some(after)).await,
    );
    let mut ids = Vec::new();
    for _ in 0..MATCHES {
        let created = first
            .create_match(love_letter_options(2))
            .await
            .expect("create");
        ids.push(created.r#match.expect("match").match_id);
    }
    // Both replicas know every match, as they would once asked about it.
    for id in &ids {
        let req = || pb::GetViewRequest {
            match_id: id.clone(),
            seat: None,
        };
        let caller = missive_server::service::Caller::default();
        first.get_view(&caller, req()).await.expect("a view");
        second.get_view(&caller, req()).await.expect("a view");
    }
    // Not idle long enough: nothing expires.
    clock.advance(Duration::from_secs(59));
    assert_eq!(first.expire_open_matches(after).await.expect("looked"), 0);
    clock.advance(Duration::from_secs(1));
    let (a, b) = tokio::join!(
        first.expire_open_matches(after),
        second.expire_open_matches(after)
    );
    let (a, b) = (a.expect("first looked"), b.expect("second looked"));
    assert_eq!(a + b, MATCHES as u32, "each match closed once: {a} + {b}");
    let store = first.store();
    for id in &ids {
        let id = id.parse().expect("a match id");
        let events = store.read_events(id, 0, 100).await.expect("events");
        let closed = events.iter().filter(|e| e.kind == "closed").count();
        assert_eq!(closed, 1, "{id}: {events:?}");
        assert_eq!(
            store.get_match(id).await.expect("row").status,
            missive_store::MatchStatus::Abandoned
        );
    }
    assert!(
        matches!(
            store.verify_chain(ids[0].parse().expect("id")).await,
            Ok(missive_store::ChainCheck::Valid { .. })
        ),
        "the chain holds"
    );
    assert_eq!(second.expire_open_matches(after).await.expect("looked"), 0);
}
