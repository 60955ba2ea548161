//! Retries as a mobile client makes them: a request whose answer was lost is sent again,
//! unchanged, to a server that has since been killed and restarted, that loaded the match from
//! a snapshot taken after the request, or to another replica. Each answers what the first
//! attempt did; an act whose client gave up on it mid-way is applied once and heard of at once.
//! Also: bad input from one client is refused at the edge and harms no one, and a lost database
//! fails every request within a stated bound.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::Connection;

use crate::helpers::{
    Backend, Options, PgProxy, TestApp, assert_each_act_logged_once, backend_tests, spawn_app_with,
    spawn_replica_with,
};

/// Snapshots every four events, so that a short match is loaded from one after a restart.
const SNAPSHOTS_OFTEN: Options = Options {
    allow_fixed_deck: false,
    capture_log: false,
    env: &[("MISSIVE_SNAPSHOT_EVERY", "4")],
};

/// A JSON request to the HTTP API: its status and body.
async fn call(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> (u16, Value) {
    let mut request = app.http.request(method, app.url(path));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = request.send().await.expect("the server answers");
    let status = response.status().as_u16();
    let text = response.text().await.expect("a body");
    let body = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!("{path}: status {status}, a body that is not JSON ({e}): {text}")
    });
    (status, body)
}

async fn post(app: &TestApp, path: &str, token: Option<&str>, body: &Value) -> (u16, Value) {
    call(app, reqwest::Method::POST, path, token, Some(body)).await
}

async fn get(app: &TestApp, path: &str, token: Option<&str>) -> (u16, Value) {
    call(app, reqwest::Method::GET, path, token, None).await
}

fn love_letter(seats: u32) -> Value {
    json!({"options": {"loveLetter": {"edition": "LOVE_LETTER_EDITION_2019"}}, "seatCount": seats})
}

async fn create(app: &TestApp, body: &Value) -> String {
    let (status, created) = post(app, "/v1/matches", None, body).await;
    assert_eq!(status, 201, "{created}");
    created["match"]["matchId"]
        .as_str()
        .expect("a match id")
        .to_owned()
}

/// A two-seat Love Letter match with both seats taken; its id and the seats' tokens.
async fn started(app: &TestApp) -> (String, Vec<String>) {
    let id = create(app, &love_letter(2)).await;
    let mut tokens = Vec::new();
    for player in ["ann", "bob"] {
        let (status, joined) = post(
            app,
            &format!("/v1/matches/{id}/join"),
            None,
            &json!({"player": player}),
        )
        .await;
        assert_eq!(status, 200, "{joined}");
        tokens.push(joined["seatToken"].as_str().expect("token").to_owned());
    }
    (id, tokens)
}

/// The awaited seat's token and the act request its first legal action makes, pinned to the
/// current version; `None` once the match is over.
async fn next_act(
    app: &TestApp,
    id: &str,
    tokens: &[String],
    request_id: &str,
) -> Option<(String, Value)> {
    for token in tokens {
        let (status, view) = get(app, &format!("/v1/matches/{id}/view"), Some(token)).await;
        assert_eq!(status, 200, "{view}");
        let view = &view["view"];
        if let Some(action) = view["legalActions"].as_array().and_then(|a| a.first()) {
            let version = view["version"].as_str().expect("a version").to_owned();
            let body =
                json!({"requestId": request_id, "action": action, "expectedVersion": version});
            return Some((token.clone(), body));
        }
    }
    None
}

/// Plays the first legal action; the act's token, body and answer.
async fn play(
    app: &TestApp,
    id: &str,
    tokens: &[String],
    request_id: &str,
) -> Option<(String, Value, Value)> {
    let (token, body) = next_act(app, id, tokens, request_id).await?;
    let (status, answer) = post(app, &format!("/v1/matches/{id}/act"), Some(&token), &body).await;
    assert_eq!(status, 200, "{answer}");
    Some((token, body, answer))
}

fn version(answer: &Value) -> u64 {
    answer["version"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no version in {answer}"))
}

fn assert_reused(status: u16, body: &Value) {
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["rule"], "request-id-reused", "{body}");
}

