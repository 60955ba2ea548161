//! Request decoding under garbage: every RPC's request, over HTTP/JSON and over gRPC, as
//! arbitrary bytes and as valid requests damaged (JSON fields given the wrong type, huge
//! numbers, deep nesting, long strings, invalid UTF-8; protobuf bytes flipped, cut short or
//! extended). Every answer must be a client error (4xx, or a gRPC code other than INTERNAL,
//! UNKNOWN, UNAVAILABLE or DATA_LOSS) or a success for an input that happens to be valid; the
//! server must still answer afterwards; and the store must hold no event or match that no
//! answer acknowledged. The server runs in this process, on a scratch PostgreSQL database.
//!
//! Inputs come from proptest's strategies with a fixed seed and a fixed number of cases, so a
//! run is reproducible and takes seconds.

use std::collections::BTreeSet;
use std::time::Duration;

use axum::http::uri::PathAndQuery;
use clap::Parser;
use missive_proto::v1 as pb;
use missive_proto::v1::missive_client::MissiveClient;
use missive_server::Config;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config as RunnerConfig, RngAlgorithm, TestRng, TestRunner};
use prost::Message;
use prost::bytes::{Buf, BufMut};
use serde_json::{Value, json};
use sqlx::Connection;
use tonic::Code;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::Channel;

use crate::helpers::{ScratchDb, authed, love_letter_options, seat_view, spectator_view};

/// Cases per route and transport in each phase.
const GARBAGE_CASES: usize = 40;
const MUTATED_CASES: usize = 80;

/// A gRPC codec that sends and receives message bytes as they are.
#[derive(Debug, Clone, Copy, Default)]
struct Raw;

impl Codec for Raw {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Raw;
    type Decoder = Raw;

    fn encoder(&mut self) -> Raw {
        Raw
    }

    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, tonic::Status> {
        let n = src.remaining();
        Ok(Some(src.copy_to_bytes(n).to_vec()))
    }
}

/// The server in this process, on its own database.
struct Server {
    grpc: Channel,
    http_base: String,
    http: reqwest::Client,
    db: ScratchDb,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
    _dir: crate::clock::tempdir::Dir,
}

impl Server {
    async fn start() -> Server {
        let db = ScratchDb::create().await;
        let dir = crate::clock::tempdir::Dir::new();
        let config = Config::parse_from([
            "missive",
            "--database-url",
            &db.url,
            "--data-dir",
            &dir.0.display().to_string(),
            "--grpc-addr",
            "127.0.0.1:0",
            "--http-addr",
            "127.0.0.1:0",
            // Every request here comes from one address, far faster than a client may.
            "--rate-limit-per-sec",
            "1000000",
            "--rate-limit-burst",
            "1000000",
            "--create-limit-per-min",
            "100000000",
            "--create-limit-burst",
            "1000000",
            "--max-open-matches",
            "1000000",
        ]);
        let service = missive_server::build_service(&config)
            .await
            .expect("service");
        let grpc = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let http = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let grpc_addr = grpc.local_addr().expect("addr");
        let http_base = format!("http://{}", http.local_addr().expect("addr"));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(missive_server::run(config, service, grpc, http, async {
            let _ = stopped.await;
        }));
        let grpc = Channel::from_shared(format!("http://{grpc_addr}"))
            .expect("uri")
            .timeout(Duration::from_secs(10))
            .connect()
            .await
            .expect("gRPC connects");
        Server {
            grpc,
            http_base,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .expect("client"),
            db,
            stop: Some(stop),
            task,
            _dir: dir,
        }
    }

    async fn count(&self, sql: &str) -> i64 {
        let mut conn = sqlx::PgConnection::connect(&self.db.url)
            .await
            .expect("connect");
        let n: i64 = sqlx::query_scalar(sql)
            .fetch_one(&mut conn)
            .await
            .expect("count");
        conn.close().await.ok();
        n
    }

    async fn events_of(&self, id: &str) -> i64 {
        self.count(&format!(
            "SELECT count(*) FROM events WHERE match_id = '{id}'::uuid"
        ))
        .await
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(30), &mut self.task).await;
    }
}

