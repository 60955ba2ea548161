//! The `missive` binary's client commands against a real server: `history` saves a finished
//! match's history as the HTTP/JSON API returns it, and `verify` checks it offline, naming the
//! first event of a tampered copy that does not verify.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use missive_proto::v1 as pb;
use missive_server::games::Registry;
use missive_store::{GENESIS_HASH, canonical_bytes, event_hash};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Backend, Lcg, TestApp, backend_tests, spawn_app};

/// Runs `missive ARGS` with the settings a server would also find in its environment, to show
/// that they do not get in a client command's way.
fn missive(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_missive"))
        .args(args)
        .env("MISSIVE_GRPC_ADDR", "127.0.0.1:0")
        .env("MISSIVE_HTTP_ADDR", "127.0.0.1:0")
        .env_remove("MISSIVE_SERVER")
        .output()
        .expect("the missive binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn post(app: &TestApp, path: &str, token: Option<&str>, body: Value) -> Value {
    let mut request = app.http.post(app.url(path)).json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("POST");
    let status = response.status();
    let body: Value = response.json().await.expect("JSON");
    assert!(status.is_success(), "POST {path}: {status} {body}");
    body
}

async fn get(app: &TestApp, path: &str, token: Option<&str>) -> Value {
    let mut request = app.http.get(app.url(path));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("GET");
    assert_eq!(response.status(), StatusCode::OK, "GET {path}");
    response.json().await.expect("JSON")
}

/// Creates a two-seat Love Letter match over HTTP/JSON; its id.
async fn create_love_letter(app: &TestApp) -> String {
    let created = post(
        app,
        "/v1/matches",
        None,
        json!({ "options": { "loveLetter": {} }, "seatCount": 2 }),
    )
    .await;
    created["match"]["matchId"]
        .as_str()
        .expect("matchId")
        .to_owned()
}

/// Ann and Bob take the seats of match `id` over HTTP/JSON; their seat tokens.
async fn join_ann_and_bob(app: &TestApp, id: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    for player in ["ann", "bob"] {
        let path = format!("/v1/matches/{id}/join");
        let joined = post(app, &path, None, json!({ "player": player })).await;
        tokens.push(joined["seatToken"].as_str().expect("token").to_owned());
    }
    tokens
}

/// A two-seat Love Letter match played to its end over HTTP/JSON, with random legal actions.
async fn play_a_match(app: &TestApp) -> String {
    let id = create_love_letter(app).await;
    let tokens = join_ann_and_bob(app, &id).await;
    play_out(app, &id, &tokens, &mut Lcg(21)).await;
    id
}

/// Plays match `id` to its end over HTTP/JSON, each awaited seat making a random legal act
/// chosen by `rng`; the finished match's spectator view.
async fn play_out(app: &TestApp, id: &str, tokens: &[String], rng: &mut Lcg) -> Value {
    let mut step = 0;
    loop {
        step += 1;
        assert!(step < 5000, "the match ends");
        let request_id = format!("step-{step}");
        let view = get(app, &format!("/v1/matches/{id}/view"), None).await["view"].clone();
        if view.get("outcome").is_some() {
            return view;
        }
        // The awaited seat; seat 0 is left out of the proto3 JSON.
        let seat = view["awaiting"][0].as_u64().unwrap_or(0) as usize;
        let mine = get(app, &format!("/v1/matches/{id}/view"), Some(&tokens[seat])).await;
        let legal = mine["view"]["legalActions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let action = legal[rng.below(legal.len())].clone();
        post(
            app,
            &format!("/v1/matches/{id}/act"),
            Some(&tokens[seat]),
            json!({ "action": action, "requestId": request_id }),
        )
        .await;
    }
}

fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("missive-cli-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn verify(file: &Path, match_id: &str) -> Output {
    missive(&["verify", &file.display().to_string(), "--match", match_id])
}

/// The command exited with `code` and said `what` on stderr.
fn assert_exits_saying(out: &Output, code: i32, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(text(&out.stderr).contains(what), "{}", text(&out.stderr));
}

/// Writes `history` with its audit log replaced by `log`.
fn write_with_log(path: &Path, history: &Value, log: &pb::AuditLog) {
    let mut history = history.clone();
    history["audit"] = serde_json::to_value(log).expect("an AuditLog serialises");
    std::fs::write(path, serde_json::to_vec(&history).expect("JSON")).expect("write");
}

/// Writes `history` with its audit log replaced by `log` to `path`, and verifies it (as of
/// match `id`, if given); the verifier's output.
fn verify_written(path: &Path, history: &Value, log: &pb::AuditLog, id: Option<&str>) -> Output {
    write_with_log(path, history, log);
    match id {
        Some(id) => verify(path, id),
        None => missive(&["verify", &path.display().to_string()]),
    }
}

/// Recomputes the hash chain from `from` (an index into the events) on, as a forger who
/// changed an event would, so that only the replay can tell.
fn rechain(log: &mut pb::AuditLog, match_id: &str, from: usize) {
    let registry = Registry::new();
    let id = match_id.parse().expect("uuid");
    let created = match &log.events[0].body {
        Some(pb::audit_event::Body::Created(c)) => c.clone(),
        other => panic!("the first event is the creation, not {other:?}"),
    };
    let mut prev = if from == 0 {
        GENESIS_HASH
    } else {
        let hex = &log.events[from - 1].hash;
        hex::decode(hex).expect("hex").try_into().expect("32 bytes")
    };
    for event in &mut log.events[from..] {
        let stored = missive_server::audit::stored_event(&registry, event, Some(&created))
            .expect("the forged event still reads");
        let hash = event_hash(&prev, &canonical_bytes(id, event.seq, &stored));
        event.prev_hash = hex::encode(prev);
        event.hash = hex::encode(hash);
        prev = hash;
    }
}

backend_tests! {
    #[tokio::test]
    missive_verify_passes_a_finished_history_and_names_the_first_event_of_a_tampered_one:
    Postgres => missive_verify_passes_a_finished_history_and_names_the_first_event_of_a_tampered_one_on_postgres,
    Citus => missive_verify_passes_a_finished_history_and_names_the_first_event_of_a_tampered_one_on_citus,
}

async fn missive_verify_passes_a_finished_history_and_names_the_first_event_of_a_tampered_one(
    backend: Backend,
) {
    let app = spawn_app(backend).await;
    let id = play_a_match(&app).await;
    let dir = scratch_dir();

    // The history as a client fetches it, saved unchanged, under the match's id.
    let response = app.get(&format!("/v1/matches/{id}/history")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["missive-audit-format"],
        "2",
        "the audit format travels with the history"
    );
    let body = response.bytes().await.expect("body");
    let saved = dir.join(format!("{id}.json"));
    std::fs::write(&saved, &body).expect("write");

    // `missive history -o` saves the same bytes.
    let fetched = dir.join("fetched.json");
    let out = missive(&[
        "history",
        &id,
        "--server",
        &app.http_base,
        "-o",
        &fetched.display().to_string(),
    ]);
    assert!(out.status.success(), "history: {}", text(&out.stderr));
    assert_eq!(std::fs::read(&fetched).expect("read"), body.to_vec());

    // The log's head names its match: no --match, whatever the file's name.
    let out = missive(&["verify", &saved.display().to_string()]);
    assert_eq!(out.status.code(), Some(0), "verify: {}", text(&out.stderr));
    let history: Value = serde_json::from_slice(&body).expect("JSON");
    let events = history["audit"]["events"].as_array().expect("events").len();
    let summary = text(&out.stdout);
    assert_eq!(summary.lines().count(), 1, "{summary}");
    assert!(
        summary.starts_with(&format!("OK match {id}: love-letter, {events} events")),
        "{summary}"
    );
    assert!(summary.contains("won by seat"), "{summary}");
    assert!(
        summary.contains("the head's signature was not checked"),
        "{summary}"
    );
    let out = missive(&["verify", &fetched.display().to_string()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(verify(&fetched, &id).status.code(), Some(0));

    // Another match's id: the head names this one.
    let other = uuid::Uuid::new_v4().to_string();
    let out = verify(&saved, &other);
    assert_exits_saying(&out, 1, &format!("the log's head is of match \"{id}\""));

    let log: pb::AuditLog = serde_json::from_value(history["audit"].clone()).expect("an AuditLog");

    // A log of format 1 (no head), as older servers exported it, still verifies, and says
    // what it could not check; under another match's id its very first hash no longer holds.
    let mut old = log.clone();
    old.format = 0;
    old.head = None;
    let file = dir.join(format!("{id}-format-1.json"));
    let out = verify_written(&file, &history, &old, Some(&id));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("no head (audit format 1)"),
        "{}",
        text(&out.stdout)
    );
    let out = missive(&["verify", &file.display().to_string()]);
    // A format 1 log names no match.
    assert_exits_saying(&out, 2, "--match");
    let out = verify(&file, &other);
    assert_exits_saying(&out, 1, "event 1 (created) does not verify");

    // The last event dropped: every hash left holds, and the head says the log goes on.
    let mut cut = log.clone();
    let last = cut.events.pop().expect("events");
    let file = dir.join("cut.json");
    let out = verify_written(&file, &history, &cut, None);
    assert_exits_saying(
        &out,
        1,
        &format!(
            "the log stops short of its head: it holds {} events, and its head is at version {}",
            last.seq - 1,
            last.seq
        ),
    );

    // Cut short with its head moved back to match: the head still says the match finished,
    // and the events left reach no outcome.
    let mut forged = cut.clone();
    let head = forged.head.as_mut().expect("a head");
    head.version -= 1;
    head.hash = cut.events.last().expect("events").hash.clone();
    let file = dir.join("cut-and-moved.json");
    let out = verify_written(&file, &history, &forged, None);
    assert_exits_saying(
        &out,
        1,
        "the head says the match finished, but its events reach no outcome",
    );

    // The head's hash changed: the log does not end where its head says.
    let mut tampered = log.clone();
    tampered.head.as_mut().expect("a head").hash = last.prev_hash.clone();
    let file = dir.join("head-hash.json");
    let out = verify_written(&file, &history, &tampered, None);
    assert_exits_saying(&out, 1, "is not the head's");

    // One byte of one event: the second player's name.
    let mut tampered = log.clone();
    let joined = tampered
        .events
        .iter_mut()
        .filter(|e| e.kind == "joined")
        .nth(1)
        .expect("a second join");
    let seq = joined.seq;
    if let Some(pb::audit_event::Body::Joined(j)) = &mut joined.body {
        assert_eq!(j.player, "bob");
        j.player = "bod".into();
    }
    let file = dir.join("one-byte.json");
    let out = verify_written(&file, &history, &tampered, Some(&id));
    assert_exits_saying(
        &out,
        1,
        &format!("event {seq} (joined) does not verify: hash does not match"),
    );

    // The seed.
    let mut tampered = log.clone();
    let mut seed = hex::decode(&tampered.seed).expect("hex");
    seed[0] ^= 1;
    tampered.seed = hex::encode(seed);
    let file = dir.join("seed.json");
    let out = verify_written(&file, &history, &tampered, Some(&id));
    assert_exits_saying(&out, 1, "the seed does not match the commitment");

    // An action played by the other seat, with the chain recomputed from there on: every
    // hash holds, and the rules refuse it.
    let mut tampered = log.clone();
    let at = tampered
        .events
        .iter()
        .position(|e| e.kind == "action")
        .expect("an action");
    let event = &mut tampered.events[at];
    let seq = event.seq;
    if let Some(pb::audit_event::Body::Action(a)) = &mut event.body {
        a.seat = 1 - a.seat;
        event.actor = Some(a.seat);
    }
    rechain(&mut tampered, &id, at);
    let file = dir.join("action.json");
    let out = verify_written(&file, &history, &tampered, Some(&id));
    assert_exits_saying(
        &out,
        1,
        &format!("event {seq} (action) does not verify: the rules refuse this action"),
    );

    // An unfinished match's history has no audit log to verify.
    let open = post(
        &app,
        "/v1/matches",
        None,
        json!({ "options": { "loveLetter": {} }, "seatCount": 2 }),
    )
    .await["match"]["matchId"]
        .as_str()
        .expect("matchId")
        .to_owned();
    let out = missive(&["history", &open, "--server", &app.http_base]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let file = dir.join(format!("{open}.json"));
    std::fs::write(&file, &out.stdout).expect("write");
    let out = missive(&["verify", &file.display().to_string()]);
    assert_exits_saying(&out, 2, "no audit log");

    // An unknown match: the server's answer, and a failure.
    let out = missive(&["history", &other, "--server", &app.http_base]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("404"), "{}", text(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn missive_watch_prints_every_update_until_the_match_ends() {
    let app = spawn_app(Backend::Sqlite).await;
    let id = create_love_letter(&app).await;
    let watcher = Command::new(env!("CARGO_BIN_EXE_missive"))
        .args(["watch", &id, "--server", &app.http_base])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("missive watch starts");
    // Join and play the match out (the watch began before the first join).
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let tokens = join_ann_and_bob(&app, &id).await;
    let finished = play_out(&app, &id, &tokens, &mut Lcg(3)).await;
    let version = finished["version"].as_str().expect("version").to_owned();
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::task::spawn_blocking(move || watcher.wait_with_output()),
    )
    .await
    .expect("missive watch ends with the match")
    .expect("joined")
    .expect("output");
    assert!(out.status.success());
    let updates: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON update a line"))
        .collect();
    let versions: Vec<String> = updates
        .iter()
        .map(|u| u["version"].as_str().expect("version").to_owned())
        .collect();
    let last: u64 = version.parse().expect("a number");
    assert_eq!(
        versions,
        (1..=last).map(|v| v.to_string()).collect::<Vec<_>>(),
        "every update, in order"
    );
}

/// `missive play` with its input piped in: it creates a match against a bot, plays the first
/// legal action each turn, and stops at the end of the match with the result.
#[tokio::test]
async fn missive_play_creates_a_match_against_a_bot_and_plays_it_to_the_end() {
    use std::io::Write;
    use std::process::Stdio;

    let app = spawn_app(Backend::Sqlite).await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_missive"))
        .args([
            "play",
            "--create",
            "love-letter",
            "--bot",
            "1",
            "--player",
            "ann",
        ])
        .args(["--server", &app.http_base])
        .env_remove("MISSIVE_SEAT_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("missive play starts");
    // Far more answers than a match needs: first one that is no number, then always the
    // first action listed.
    let mut stdin = child.stdin.take().expect("stdin");
    std::thread::spawn(move || {
        let _ = stdin.write_all(b"x\n");
        for _ in 0..2_000 {
            if stdin.write_all(b"1\n").is_err() {
                break;
            }
        }
    });
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("thread")
        .expect("missive play ends");
    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        text(&output.stderr)
    );
    assert!(stdout.contains("created love-letter match "), "{stdout}");
    assert!(stdout.contains("you are seat 0"), "{stdout}");
    assert!(
        stdout.contains("pick a number from 1 to"),
        "a bad answer is asked again: {stdout}"
    );
    assert!(
        stdout.contains("  1. Play the "),
        "actions are listed by number: {stdout}"
    );
    let result = stdout
        .lines()
        .find(|l| l.starts_with("match over: won by seat(s) "))
        .unwrap_or_else(|| panic!("the match ends: {stdout}"));

    // What it printed is what the server holds.
    let id = stdout
        .split("created love-letter match ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .expect("the match id");
    let view = get(&app, &format!("/v1/matches/{id}/view"), None).await;
    assert_eq!(view["view"]["match"]["status"], "MATCH_STATUS_FINISHED");
    let winners: Vec<String> = view["view"]["outcome"]["winners"]
        .as_array()
        .expect("winners")
        .iter()
        .map(|w| w.to_string())
        .collect();
    assert!(
        result.contains(&winners.join(", ")),
        "{result} vs {winners:?}"
    );
}

/// `missive migrate` brings a fresh store up to date and exits; a server then starts on it.
#[tokio::test]
async fn missive_migrate_sets_up_a_store_and_exits() {
    let dir = scratch_dir();
    let output = Command::new(env!("CARGO_BIN_EXE_missive"))
        .arg("migrate")
        .env_remove("DATABASE_URL")
        .env("MISSIVE_DATA_DIR", &dir)
        .output()
        .expect("missive migrate runs");
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout).trim(), "migrated: sqlite");
    assert!(dir.join("missive.db").is_file(), "the store was created");
    // Twice is harmless: nothing is left to apply.
    let again = Command::new(env!("CARGO_BIN_EXE_missive"))
        .arg("migrate")
        .env_remove("DATABASE_URL")
        .env("MISSIVE_DATA_DIR", &dir)
        .output()
        .expect("missive migrate runs");
    assert!(again.status.success(), "{}", text(&again.stderr));
    let unreachable = Command::new(env!("CARGO_BIN_EXE_missive"))
        .args([
            "migrate",
            "--database-url",
            "postgres://nobody@127.0.0.1:1/none",
        ])
        .env("MISSIVE_DB_ACQUIRE_TIMEOUT_MS", "500")
        .output()
        .expect("missive migrate runs");
    assert_eq!(
        unreachable.status.code(),
        Some(1),
        "{}",
        text(&unreachable.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