async fn count_matches(app: &TestApp, status: &str) -> usize {
    let (code, list) = get(app, &format!("/v1/matches?status={status}&limit=200"), None).await;
    assert_eq!(code, 200, "{list}");
    list["matches"].as_array().map_or(0, Vec::len)
}

/// The act is applied, its answer lost; nine more acts move the match on past two snapshots
/// and the server is killed. The first act, sent again unchanged, is a duplicate with its
/// original version: after the restart, on another replica (PostgreSQL), and after the end.
async fn act_retried_after_snapshot_and_restart(backend: Backend) {
    let mut app = spawn_app_with(backend, SNAPSHOTS_OFTEN).await;
    let (id, tokens) = started(&app).await;
    let (token, first, answer) = play(&app, &id, &tokens, "act-first").await.expect("a move");
    let original = version(&answer);
    for n in 0..8 {
        play(&app, &id, &tokens, &format!("act-{n}"))
            .await
            .expect("the match goes on");
    }
    app.restart_after(Duration::ZERO).await;
    let path = format!("/v1/matches/{id}/act");
    let (status, again) = post(&app, &path, Some(&token), &first).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(version(&again), original);
    // The same id for another request: refused, and nothing changes.
    let before = version(&get(&app, &format!("/v1/matches/{id}/view"), None).await.1["view"]);
    let mut other = first.clone();
    other["expectedVersion"] = json!((before).to_string());
    let (status, refused) = post(&app, &path, Some(&token), &other).await;
    assert_reused(status, &refused);
    let other_seat = tokens.iter().find(|t| **t != token).expect("two seats");
    let (status, refused) = post(&app, &path, Some(other_seat), &first).await;
    assert_reused(status, &refused);
    assert_eq!(
        version(&get(&app, &format!("/v1/matches/{id}/view"), None).await.1["view"]),
        before
    );
    if backend.is_postgres() {
        let replica = spawn_replica_with(&app, &[("MISSIVE_SNAPSHOT_EVERY", "4".into())]).await;
        let (status, again) = post(&replica, &path, Some(&token), &first).await;
        assert_eq!(
            (status, &again["duplicate"]),
            (200, &json!(true)),
            "{again}"
        );
        assert_eq!(version(&again), original);
    }
    // Played to the end, and restarted again: still the same answer.
    let mut n = 0;
    while play(&app, &id, &tokens, &format!("end-{n}"))
        .await
        .is_some()
    {
        n += 1;
        assert!(n < 500, "a match ends");
    }
    app.restart_after(Duration::ZERO).await;
    let (status, again) = post(&app, &path, Some(&token), &first).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(
        (again["duplicate"].clone(), version(&again)),
        (json!(true), original)
    );
}

/// What anyone may read of a match: its history, view and record, as a spectator and as each
/// seat.
async fn reads(app: &TestApp, id: &str, tokens: &[String]) -> Vec<Value> {
    let mut answers = Vec::new();
    for path in ["history", "view", ""].map(|tail| format!("/v1/matches/{id}/{tail}")) {
        let path = path.trim_end_matches('/');
        for token in std::iter::once(None).chain(tokens.iter().map(|t| Some(t.as_str()))) {
            let (status, body) = get(app, path, token).await;
            assert_eq!(status, 200, "{path}: {body}");
            answers.push(body);
        }
    }
    answers
}

/// Archives a match one second after it ends.
const ARCHIVE_AT_ONCE: Options = Options {
    allow_fixed_deck: false,
    capture_log: false,
    env: &[("MISSIVE_ARCHIVE_AFTER_SECS", "1")],
};