/// One RPC: its gRPC method and its HTTP route (`{id}` for the match id).
#[derive(Debug, Clone)]
struct Rpc {
    name: &'static str,
    method: reqwest::Method,
    path: &'static str,
    /// The request comes as the JSON body (else in the path and query).
    body: bool,
    /// Whether it writes (so a success may leave events behind).
    writes: bool,
}

fn rpcs() -> Vec<Rpc> {
    use reqwest::Method as M;
    let rpc = |name, method, path, body, writes| Rpc {
        name,
        method,
        path,
        body,
        writes,
    };
    vec![
        rpc("CreateMatch", M::POST, "/v1/matches", true, true),
        rpc("ListMatches", M::GET, "/v1/matches", false, false),
        rpc("GetMatch", M::GET, "/v1/matches/{id}", false, false),
        rpc("JoinMatch", M::POST, "/v1/matches/{id}/join", true, true),
        rpc("Act", M::POST, "/v1/matches/{id}/act", true, true),
        rpc("GetView", M::GET, "/v1/matches/{id}/view", false, false),
        rpc(
            "GetHistory",
            M::GET,
            "/v1/matches/{id}/history",
            false,
            false,
        ),
        rpc("WatchMatch", M::GET, "/v1/matches/{id}/watch", false, false),
        rpc("LeaveMatch", M::POST, "/v1/matches/{id}/leave", true, true),
        rpc("SetWebhook", M::PUT, "/v1/matches/{id}/webhook", true, true),
        rpc(
            "SetWebhook",
            M::DELETE,
            "/v1/matches/{id}/webhook",
            false,
            true,
        ),
        rpc(
            "GetWebhook",
            M::GET,
            "/v1/matches/{id}/webhook",
            false,
            false,
        ),
    ]
}

/// The matches requests go to: `play` (started, acted on), `quit` (started, left), and the
/// seat tokens used on each.
struct Fixture {
    play: String,
    play_token: String,
    quit: String,
    quit_token: String,
    /// A legal action in `play` for the holder of `play_token`, as JSON and protobuf.
    action: pb::GameAction,
}

impl Fixture {
    async fn new(client: &mut MissiveClient<Channel>) -> Fixture {
        let (play, play_tokens) = crate::grpc::create_and_join(client, 2).await;
        let (quit, quit_tokens) = crate::grpc::create_and_join(client, 2).await;
        let view = spectator_view(client, &play).await;
        let mover = view.awaiting[0] as usize;
        let mine = seat_view(client, &play, &play_tokens[mover]).await;
        Fixture {
            play,
            play_token: play_tokens[mover].clone(),
            quit,
            quit_token: quit_tokens[0].clone(),
            action: mine.legal_actions[0].clone(),
        }
    }

    /// The match and token a request of `rpc` goes to.
    fn target(&self, rpc: &Rpc) -> (&str, &str) {
        match rpc.name {
            "LeaveMatch" | "SetWebhook" => (&self.quit, &self.quit_token),
            _ => (&self.play, &self.play_token),
        }
    }

