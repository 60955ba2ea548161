//! The signed head of an exported audit log, on both stores: the key the server serves over
//! HTTP and gRPC checks the head of every log it exports, with `audit::check_signature` and
//! with `missive verify --key`, and no other key or changed signature does; the key is the
//! store's, the same after a restart; and the command the web client's audit panel prints
//! verifies the file its download link saves.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use missive_proto::v1 as pb;
use missive_server::audit;
use missive_server::games::Registry;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Backend, TestApp, audit_log, backend_tests, spawn_app, spectator_view};

fn missive(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_missive"))
        .args(args)
        .current_dir(dir)
        .env_remove("MISSIVE_SERVER")
        .output()
        .expect("the missive binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("missive-audit-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// A two-seat Love Letter match between two bots, which the server plays to its end.
async fn finished_match(app: &TestApp) -> String {
    let response = app
        .http
        .post(app.url("/v1/matches"))
        .json(&json!({
            "options": { "loveLetter": {} },
            "seatCount": 2,
            "bots": [{ "seat": 0 }, { "seat": 1 }]
        }))
        .send()
        .await
        .expect("create");
    assert_eq!(response.status(), StatusCode::CREATED);
    let created: Value = response.json().await.expect("JSON");
    let id = created["match"]["matchId"]
        .as_str()
        .expect("matchId")
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let info: Value = app.get_json(&format!("/v1/matches/{id}"), None).await;
        if info["match"]["status"] == "MATCH_STATUS_FINISHED" {
            return id;
        }
        assert!(Instant::now() < deadline, "the bots finish {id}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The server's audit keys over HTTP/JSON, the body as served.
async fn http_keys(app: &TestApp) -> Value {
    let response = app.get("/v1/audit/keys").await;
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.expect("JSON")
}

async fn grpc_keys(app: &TestApp) -> Vec<pb::AuditKey> {
    app.grpc()
        .await
        .get_audit_keys(pb::GetAuditKeysRequest {})
        .await
        .expect("GetAuditKeys")
        .into_inner()
        .keys
}

/// The public key of the one key the server serves.
fn the_key(keys: &Value) -> [u8; 32] {
    let keys = keys["keys"].as_array().expect("keys");
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert_eq!(keys[0]["algorithm"], "ed25519");
    let public = audit::parse_public_key(keys[0]["publicKey"].as_str().expect("publicKey"))
        .expect("64 hex digits");
    assert_eq!(
        keys[0]["keyId"],
        audit::key_id(&public),
        "the id is the key's"
    );
    public
}

/// The history as the web client downloads it: the body of GET /v1/matches/{id}/history.
async fn history_body(app: &TestApp, id: &str) -> Vec<u8> {
    let response = app.get(&format!("/v1/matches/{id}/history")).await;
    assert_eq!(response.status(), StatusCode::OK);
    response.bytes().await.expect("body").to_vec()
}

async fn a_signed_head_verifies_with_the_served_key_and_nothing_else_does(backend: Backend) {
    let app = spawn_app(backend).await;
    let id = finished_match(&app).await;
    let served = http_keys(&app).await;
    let key = the_key(&served);
    let over_grpc = grpc_keys(&app).await;
    assert_eq!(over_grpc.len(), 1);
    assert_eq!(
        over_grpc[0].public_key,
        hex::encode(key),
        "one key, both ways"
    );
    assert_eq!(over_grpc[0].key_id, audit::key_id(&key));
    assert_eq!(over_grpc[0].algorithm, "ed25519");

    // Over gRPC: the head states the match's end, signed by the served key.
    let mut client = app.grpc().await;
    let log = audit_log(&mut client, &id).await;
    assert_eq!(log.format, audit::FORMAT);
    let head = log.head.clone().expect("a head");
    assert_eq!(head.match_id, id);
    assert_eq!(head.version, log.events.len() as u64);
    assert_eq!(head.hash, log.events.last().expect("events").hash);
    assert_eq!(head.status, pb::MatchStatus::Finished as i32);
    let view = spectator_view(&mut client, &id).await;
    assert!(view.outcome.is_some(), "a finished match has an outcome");
    assert_eq!(
        head.outcome, view.outcome,
        "the head's outcome is the view's"
    );
    let registry = Registry::new();
    audit::verify(&registry, id.parse().expect("uuid"), &log).expect("the log verifies");
    audit::check_signature(&head, &key).expect("signed by the served key (gRPC)");

    // Over HTTP/JSON, as a file: `missive verify --key` checks the signature.
    let body = history_body(&app, &id).await;
    let history: pb::GetHistoryResponse = serde_json::from_slice(&body).expect("a history");
    let http_head = history.audit.and_then(|a| a.head).expect("a head");
    assert_eq!(http_head, head, "the same head both ways");
    audit::check_signature(&http_head, &key).expect("signed by the served key (HTTP)");
    let dir = scratch_dir();
    std::fs::write(dir.join("h.json"), &body).expect("write");
    let public = hex::encode(key);
    let out = missive(&["verify", "h.json", "--key", &public], &dir);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(&format!("signed by key {}", audit::key_id(&key))),
        "{}",
        text(&out.stdout)
    );

    // Another key: refused, and the head is not said to be signed.
    let other = missive_server::audit::Signer::from_seed([3; 32]).public_key();
    assert!(
        audit::check_signature(
            &head,
            &audit::parse_public_key(&other.public_key).expect("a key")
        )
        .is_err()
    );
    let out = missive(&["verify", "h.json", "--key", &other.public_key], &dir);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("the head's signature does not verify"),
        "{}",
        text(&out.stderr)
    );

    // One bit of the signature flipped: refused.
    let mut tampered: Value = serde_json::from_slice(&body).expect("JSON");
    let signature = tampered["audit"]["head"]["signature"]
        .as_str()
        .expect("a signature");
    let mut bytes = hex::decode(signature).expect("hex");
    bytes[0] ^= 1;
    tampered["audit"]["head"]["signature"] = json!(hex::encode(bytes));
    std::fs::write(dir.join("t.json"), tampered.to_string()).expect("write");
    let out = missive(&["verify", "t.json"], &dir);
    assert_eq!(
        out.status.code(),
        Some(0),
        "without --key the log verifies and the signature is not checked: {}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("not checked"),
        "{}",
        text(&out.stdout)
    );
    let out = missive(&["verify", "t.json", "--key", &public], &dir);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("did not sign this head"),
        "{}",
        text(&out.stderr)
    );
    let out = missive(&["verify", "h.json", "--key", "not-a-key"], &dir);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a key that is no key cannot check anything"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

backend_tests! {
    #[tokio::test]
    a_signed_head_verifies_with_the_served_key_and_nothing_else_does:
    Postgres => a_signed_head_verifies_with_the_key_served_over_http_and_grpc_on_postgres,
    Citus => a_signed_head_verifies_with_the_key_served_over_http_and_grpc_on_citus,
    Sqlite => a_signed_head_verifies_with_the_key_served_over_http_and_grpc_on_sqlite,
}

async fn the_audit_key_outlives_a_restart(backend: Backend) {
    let mut app = spawn_app(backend).await;
    let id = finished_match(&app).await;
    let before = http_keys(&app).await;
    let key = the_key(&before);
    app.restart_after(Duration::ZERO).await;
    assert_eq!(
        http_keys(&app).await,
        before,
        "the same key after a restart"
    );
    // A head signed before the restart checks with the key served after it, and a new export
    // is signed by the same key.
    let log = audit_log(&mut app.grpc().await, &id).await;
    audit::check_signature(&log.head.expect("a head"), &key).expect("the same key signs");
}

backend_tests! {
    #[tokio::test]
    the_audit_key_outlives_a_restart:
    Postgres => the_servers_audit_key_is_the_same_after_a_restart_on_postgres,
    Citus => the_servers_audit_key_is_the_same_after_a_restart_on_citus,
    Sqlite => the_servers_audit_key_is_the_same_after_a_restart_on_sqlite,
}

/// The value of `const NAME = `…`;` in the audit panel of app.js: a template literal.
fn template(source: &str, name: &str) -> String {
    let start = format!("const {name} = `");
    let at = source
        .find(&start)
        .unwrap_or_else(|| panic!("app.js's audit panel defines {name}"))
        + start.len();
    let end = source[at..].find('`').expect("the template ends") + at;
    source[at..end].to_owned()
}

#[tokio::test]
async fn the_command_the_audit_panel_prints_verifies_the_file_its_link_downloads() {
    let source = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/web/app.js"))
        .expect("app.js");
    let app = spawn_app(Backend::Sqlite).await;
    let id = finished_match(&app).await;
    // The panel's link, its file name and its command, as the page fills them in.
    let fill = |t: String| t.replace("${this.id}", &id);
    let url = fill(template(&source, "auditUrl"));
    let file = fill(template(&source, "auditFile"));
    let command = template(&source, "verifyCommand").replace("${auditFile}", &file);
    assert!(
        !command.contains("${"),
        "every part of {command:?} is filled in"
    );
    assert!(!file.contains('/'), "{file} is a file name");

    let dir = scratch_dir();
    let response = app.get(&url).await;
    assert_eq!(response.status(), StatusCode::OK, "{url}");
    std::fs::write(dir.join(&file), response.bytes().await.expect("body")).expect("write");
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(words.first(), Some(&"missive"), "{command}");
    let out = missive(&words[1..], &dir);
    assert_eq!(
        out.status.code(),
        Some(0),
        "`{command}` in the folder of the download: {}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).starts_with(&format!("OK match {id}")),
        "{}",
        text(&out.stdout)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