/// Waits up to 30 s for the archiver, which looks every second, to make `sql` (a boolean about
/// the match `$1`) true; the connection it asked on.
async fn wait_for_archiver(app: &TestApp, id: &str, what: &str, sql: &str) -> sqlx::PgConnection {
    let mut db = sqlx::PgConnection::connect(app.database_url())
        .await
        .expect("the test database");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (done,): (bool,) = sqlx::query_as(sql)
            .bind(id)
            .fetch_one(&mut db)
            .await
            .expect("the match's rows");
        if done {
            return db;
        }
        assert!(
            Instant::now() < deadline,
            "the match was not {what} in 30 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    an_archived_match_answers_and_dedupes_as_before:
    /// A match played to its end is archived by the server (its event rows become one compressed
    /// row); after a restart, its history, audit log and views are what they were, and its first
    /// and last acts, sent again, are duplicates with their original versions.
    Postgres => an_archived_match_answers_and_dedupes_as_before_on_postgres,
    Citus => an_archived_match_answers_and_dedupes_as_before_on_citus,
}

async fn an_archived_match_answers_and_dedupes_as_before(backend: Backend) {
    let mut app = spawn_app_with(backend, ARCHIVE_AT_ONCE).await;
    let (id, tokens) = started(&app).await;
    let path = format!("/v1/matches/{id}/act");
    let (first_token, first, answer) = play(&app, &id, &tokens, "act-first").await.expect("a move");
    let first_version = version(&answer);
    let mut last = None;
    let mut n = 0;
    while let Some(played) = play(&app, &id, &tokens, &format!("act-{n}")).await {
        last = Some(played);
        n += 1;
        assert!(n < 500, "a match ends");
    }
    let (last_token, last_body, last_answer) = last.expect("more than one act");
    let before = reads(&app, &id, &tokens).await;
    // The archiver runs every second; wait for it.
    let mut db = wait_for_archiver(
        &app,
        &id,
        "archived",
        "SELECT archived FROM matches WHERE match_id = $1::uuid",
    )
    .await;
    let (rows,): (i64,) = sqlx::query_as("SELECT count(*) FROM events WHERE match_id = $1::uuid")
        .bind(&id)
        .fetch_one(&mut db)
        .await
        .expect("the rows");
    assert_eq!(rows, 0, "an archived match keeps no event rows");
    // Served from the archive, by a server that has not cached the match.
    app.restart_after(Duration::ZERO).await;
    assert_eq!(reads(&app, &id, &tokens).await, before);
    for (token, body, original) in [
        (&first_token, &first, first_version),
        (&last_token, &last_body, version(&last_answer)),
    ] {
        let (status, again) = post(&app, &path, Some(token), body).await;
        assert_eq!(status, 200, "{again}");
        assert_eq!(again["duplicate"], true, "{again}");
        assert_eq!(version(&again), original);
    }
}

backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    a_packed_live_match_answers_and_dedupes_as_before:
    /// A match still being played has its older events packed into a block by the server (which
    /// also sweeps live matches when it looks for matches to archive); after a restart, its
    /// history, audit log and views are what they were, its first act sent again is a duplicate
    /// with its original version, and play goes on.
    Postgres => a_packed_live_match_answers_and_dedupes_as_before_on_postgres,
    Citus => a_packed_live_match_answers_and_dedupes_as_before_on_citus,
}

async fn a_packed_live_match_answers_and_dedupes_as_before(backend: Backend) {
    let mut app = spawn_app_with(backend, ARCHIVE_AT_ONCE).await;
    // A match of 30 events or more, still being played (Love Letter rarely ends sooner; if one
    // does, another is started).
    let mut long = None;
    for _ in 0..5 {
        let (id, tokens) = started(&app).await;
        let (token, first, answer) = play(&app, &id, &tokens, "act-first").await.expect("a move");
        let mut n = 0;
        while let Some((_, _, now)) = play(&app, &id, &tokens, &format!("act-{n}")).await {
            n += 1;
            if version(&now) >= 30 {
                long = Some((
                    id.clone(),
                    tokens.clone(),
                    token.clone(),
                    first.clone(),
                    answer.clone(),
                ));
                break;
            }
        }
        if long.is_some() {
            break;
        }
    }
    let (id, tokens, first_token, first, first_answer) = long.expect("a match of 30 events");
    let before = reads(&app, &id, &tokens).await;
    wait_for_archiver(
        &app,
        &id,
        "packed",
        "SELECT EXISTS (SELECT 1 FROM event_blocks WHERE match_id = $1::uuid)",
    )
    .await;
    // Served from the block and the rows, by a server that has not cached the match.
    app.restart_after(Duration::ZERO).await;
    assert_eq!(reads(&app, &id, &tokens).await, before);
    let path = format!("/v1/matches/{id}/act");
    let (status, again) = post(&app, &path, Some(&first_token), &first).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(version(&again), version(&first_answer));
    let (_, _, next) = play(&app, &id, &tokens, "act-after-packing")
        .await
        .expect("the match goes on");
    assert_ne!(next["duplicate"], true, "{next}");
}

backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    act_retried_after_snapshot_and_restart:
    Postgres => an_act_retried_after_a_snapshot_and_a_restart_is_a_duplicate_on_postgres,
    Citus => an_act_retried_after_a_snapshot_and_a_restart_is_a_duplicate_on_citus,
    Sqlite => an_act_retried_after_a_snapshot_and_a_restart_is_a_duplicate_on_sqlite,
}

/// A join whose answer was lost, sent again after a restart (and to a replica): the same seat
/// and a seat token that works. The same id for another player is refused.
async fn join_retried(backend: Backend) {
    let mut app = spawn_app_with(backend, SNAPSHOTS_OFTEN).await;
    let id = create(&app, &love_letter(2)).await;
    let path = format!("/v1/matches/{id}/join");
    let request_id = uuid::Uuid::new_v4().to_string();
    let ann = json!({"player": "ann", "requestId": request_id});
    let (status, first) = post(&app, &path, None, &ann).await;
    assert_eq!(status, 200, "{first}");
    app.restart_after(Duration::ZERO).await;
    let (status, again) = post(&app, &path, None, &ann).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["seatToken"], first["seatToken"]);
    let seat_of = |answer: &Value| answer["seat"].as_u64().unwrap_or(0);
    assert_eq!(seat_of(&again), seat_of(&first));
    let token = first["seatToken"].as_str().expect("token");
    let (status, view) = get(&app, &format!("/v1/matches/{id}/view"), Some(token)).await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(
        view["view"]["seat"].as_u64(),
        Some(seat_of(&first)),
        "{view}"
    );
    // Another player with the same id, or the same player asking for another seat: refused.
    let (status, refused) = post(
        &app,
        &path,
        None,
        &json!({"player": "eve", "requestId": request_id}),
    )
    .await;
    assert_reused(status, &refused);
    let (status, refused) = post(
        &app,
        &path,
        None,
        &json!({"player": "ann", "requestId": request_id, "seat": 1}),
    )
    .await;
    assert_reused(status, &refused);
    // A request id a guesser could find is refused for joins.
    let (status, short) = post(
        &app,
        &path,
        None,
        &json!({"player": "eve", "requestId": "j-1"}),
    )
    .await;
    assert_eq!(status, 400, "{short}");
    // The match starts; a retry is still answered alike, by this server and by a replica.
    let (status, bob) = post(&app, &path, None, &json!({"player": "bob"})).await;
    assert_eq!(status, 200, "{bob}");
    let (status, again) = post(&app, &path, None, &ann).await;
    assert_eq!(
        (status, &again["seatToken"]),
        (200, &first["seatToken"]),
        "{again}"
    );
    if backend.is_postgres() {
        let replica = spawn_replica_with(&app, &[]).await;
        let (status, again) = post(&replica, &path, None, &ann).await;
        assert_eq!(
            (status, &again["seatToken"]),
            (200, &first["seatToken"]),
            "{again}"
        );
    }
    // The whole history holds one join for ann, and it does not show her request id.
    let (status, history) = get(&app, &format!("/v1/matches/{id}/history"), Some(token)).await;
    assert_eq!(status, 200, "{history}");
    let joins = history["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| e["joined"]["player"] == "ann")
        .count();
    assert_eq!(joins, 1, "{history}");
    assert!(!history.to_string().contains(&request_id));
}

backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    join_retried:
    Postgres => a_retried_join_answers_the_same_seat_and_a_working_token_on_postgres,
    Citus => a_retried_join_answers_the_same_seat_and_a_working_token_on_citus,
    Sqlite => a_retried_join_answers_the_same_seat_and_a_working_token_on_sqlite,
}

/// A creation sent twice with one request id makes one match; with another body, a refusal.
/// A leave and a webhook registration retried answer what they first did.
async fn create_leave_and_webhook_retried(backend: Backend) {
    let mut app = spawn_app_with(backend, Options::default()).await;
    let mut body = love_letter(3);
    body["requestId"] = json!("create-7a1f9c");
    let id = create(&app, &body).await;
    app.restart_after(Duration::ZERO).await;
    assert_eq!(create(&app, &body).await, id, "the same match");
    assert_eq!(
        count_matches(&app, "MATCH_STATUS_OPEN").await,
        1,
        "and no orphan"
    );
    let mut other = body.clone();
    other["seatCount"] = json!(2);
    let (status, refused) = post(&app, "/v1/matches", None, &other).await;
    assert_reused(status, &refused);
    assert_eq!(count_matches(&app, "MATCH_STATUS_OPEN").await, 1);

    let (status, joined) = post(
        &app,
        &format!("/v1/matches/{id}/join"),
        None,
        &json!({"player": "ann"}),
    )
    .await;
    assert_eq!(status, 200, "{joined}");
    let token = joined["seatToken"].as_str().expect("token").to_owned();
    let hook = format!("/v1/matches/{id}/webhook");
    let register = json!({"url": "http://127.0.0.1:9/hook", "requestId": "hook-1"});
    let (status, first) = call(
        &app,
        reqwest::Method::PUT,
        &hook,
        Some(&token),
        Some(&register),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    app.restart_after(Duration::ZERO).await;
    let (status, again) = call(
        &app,
        reqwest::Method::PUT,
        &hook,
        Some(&token),
        Some(&register),
    )
    .await;
    assert_eq!(
        (status, &again["secret"]),
        (200, &first["secret"]),
        "{again}"
    );
    let moved = json!({"url": "http://127.0.0.1:9/elsewhere", "requestId": "hook-1"});
    let (status, refused) = call(
        &app,
        reqwest::Method::PUT,
        &hook,
        Some(&token),
        Some(&moved),
    )
    .await;
    assert_reused(status, &refused);
    let (_, registered) = get(&app, &hook, Some(&token)).await;
    assert_eq!(registered["url"], "http://127.0.0.1:9/hook", "{registered}");

    let leave = format!("/v1/matches/{id}/leave");
    let (status, left) = post(&app, &leave, Some(&token), &json!({"requestId": "leave-1"})).await;
    assert_eq!(status, 200, "{left}");
    // The seat is free again and the token no longer valid, but the retry is recognised.
    let (status, again) = post(&app, &leave, Some(&token), &json!({"requestId": "leave-1"})).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(
        again["match"]["version"], left["match"]["version"],
        "nothing new: {again}"
    );
    let (status, refused) = post(&app, &leave, None, &json!({"requestId": "leave-1"})).await;
    assert_eq!(status, 401, "{refused}");
    let (status, refused) =
        post(&app, &leave, Some(&token), &json!({"requestId": "leave-2"})).await;
    assert_eq!(status, 401, "a new leave needs a valid token: {refused}");
}

backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    create_leave_and_webhook_retried:
    Postgres => retried_creates_leaves_and_webhooks_answer_the_original_outcome_on_postgres,
    Citus => retried_creates_leaves_and_webhooks_answer_the_original_outcome_on_citus,
    Sqlite => retried_creates_leaves_and_webhooks_answer_the_original_outcome_on_sqlite,
}

