//! Whole matches and error cases over HTTP/JSON and Server-Sent Events.

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Backend, Lcg, TestApp, http_act, spawn_app};

fn list(value: &Value, key: &str) -> Vec<Value> {
    value
        .get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

async fn create(app: &TestApp) -> String {
    let response = app.post("/v1/matches", &json!({ "options": { "loveLetter": { "edition": "LOVE_LETTER_EDITION_2019" } }, "seatCount": 2 })).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let body: Value = response.json().await.expect("json");
    body["match"]["matchId"]
        .as_str()
        .expect("matchId")
        .to_owned()
}

async fn join(app: &TestApp, id: &str, player: &str) -> String {
    let response = app
        .post(
            &format!("/v1/matches/{id}/join"),
            &json!({ "player": player }),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.expect("json");
    body["seatToken"].as_str().expect("seatToken").to_owned()
}

async fn view(app: &TestApp, id: &str, token: Option<&str>) -> Value {
    let mut request = app.http.get(app.url(&format!("/v1/matches/{id}/view")));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("view");
    assert_eq!(response.status(), StatusCode::OK);
    response.json::<Value>().await.expect("json")["view"].clone()
}

async fn version(app: &TestApp, id: &str) -> String {
    let body: Value = app.get_json(&format!("/v1/matches/{id}"), None).await;
    body["match"]["version"]
        .as_str()
        .expect("uint64 as a JSON string")
        .to_owned()
}

/// Reads SSE `update` events until the server ends the stream; returns their ids and the
/// data of the last one.
async fn read_sse(response: reqwest::Response) -> (Vec<u64>, Value) {
    let mut stream = response.bytes_stream();
    let mut buffer = String::new();
    let mut ids = Vec::new();
    let mut last = Value::Null;
    while let Some(chunk) = stream.next().await {
        buffer.push_str(&String::from_utf8_lossy(&chunk.expect("chunk")));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let mut event = "";
            let mut data = String::new();
            let mut id = None;
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event: ") {
                    event = if v == "update" { "update" } else { "other" };
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push_str(v);
                } else if let Some(v) = line.strip_prefix("id: ") {
                    id = v.parse().ok();
                }
            }
            if event == "update" {
                ids.push(id.expect("an id"));
                last = serde_json::from_str(&data).expect("update data is JSON");
            }
        }
    }
    (ids, last)
}