    /// A valid request of `rpc`, as protobuf bytes and as its JSON mapping; for routes without
    /// a body, the JSON holds the query parameters.
    fn valid(&self, rpc: &Rpc) -> (Vec<u8>, Value) {
        let (id, _) = self.target(rpc);
        let id = id.to_owned();
        let request_id = uuid::Uuid::new_v4().to_string();
        match rpc.name {
            "CreateMatch" => {
                let request = love_letter_options(2);
                (request.encode_to_vec(), to_json(&request))
            }
            "ListMatches" => (
                pb::ListMatchesRequest {
                    status: pb::MatchStatus::Open as i32,
                    kind: "love-letter".into(),
                    limit: 5,
                    page_token: String::new(),
                }
                .encode_to_vec(),
                json!({"status": "MATCH_STATUS_OPEN", "kind": "love-letter", "limit": 5, "pageToken": ""}),
            ),
            "GetMatch" | "GetWebhook" => (
                pb::GetMatchRequest { match_id: id }.encode_to_vec(),
                json!({}),
            ),
            "JoinMatch" => {
                let request = pb::JoinMatchRequest {
                    match_id: id,
                    player: "player".into(),
                    seat: Some(1),
                    request_id,
                    ..Default::default()
                };
                let mut body = to_json(&request);
                body.as_object_mut().expect("object").remove("matchId");
                (request.encode_to_vec(), body)
            }
            "Act" => {
                let request = pb::ActRequest {
                    match_id: id,
                    action: Some(self.action.clone()),
                    request_id,
                    expected_version: None,
                    seat: None,
                    ..Default::default()
                };
                let mut body = to_json(&request);
                body.as_object_mut().expect("object").remove("matchId");
                (request.encode_to_vec(), body)
            }
            "GetView" | "GetHistory" => (
                pb::GetViewRequest {
                    match_id: id,
                    seat: Some(0),
                }
                .encode_to_vec(),
                json!({"seat": 0}),
            ),
            "WatchMatch" => (
                pb::WatchMatchRequest {
                    match_id: id,
                    after_version: 1,
                    seat: None,
                }
                .encode_to_vec(),
                json!({"afterVersion": 1}),
            ),
            "LeaveMatch" => (
                pb::LeaveMatchRequest {
                    match_id: id,
                    request_id: request_id.clone(),
                }
                .encode_to_vec(),
                json!({"requestId": request_id}),
            ),
            "SetWebhook" => (
                pb::SetWebhookRequest {
                    match_id: id,
                    url: "http://hooks.example/turn".into(),
                    request_id: request_id.clone(),
                }
                .encode_to_vec(),
                json!({"url": "http://hooks.example/turn", "requestId": request_id}),
            ),
            other => panic!("no sample request for {other}"),
        }
    }
}

fn to_json<T: serde::Serialize>(message: &T) -> Value {
    serde_json::to_value(message).expect("JSON mapping")
}

/// One damaged input, as drawn.
#[derive(Debug, Clone)]
enum Damage {
    /// Arbitrary bytes in place of the request.
    Bytes(Vec<u8>),
    /// A JSON value (or the whole document) replaced: `at` picks which, `with` what, `bytes`
    /// feeds it.
    Json { at: usize, with: u8, bytes: Vec<u8> },
    /// Protobuf bytes damaged: `how` picks flip, cut, extend, insert or overwrite; `at` where.
    Proto { how: u8, at: usize, bytes: Vec<u8> },
}

fn garbage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64),
        proptest::collection::vec(any::<u8>(), 0..2048),
        // Mostly printable: gets past the first byte of a JSON parser more often.
        proptest::collection::vec(prop_oneof![32u8..127, any::<u8>()], 0..256),
    ]
    .prop_map(Damage::Bytes)
}

fn json_damage() -> impl Strategy<Value = Damage> {
    (
        any::<usize>(),
        any::<u8>(),
        proptest::collection::vec(any::<u8>(), 0..32),
    )
        .prop_map(|(at, with, bytes)| Damage::Json { at, with, bytes })
}

fn proto_damage() -> impl Strategy<Value = Damage> {
    (
        any::<u8>(),
        any::<usize>(),
        proptest::collection::vec(any::<u8>(), 1..32),
    )
        .prop_map(|(how, at, bytes)| Damage::Proto { how, at, bytes })
}

/// Draws `n` values of `strategy` from `runner`'s generator.
fn draw<S: Strategy>(runner: &mut TestRunner, strategy: &S, n: usize) -> Vec<S::Value> {
    (0..n)
        .map(|_| strategy.new_tree(runner).expect("a value").current())
        .collect()
}