/// HTTP clients that give up on their acts: each act is first sent with a client timeout (from
/// 50 µs to 8 ms, so the connection closes before the server decides, while it appends, or
/// after), then sent again unchanged, as a client that lost its answer would. The retry
/// answers the act once: the original version when the first attempt was answered, and either
/// a duplicate or a fresh version when it was not. Every act is in the audit log exactly once,
/// at the version its retry gave.
async fn acts_given_up_over_http(backend: Backend) {
    let app = spawn_app_with(backend, Options::default()).await;
    let timeouts = [50, 200, 500, 1_000, 2_000, 4_000, 8_000].map(Duration::from_micros);
    let (mut given_up, mut applied_anyway) = (0, 0);
    for game in 0..3 {
        let (id, tokens) = started(&app).await;
        let path = format!("/v1/matches/{id}/act");
        let mut acts = HashMap::new();
        while let Some((token, body)) = next_act(
            &app,
            &id,
            &tokens,
            &format!("given-up-{game}-{}", acts.len()),
        )
        .await
        {
            let first = app
                .http
                .post(app.url(&path))
                .bearer_auth(&token)
                .json(&body)
                .timeout(timeouts[acts.len() % timeouts.len()])
                .send()
                .await;
            let first = match first {
                Ok(answer) => {
                    assert_eq!(answer.status(), 200, "a first attempt answered otherwise");
                    answer
                        .json::<Value>()
                        .await
                        .ok()
                        .map(|answer| version(&answer))
                }
                Err(error) => {
                    assert!(
                        error.is_timeout(),
                        "a first attempt failed otherwise: {error}"
                    );
                    None
                }
            };
            let (status, retry) = post(&app, &path, Some(&token), &body).await;
            assert_eq!(status, 200, "the retry is answered: {retry}");
            match first {
                Some(answered) => {
                    assert_eq!(retry["duplicate"], true, "{retry}");
                    assert_eq!(version(&retry), answered, "with its original version");
                }
                None => {
                    given_up += 1;
                    applied_anyway += u32::from(retry["duplicate"] == true);
                }
            }
            let request_id = body["requestId"].as_str().expect("an id").to_owned();
            assert!(acts.insert(request_id, version(&retry)).is_none());
        }
        let (status, history) = get(&app, &format!("/v1/matches/{id}/history"), None).await;
        assert_eq!(status, 200, "{history}");
        let log = history["audit"]["events"].as_array().expect("the full log");
        assert_each_act_logged_once(
            &acts,
            log.iter().map(|event| {
                let seq = event["seq"].as_str().and_then(|seq| seq.parse().ok());
                (event["requestId"].as_str(), seq.expect("a seq"))
            }),
        );
    }
    assert!(given_up > 0, "no first attempt was given up");
    eprintln!("{given_up} acts given up, {applied_anyway} of them applied before they were");
}

backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    acts_given_up_over_http:
    Postgres => acts_given_up_over_http_are_applied_once_on_postgres,
    Citus => acts_given_up_over_http_are_applied_once_on_citus,
    Sqlite => acts_given_up_over_http_are_applied_once_on_sqlite,
}