#[tokio::test]
async fn two_seats_play_a_full_match_over_http_json_while_a_watcher_sees_every_update() {
    let app = spawn_app(Backend::Postgres).await;
    let id = create(&app).await;
    let watch = app
        .http
        .get(app.url(&format!("/v1/matches/{id}/watch?afterVersion=0")))
        .timeout(std::time::Duration::from_secs(120))
        .send()
        .await
        .expect("watch");
    assert_eq!(watch.status(), StatusCode::OK);
    assert!(
        watch.headers()["content-type"]
            .to_str()
            .expect("ascii")
            .starts_with("text/event-stream")
    );
    let watcher = tokio::spawn(read_sse(watch));
    let tokens = [join(&app, &id, "ann").await, join(&app, &id, "bob").await];

    let mut rng = Lcg(5);
    let mut steps = 0;
    let final_view = loop {
        steps += 1;
        assert!(steps < 5000, "the match ends");
        let spectator = view(&app, &id, None).await;
        assert!(
            list(&spectator["game"]["loveLetter"], "hand").is_empty(),
            "a spectator sees no hand"
        );
        if spectator.get("outcome").is_some() {
            break spectator;
        }
        let seat = list(&spectator, "awaiting")[0].as_u64().expect("seat") as usize;
        let mine = view(&app, &id, Some(&tokens[seat])).await;
        let legal = list(&mine, "legalActions");
        assert!(!legal.is_empty(), "the awaited seat has legal actions");
        let action = legal[rng.below(legal.len())].clone();
        // Every other act asks for its answer without the view.
        let omit_view = steps % 2 == 0;
        let (status, body) = http_act(
            &app,
            &id,
            &tokens[seat],
            &json!({ "action": action, "requestId": format!("step-{steps}"), "omitView": omit_view }),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let version = mine["version"].as_str().expect("a version").parse::<u64>();
        assert_eq!(
            body["version"],
            json!((version.expect("a number") + 1).to_string())
        );
        if omit_view {
            assert_eq!(body.get("view"), None, "{body}");
        } else {
            assert_eq!(body["view"]["seat"], json!(seat));
        }
    };
    let winners = list(&final_view["outcome"], "winners");
    assert!(!winners.is_empty(), "the match reports its winners");
    assert_eq!(final_view["match"]["status"], "MATCH_STATUS_FINISHED");

    let (ids, last) = tokio::time::timeout(std::time::Duration::from_secs(60), watcher)
        .await
        .expect("the stream ends with the match")
        .expect("watcher");
    let final_version: u64 = final_view["version"]
        .as_str()
        .expect("string")
        .parse()
        .expect("number");
    assert_eq!(
        ids,
        (1..=final_version).collect::<Vec<_>>(),
        "every update, in order"
    );
    assert_eq!(list(&last["view"]["outcome"], "winners"), winners);

    let history: Value = app
        .get_json(&format!("/v1/matches/{id}/history"), None)
        .await;
    assert_eq!(
        history["audit"]["seedCommitment"],
        final_view["match"]["seedCommitment"]
    );
    assert_eq!(
        list(&history["audit"], "events").len() as u64,
        final_version
    );
}

#[tokio::test]
async fn bad_http_requests_get_the_right_status_and_a_clear_message_and_change_nothing() {
    let app = spawn_app(Backend::Postgres).await;
    let id = create(&app).await;

    // Acting before every seat is taken.
    let early = join(&app, &id, "ann").await;
    let (status, body) = http_act(
        &app,
        &id,
        &early,
        &json!({ "action": { "loveLetter": { "play": { "card": "A♠" } } }, "requestId": "r0" }),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["rule"], "match-not-started");
    let late = join(&app, &id, "bob").await;
    let tokens = [early, late];
    let before = version(&app, &id).await;

    let spectator = view(&app, &id, None).await;
    let mover = list(&spectator, "awaiting")[0].as_u64().expect("seat") as usize;
    let idle = 1 - mover;
    let idle_hand = list(
        &view(&app, &id, Some(&tokens[idle])).await["game"]["loveLetter"],
        "hand",
    );
    let idle_card = idle_hand[0].as_str().expect("card").to_owned();
    let play =
        json!({ "action": { "loveLetter": { "play": { "card": idle_card } } }, "requestId": "r1" });

    let unknown = app
        .get(&format!("/v1/matches/{}", uuid::Uuid::new_v4()))
        .await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    let body: Value = unknown.json().await.expect("json");
    assert_eq!(body["code"], "NOT_FOUND");

    let malformed = app
        .http
        .post(app.url(&format!("/v1/matches/{id}/act")))
        .bearer_auth(&tokens[mover])
        .header("content-type", "application/json")
        .body("{\"action\": ")
        .send()
        .await
        .expect("act");
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);
    let body: Value = malformed.json().await.expect("json");
    assert_eq!(body["code"], "INVALID_ARGUMENT");
    assert!(
        body["message"]
            .as_str()
            .expect("message")
            .contains("malformed"),
        "{body}"
    );

    let (status, body) = http_act(
        &app,
        &id,
        &tokens[mover],
        &json!({ "action": { "loveLetter": { "dance": {} } }, "requestId": "r2" }),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "unknown action: {body}");

    let (status, body) = http_act(&app, &id, &"cd".repeat(32), &play).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["code"], "UNAUTHENTICATED");

    let no_token = app.post(&format!("/v1/matches/{id}/act"), &play).await;
    assert_eq!(no_token.status(), StatusCode::UNAUTHORIZED);

    let (status, body) = http_act(
        &app,
        &id,
        &tokens[idle],
        &json!({ "action": play["action"], "requestId": "r3", "seat": mover }),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    let (status, body) = http_act(&app, &id, &tokens[idle], &play).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["code"], "FAILED_PRECONDITION");
    assert_eq!(body["rule"], "not-your-turn");

    let legal = list(&view(&app, &id, Some(&tokens[mover])).await, "legalActions");
    let (status, body) = http_act(
        &app,
        &id,
        &tokens[mover],
        &json!({ "action": legal[0], "requestId": "r4", "expectedVersion": "1" }),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["code"], "ABORTED");

    let huge = app
        .http
        .post(app.url(&format!("/v1/matches/{id}/act")))
        .bearer_auth(&tokens[mover])
        .header("content-type", "application/json")
        // Over the 64 KiB default limit, yet small enough for the socket to take it whole
        // before the server answers and closes.
        .body(format!("{{\"requestId\": \"{}\"}}", "x".repeat(80 * 1024)))
        .send()
        .await
        .expect("act");
    assert_eq!(huge.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let body: Value = huge.json().await.expect("json error body");
    assert!(
        body["message"]
            .as_str()
            .expect("message")
            .contains("too large")
    );

    assert_eq!(
        version(&app, &id).await,
        before,
        "refused requests change nothing"
    );
}