/// Every value in `value` (the whole document first), as JSON pointers.
fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                pointers(inner, format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                pointers(inner, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

const HOLE: &str = "\u{1}hole\u{1}";

/// What replaces a value: raw JSON text (or not-quite-JSON bytes).
fn replacement(with: u8, bytes: &[u8]) -> Vec<u8> {
    let printable: String = bytes.iter().map(|b| char::from(b % 94 + 33)).collect();
    match with % 20 {
        0 => b"null".to_vec(),
        1 => b"true".to_vec(),
        2 => b"-1".to_vec(),
        3 => b"18446744073709551616".to_vec(),
        4 => b"-9223372036854775809".to_vec(),
        5 => b"1e400".to_vec(),
        6 => b"0.5".to_vec(),
        7 => b"4294967296".to_vec(),
        8 => format!("{:?}", printable).into_bytes(),
        9 => format!("\"{}\"", "x".repeat(64 * 1024)).into_bytes(),
        10 => b"[]".to_vec(),
        11 => b"{}".to_vec(),
        12 => {
            let depth = 2000 + usize::from(bytes.first().copied().unwrap_or(0)) * 20;
            let mut deep = "[".repeat(depth);
            deep.push_str(&"]".repeat(depth));
            deep.into_bytes()
        }
        13 => {
            let depth = 2000;
            let mut deep = "{\"a\":".repeat(depth);
            deep.push('1');
            deep.push_str(&"}".repeat(depth));
            deep.into_bytes()
        }
        14 => {
            // Invalid UTF-8 inside a string.
            let mut text = b"\"".to_vec();
            text.extend(bytes.iter().map(|b| b | 0x80));
            text.push(b'"');
            text
        }
        15 => b"\"\\ud800\"".to_vec(),
        16 => b"\"99999999999999999999\"".to_vec(),
        17 => b"\"NOT_A_VALUE\"".to_vec(),
        18 => bytes.to_vec(),
        _ => format!("[{}]", "1,".repeat(10_000) + "1").into_bytes(),
    }
}

/// `valid` with the value at the `at`-th pointer replaced, or (one time in eight) the
/// document's text damaged by a byte-level edit.
fn damage_json(valid: &Value, at: usize, with: u8, bytes: &[u8]) -> Vec<u8> {
    let text = serde_json::to_vec(valid).expect("JSON");
    if with >= 224 && !text.is_empty() {
        let mut text = text;
        let pos = at % text.len();
        match with % 4 {
            0 => text.truncate(pos),
            1 => text[pos] ^= bytes.first().copied().unwrap_or(0x20) | 1,
            2 => text.splice(pos..pos, bytes.iter().copied()).for_each(drop),
            _ => text.extend_from_slice(bytes),
        }
        return text;
    }
    let mut all = Vec::new();
    pointers(valid, String::new(), &mut all);
    let pointer = &all[at % all.len()];
    let mut holed = valid.clone();
    match holed.pointer_mut(pointer) {
        Some(slot) => *slot = Value::String(HOLE.into()),
        None => unreachable!("a pointer from the value itself"),
    }
    let holed = serde_json::to_vec(&holed).expect("JSON");
    let quoted = serde_json::to_vec(&Value::String(HOLE.into())).expect("JSON");
    let start = holed
        .windows(quoted.len())
        .position(|w| w == quoted.as_slice())
        .expect("the hole is in the text");
    let mut out = holed[..start].to_vec();
    out.extend(replacement(with, bytes));
    out.extend(&holed[start + quoted.len()..]);
    out
}

fn damage_proto(valid: &[u8], how: u8, at: usize, bytes: &[u8]) -> Vec<u8> {
    let mut out = valid.to_vec();
    let pos = if out.is_empty() { 0 } else { at % out.len() };
    match how % 6 {
        0 if !out.is_empty() => out[pos] ^= 1 << (bytes[0] % 8),
        1 => out.truncate(pos),
        2 => out.extend_from_slice(bytes),
        3 => out.splice(pos..pos, bytes.iter().copied()).for_each(drop),
        4 if !out.is_empty() => {
            // An overlong varint where a tag or a length was.
            out.splice(pos..=pos, [0xff; 11]).for_each(drop);
        }
        _ => {
            for (i, b) in bytes.iter().enumerate() {
                if let Some(slot) = out.get_mut(pos + i) {
                    *slot = *b;
                }
            }
        }
    }
    out
}

/// A query string from a JSON object's fields (values as their JSON text, strings bare).
fn query(params: &Value) -> String {
    let Some(map) = params.as_object() else {
        return String::new();
    };
    map.iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            format!("{}={}", encode(k.as_bytes()), encode(v.as_bytes()))
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// Percent-encodes every byte but unreserved ones.
fn encode(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// What a batch of requests was answered.
#[derive(Debug, Default)]
struct Tally {
    /// Requests answered with a success, by RPC name.
    successes: std::collections::BTreeMap<&'static str, usize>,
    /// Matches an acknowledged CreateMatch returned, with the version it returned.
    created: BTreeSet<(String, u64)>,
    /// Acknowledged writes to the fixture matches.
    wrote_to_fixtures: usize,
    /// Requests sent.
    sent: usize,
}

/// Short, printable form of an input for a failure message.
fn shown(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned();
    format!("{text:?} ({} bytes)", bytes.len())
}

async fn over_http(
    server: &Server,
    fixture: &Fixture,
    rpc: &Rpc,
    id: &str,
    query: &str,
    body: Option<Vec<u8>>,
    tally: &mut Tally,
) {
    let (_, token) = fixture.target(rpc);
    let mut url = format!("{}{}", server.http_base, rpc.path.replace("{id}", id));
    if !query.is_empty() {
        url.push('?');
        url.push_str(query);
    }
    let mut request = server
        .http
        .request(rpc.method.clone(), &url)
        .bearer_auth(token);
    let input = body.clone().unwrap_or_else(|| url.clone().into_bytes());
    if let Some(body) = body {
        request = request
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
    }
    tally.sent += 1;
    let response = match request.send().await {
        Ok(response) => response,
        Err(e) => panic!(
            "{} {}: no answer ({e}) to {}",
            rpc.method,
            rpc.path,
            shown(&input)
        ),
    };
    let status = response.status();
    assert!(
        status.is_success() || status.is_client_error(),
        "{} {} answered {status} to {}",
        rpc.method,
        rpc.path,
        shown(&input)
    );
    if !status.is_success() {
        return;
    }
    *tally.successes.entry(rpc.name).or_default() += 1;
    if rpc.name == "WatchMatch" {
        // A stream: its headers were the answer.
        return;
    }
    let answer: Value = response.json().await.unwrap_or(Value::Null);
    note_write(rpc, fixture, id, &answer, tally);
}

/// Notes an acknowledged write (`answer` as its JSON mapping).
fn note_write(rpc: &Rpc, fixture: &Fixture, id: &str, answer: &Value, tally: &mut Tally) {
    if !rpc.writes {
        return;
    }
    if rpc.name == "CreateMatch" {
        let info = &answer["match"];
        let version = info["version"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .or_else(|| info["version"].as_u64())
            .expect("a created match's version");
        let id = info["matchId"].as_str().expect("matchId").to_owned();
        tally.created.insert((id, version));
    } else if id == fixture.play || id == fixture.quit {
        tally.wrote_to_fixtures += 1;
    }
}

async fn over_grpc(
    server: &Server,
    fixture: &Fixture,
    rpc: &Rpc,
    message: Vec<u8>,
    tally: &mut Tally,
) {
    let (id, token) = fixture.target(rpc);
    let mut grpc = tonic::client::Grpc::new(server.grpc.clone());
    grpc.ready().await.expect("channel ready");
    let path: PathAndQuery = format!("/missive.v1.Missive/{}", rpc.name)
        .parse()
        .expect("path");
    let request = authed(message.clone(), token);
    tally.sent += 1;
    let answer = if rpc.name == "WatchMatch" {
        grpc.server_streaming(request, path, Raw).await.map(drop)
    } else {
        grpc.unary(request, path, Raw)
            .await
            .map(|r| note_grpc_write(rpc, fixture, id, &r.into_inner(), tally))
    };
    match answer {
        Ok(()) => *tally.successes.entry(rpc.name).or_default() += 1,
        Err(status) => assert!(
            !matches!(
                status.code(),
                Code::Internal | Code::Unknown | Code::Unavailable | Code::DataLoss
            ),
            "gRPC {} answered {:?} {:?} to {}",
            rpc.name,
            status.code(),
            status.message(),
            shown(&message)
        ),
    }
}

fn note_grpc_write(rpc: &Rpc, fixture: &Fixture, id: &str, answer: &[u8], tally: &mut Tally) {
    if !rpc.writes {
        return;
    }
    if rpc.name == "CreateMatch" {
        let info = pb::CreateMatchResponse::decode(answer)
            .expect("a CreateMatchResponse")
            .r#match
            .expect("match info");
        tally.created.insert((info.match_id, info.version));
    } else {
        // Acknowledged writes go to the fixtures' ids, whatever the request said: count them
        // against both.
        let _ = id;
        let _ = fixture;
        tally.wrote_to_fixtures += 1;
    }
}

/// The store's counts and the fixtures' versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counts {
    matches: i64,
    events: i64,
    play: i64,
    quit: i64,
}

async fn counts(server: &Server, fixture: &Fixture) -> Counts {
    Counts {
        matches: server.count("SELECT count(*) FROM matches").await,
        events: server.count("SELECT count(*) FROM events").await,
        play: server.events_of(&fixture.play).await,
        quit: server.events_of(&fixture.quit).await,
    }
}

/// The store holds what the answers acknowledged and nothing else.
async fn check_store(server: &Server, before: Counts, after: Counts, tally: &Tally, phase: &str) {
    assert_eq!(
        after.matches - before.matches,
        tally.created.len() as i64,
        "{phase}: matches stored beyond those acknowledged ({tally:?})"
    );
    let mut created_events = 0;
    for (id, version) in &tally.created {
        let stored = server.events_of(id).await;
        assert_eq!(
            stored, *version as i64,
            "{phase}: match {id} holds events no answer acknowledged"
        );
        created_events += stored;
    }
    if tally.wrote_to_fixtures == 0 {
        assert_eq!(
            (after.play, after.quit),
            (before.play, before.quit),
            "{phase}: events stored in the fixtures with no write acknowledged"
        );
    }
    let fixture_events = (after.play - before.play) + (after.quit - before.quit);
    assert_eq!(
        after.events - before.events,
        created_events + fixture_events,
        "{phase}: events stored outside the matches written to"
    );
}

/// The server still answers on both transports.
async fn still_answers(server: &Server, fixture: &Fixture) {
    let response = server
        .http
        .get(format!("{}/v1/matches/{}", server.http_base, fixture.play))
        .send()
        .await
        .expect("HTTP still answers");
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    MissiveClient::new(server.grpc.clone())
        .get_match(pb::GetMatchRequest {
            match_id: fixture.play.clone(),
        })
        .await
        .expect("gRPC still answers");
}

/// A path segment for the match id: garbage, percent-encoded.
fn garbage_id(bytes: &[u8]) -> String {
    encode(bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_damaged_requests_get_client_errors_and_store_nothing() {
    let server = Server::start().await;
    let mut client = MissiveClient::new(server.grpc.clone());
    let fixture = Fixture::new(&mut client).await;
    let mut runner = TestRunner::new_with_rng(
        RunnerConfig {
            failure_persistence: None,
            ..RunnerConfig::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let started = std::time::Instant::now();

    // Phase 1: arbitrary bytes for every request, on every route and transport.
    let before = counts(&server, &fixture).await;
    let mut tally = Tally::default();
    for rpc in rpcs() {
        let (id, _) = fixture.target(&rpc);
        for damage in draw(&mut runner, &garbage(), GARBAGE_CASES) {
            let Damage::Bytes(bytes) = damage else {
                unreachable!()
            };
            if rpc.body {
                over_http(
                    &server,
                    &fixture,
                    &rpc,
                    id,
                    "",
                    Some(bytes.clone()),
                    &mut tally,
                )
                .await;
            } else {
                // The query string and, one time in two, the id.
                let (query, path_id) = if bytes.len() % 2 == 0 {
                    (format!("seat={}", encode(&bytes)), id.to_owned())
                } else {
                    (encode(&bytes), garbage_id(&bytes))
                };
                over_http(&server, &fixture, &rpc, &path_id, &query, None, &mut tally).await;
            }
            if rpc.method != reqwest::Method::DELETE {
                over_grpc(&server, &fixture, &rpc, bytes, &mut tally).await;
            }
        }
    }
    let after = counts(&server, &fixture).await;
    check_store(&server, before, after, &tally, "arbitrary bytes").await;
    still_answers(&server, &fixture).await;
    let garbage_tally = tally;

    // Phase 2: valid requests, damaged.
    let before = after;
    let mut tally = Tally::default();
    for rpc in rpcs() {
        let (id, _) = fixture.target(&rpc);
        for damage in draw(&mut runner, &json_damage(), MUTATED_CASES) {
            let Damage::Json { at, with, bytes } = damage else {
                unreachable!()
            };
            let (_, valid) = fixture.valid(&rpc);
            if rpc.body {
                let body = damage_json(&valid, at, with, &bytes);
                over_http(&server, &fixture, &rpc, id, "", Some(body), &mut tally).await;
            } else {
                // Query parameters: each value replaced by damaged text.
                let mut params = valid.clone();
                if let Some(map) = params.as_object_mut() {
                    map.insert("seat".into(), Value::Null);
                    let keys: Vec<String> = map.keys().cloned().collect();
                    let key = &keys[at % keys.len()];
                    // Within what a URI may hold (the client refuses longer ones).
                    let mut raw = replacement(with, &bytes);
                    raw.truncate(4096);
                    map.insert(
                        key.clone(),
                        Value::String(String::from_utf8_lossy(&raw).into_owned()),
                    );
                }
                let mut text = query(&params);
                if with % 5 == 0 {
                    // Invalid UTF-8 and broken escapes in the query itself.
                    text.push_str("&seat=%FF%FE&afterVersion=%");
                }
                over_http(&server, &fixture, &rpc, id, &text, None, &mut tally).await;
            }
        }
        if rpc.method == reqwest::Method::DELETE {
            continue;
        }
        for damage in draw(&mut runner, &proto_damage(), MUTATED_CASES) {
            let Damage::Proto { how, at, bytes } = damage else {
                unreachable!()
            };
            let (valid, _) = fixture.valid(&rpc);
            let message = damage_proto(&valid, how, at, &bytes);
            over_grpc(&server, &fixture, &rpc, message, &mut tally).await;
        }
    }
    let after = counts(&server, &fixture).await;
    check_store(&server, before, after, &tally, "damaged requests").await;
    still_answers(&server, &fixture).await;
    println!(
        "{} requests of arbitrary bytes (successes {:?}), {} damaged (successes {:?}) in {:.1?}",
        garbage_tally.sent,
        garbage_tally.successes,
        tally.sent,
        tally.successes,
        started.elapsed()
    );
    server.stop().await;
}

/// A gRPC request whose message is not valid protobuf was answered INTERNAL (the decoder's
/// error as the codec mapped it), which reads as a fault of the server, counts in its error
/// rate and pages whoever watches it. It is the caller's error: INVALID_ARGUMENT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_request_that_is_not_protobuf_is_invalid_argument_not_internal() {
    let server = Server::start().await;
    for (rpc, message) in [
        // A tag cut short.
        ("CreateMatch", vec![0xff]),
        // A field longer than the message.
        ("Act", vec![0x0a, 0x05, b'a']),
        // A varint where a string was.
        ("GetMatch", vec![0x08]),
        ("WatchMatch", vec![0x12, 0x80]),
    ] {
        let mut grpc = tonic::client::Grpc::new(server.grpc.clone());
        grpc.ready().await.expect("channel ready");
        let path: PathAndQuery = format!("/missive.v1.Missive/{rpc}").parse().expect("path");
        let request = tonic::Request::new(message);
        let answer = if rpc == "WatchMatch" {
            grpc.server_streaming(request, path, Raw).await.map(drop)
        } else {
            grpc.unary(request, path, Raw).await.map(drop)
        };
        let status = answer.expect_err("not a valid request");
        assert_eq!(status.code(), Code::InvalidArgument, "{rpc}: {status:?}");
    }
    server.stop().await;
}