/// An act whose HTTP client gave up still runs to its end once it reached the server: the bot
/// owed the next turn plays it at once, as after any act, not at the next poll for due turns
/// (10 s here). Each act is sent with a client timeout (300 µs to 3 ms, around the time an act
/// takes, so that the connection closes while it appends), then again unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_answers_an_act_its_http_client_gave_up_on_at_once_on_postgres() {
    let options = Options {
        env: &[("MISSIVE_TURN_POLL_MS", "10000")],
        ..Options::default()
    };
    let app = spawn_app_with(Backend::Postgres, options).await;
    let timeouts = [300, 500, 700, 900, 1_200, 1_600, 2_000, 3_000].map(Duration::from_micros);
    let (mut acts, mut applied_anyway) = (0, 0);
    for game in 0..8 {
        let mut body = love_letter(2);
        body["bots"] = json!([{"seat": 1}]);
        let id = create(&app, &body).await;
        let (status, joined) = post(
            &app,
            &format!("/v1/matches/{id}/join"),
            None,
            &json!({"player": "ann", "seat": 0}),
        )
        .await;
        assert_eq!(status, 200, "{joined}");
        let tokens = [joined["seatToken"].as_str().expect("token").to_owned()];
        let path = format!("/v1/matches/{id}/act");
        loop {
            let asked = Instant::now();
            let next = loop {
                let (status, view) = get(&app, &format!("/v1/matches/{id}/view"), None).await;
                assert_eq!(status, 200, "{view}");
                if view["view"].get("outcome").is_some() {
                    break None;
                }
                if view["view"]["awaiting"] == json!([0]) {
                    break next_act(&app, &id, &tokens, &format!("bot-{game}-{acts}")).await;
                }
                assert!(
                    asked.elapsed() < Duration::from_secs(3),
                    "the bot has not played within 3 s of act {acts}: {view}"
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            };
            let Some((token, act)) = next else { break };
            let first = app
                .http
                .post(app.url(&path))
                .bearer_auth(&token)
                .json(&act)
                .timeout(timeouts[acts % timeouts.len()])
                .send()
                .await;
            acts += 1;
            if first.is_ok_and(|answer| answer.status() == 200) {
                continue;
            }
            let (status, retry) = post(&app, &path, Some(&token), &act).await;
            assert_eq!(status, 200, "the retry is answered: {retry}");
            applied_anyway += u32::from(retry["duplicate"] == true);
        }
    }
    assert!(
        applied_anyway > 0,
        "no act was applied after its client gave up"
    );
    eprintln!("{acts} acts, {applied_anyway} applied after their client gave up");
}

/// Input no store can hold is refused at the edge with 400, stores nothing, and leaves every
/// other request working, also after a restart.
async fn bad_input_harms_no_one(backend: Backend) {
    let mut app = spawn_app_with(backend, Options::default()).await;
    let (id, tokens) = started(&app).await;
    let (token, mut act) = next_act(&app, &id, &tokens, "ok-1").await.expect("a move");
    let act_path = format!("/v1/matches/{id}/act");
    act["requestId"] = json!("bad\u{0}id");
    let (status, refused) = post(&app, &act_path, Some(&token), &act).await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap_or_default()
            .contains("requestId"),
        "{refused}"
    );
    let open = create(&app, &love_letter(2)).await;
    let (status, refused) = post(
        &app,
        &format!("/v1/matches/{open}/join"),
        None,
        &json!({"player": "nul\u{0}name"}),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    let (status, refused) = get(&app, "/v1/matches?kind=love%00letter", None).await;
    assert_eq!(status, 400, "{refused}");
    let (status, refused) = get(&app, "/v1/matches?kind=chess", None).await;
    assert_eq!(status, 400, "{refused}");
    let (status, refused) = get(&app, "/v1/matches?pageToken=%00", None).await;
    assert_eq!(status, 400, "{refused}");
    let (status, refused) = call(
        &app,
        reqwest::Method::PUT,
        &format!("/v1/matches/{id}/webhook"),
        Some(&token),
        Some(&json!({"url": "http://127.0.0.1:9/a\u{0}b"})),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    for secs in [2_147_483_648u64, 4_294_967_295, 0] {
        let mut body = love_letter(2);
        body["turnTimeoutSecs"] = json!(secs);
        let (status, refused) = post(&app, "/v1/matches", None, &body).await;
        assert_eq!(status, 400, "{secs}: {refused}");
        assert!(
            refused["message"]
                .as_str()
                .unwrap_or_default()
                .contains("turnTimeoutSecs")
        );
    }
    assert_eq!(
        count_matches(&app, "MATCH_STATUS_OPEN").await,
        1,
        "nothing more was stored"
    );
    // Everyone else carries on, the bad client's match included.
    act["requestId"] = json!("ok-1");
    let (status, acted) = post(&app, &act_path, Some(&token), &act).await;
    assert_eq!(status, 200, "{acted}");
    app.restart_after(Duration::ZERO).await;
    let health = app.get("/healthz").await;
    assert_eq!(health.status(), 200);
    assert_eq!(count_matches(&app, "MATCH_STATUS_OPEN").await, 1);
    assert_eq!(count_matches(&app, "MATCH_STATUS_ACTIVE").await, 1);
}

backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    bad_input_harms_no_one:
    Postgres => bad_input_is_refused_at_the_edge_and_harms_no_one_on_postgres,
    Citus => bad_input_is_refused_at_the_edge_and_harms_no_one_on_citus,
    Sqlite => bad_input_is_refused_at_the_edge_and_harms_no_one_on_sqlite,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_frameworks_own_errors_carry_the_json_error_body() {
    let app = spawn_app_with(Backend::Sqlite, Options::default()).await;
    let (status, body) = get(&app, "/no/such/route", None).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (404, Some("NOT_FOUND")),
        "{body}"
    );
    let (status, body) = call(&app, reqwest::Method::DELETE, "/v1/matches", None, None).await;
    assert_eq!(status, 405, "{body}");
    assert!(
        body["code"].is_string() && body["message"].is_string(),
        "{body}"
    );
    let (status, body) = get(&app, "/v1/matches/%FF%FE/view", None).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["message"].is_string(), "{body}");
    let (status, body) = get(&app, "/v1/matches/not-a-uuid/view?seat=x", None).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = get(&app, "/v1/matches?limit=-1", None).await;
    assert_eq!(status, 400, "{body}");
}