#[tokio::test]
async fn health_metrics_and_the_openapi_document_are_served() {
    let app = spawn_app(Backend::Sqlite).await;
    let health = app.get("/healthz").await;
    assert_eq!(health.status(), StatusCode::OK);
    create(&app).await;
    let metrics = app.metrics().await;
    assert!(
        metrics.contains(
            "missive_requests_total{transport=\"http\",rpc=\"CreateMatch\",route=\"POST /v1/matches\",status=\"2xx\"} 1"
        ),
        "{metrics}"
    );
    assert!(metrics.contains("missive_acts_total 0"));
    let doc: Value = app.get_json("/openapi.json", None).await;
    assert!(doc["openapi"].as_str().expect("version").starts_with("3."));
    for path in [
        "/v1/matches",
        "/v1/matches/{matchId}/act",
        "/v1/matches/{matchId}/watch",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} documented");
    }
    assert!(
        doc["components"]["schemas"]["missive.v1.ActRequest"]["properties"]
            .get("requestId")
            .is_some()
    );
}

#[tokio::test]
async fn open_matches_are_listed_and_leaving_frees_a_seat_or_abandons_the_match() {
    let app = spawn_app(Backend::Postgres).await;
    let id = create(&app).await;
    let listed: Value = app.get_json("/v1/matches?kind=love-letter", None).await;
    assert!(
        list(&listed, "matches")
            .iter()
            .any(|m| m["matchId"] == id.as_str()),
        "{listed}"
    );

    let ann = join(&app, &id, "ann").await;
    let left = app
        .http
        .post(app.url(&format!("/v1/matches/{id}/leave")))
        .bearer_auth(&ann)
        .send()
        .await
        .expect("leave");
    assert_eq!(left.status(), StatusCode::OK);
    let body: Value = left.json().await.expect("json");
    assert_eq!(body["match"]["status"], "MATCH_STATUS_OPEN");
    assert!(
        list(&body["match"], "seats")
            .iter()
            .all(|s| !s["taken"].as_bool().unwrap_or(false)),
        "the seat is free again: {body}"
    );
    let stale = app
        .get_as(&format!("/v1/matches/{id}/view"), Some(ann.as_str()))
        .await;
    assert_eq!(
        stale.status(),
        StatusCode::UNAUTHORIZED,
        "a token of a seat given up no longer works"
    );

    let carl = join(&app, &id, "carl").await;
    join(&app, &id, "dana").await;
    let listed: Value = app.get_json("/v1/matches", None).await;
    assert!(
        !list(&listed, "matches")
            .iter()
            .any(|m| m["matchId"] == id.as_str()),
        "a full match is no longer open"
    );
    let left: Value = app
        .http
        .post(app.url(&format!("/v1/matches/{id}/leave")))
        .bearer_auth(&carl)
        .send()
        .await
        .expect("leave")
        .json()
        .await
        .expect("json");
    assert_eq!(left["match"]["status"], "MATCH_STATUS_ABANDONED");
    assert!(
        left["match"]["seed"].as_str().is_some(),
        "an abandoned match reveals its seed"
    );
}

#[tokio::test]
async fn a_fixed_deck_is_refused_unless_allowed_and_then_shown_in_every_view() {
    let deck: Vec<&str> = missive_rules::love_letter::Edition::V2019
        .cards()
        .iter()
        .map(|c| c.as_str())
        .collect();
    let body =
        json!({ "options": { "loveLetter": { "deck": deck, "firstPlayer": 0 } }, "seatCount": 2 });

    let strict = spawn_app(Backend::Sqlite).await;
    let refused = strict.post("/v1/matches", &body).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);

    let app = crate::helpers::spawn_app_with(
        Backend::Sqlite,
        crate::helpers::Options {
            allow_fixed_deck: true,
            ..Default::default()
        },
    )
    .await;
    let created = app.post("/v1/matches", &body).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let created: Value = created.json().await.expect("json");
    assert_eq!(created["match"]["fixedDeck"], true);
    assert!(
        created["match"]["options"]["loveLetter"]["deck"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "the order stays secret while the match runs"
    );
    let id = created["match"]["matchId"].as_str().expect("id").to_owned();
    let token = join(&app, &id, "ann").await;
    join(&app, &id, "bob").await;
    let mine = view(&app, &id, Some(&token)).await;
    assert_eq!(mine["fixedDeck"], true);
    assert_eq!(view(&app, &id, None).await["fixedDeck"], true);
    // Dealt exactly as fixed: set-aside, three face up, then seat 0 (the first player) gets the fifth card.
    assert_eq!(
        list(&mine["game"]["loveLetter"], "faceUp"),
        vec![json!(deck[1]), json!(deck[2]), json!(deck[3])]
    );
    assert!(list(&mine["game"]["loveLetter"], "hand").contains(&json!(deck[4])));
}