/// With the database hanging (connections accepted, never answered), every request fails
/// within the pool's connection wait plus the stated grace, however many of them queue behind
/// one match.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_database_fails_every_request_within_the_stated_bound() {
    const WAIT_MS: u64 = 3000;
    let first = spawn_app_with(Backend::Postgres, Options::default()).await;
    let proxy = PgProxy::start().await;
    let app = spawn_replica_with(
        &first,
        &[
            ("DATABASE_URL", proxy.url(first.database_url())),
            ("MISSIVE_DB_ACQUIRE_TIMEOUT_MS", WAIT_MS.to_string()),
        ],
    )
    .await;
    let (id, tokens) = started(&app).await;
    let (token, act) = next_act(&app, &id, &tokens, "cut-0").await.expect("a move");
    let open = create(&app, &love_letter(2)).await;
    proxy.hang();
    let bound = Duration::from_millis(WAIT_MS) + missive_server::service::STORE_GRACE;
    let mut calls = tokio::task::JoinSet::new();
    for n in 0..24 {
        let (app_http, base) = (app.http.clone(), app.url(""));
        let (id, open, token) = (id.clone(), open.clone(), token.clone());
        let mut act = act.clone();
        act["requestId"] = json!(format!("cut-{n}"));
        calls.spawn(async move {
            let started = Instant::now();
            let request = match n % 8 {
                0..=5 => app_http
                    .post(format!("{base}/v1/matches/{id}/act"))
                    .bearer_auth(&token)
                    .json(&act),
                6 => app_http.get(format!("{base}/v1/matches/{id}/view")),
                _ => app_http
                    .post(format!("{base}/v1/matches/{open}/join"))
                    .json(&json!({"player": format!("p{n}")})),
            };
            let status = request.send().await.expect("answered").status().as_u16();
            (n, status, started.elapsed())
        });
    }
    let mut slowest = Duration::ZERO;
    while let Some(done) = calls.join_next().await {
        let (n, status, took) = done.expect("joined");
        assert_eq!(status, 503, "request {n}");
        slowest = slowest.max(took);
    }
    // Scheduling on a loaded two-core machine gets a little slack on top of the bound.
    assert!(
        slowest <= bound + Duration::from_millis(500),
        "the slowest failure took {slowest:?}, the bound is {bound:?}"
    );
    eprintln!(
        "database hanging: 24 concurrent requests failed, the slowest after {slowest:?} (bound {bound:?})"
    );
    proxy.restore();
    let restored = Instant::now();
    loop {
        let health = app.get("/healthz").await;
        if health.status() == 200 {
            break;
        }
        assert!(
            restored.elapsed() < Duration::from_secs(15),
            "recovers by itself"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
