//! The real binary, as an operator starts it, and a client that knows only the public API:
//! JSON bodies written by hand over HTTP, the generated gRPC client, and `kill` for signals.

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use missive_proto::v1 as pb;
use missive_proto::v1::missive_client::MissiveClient;
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Connection;
use tonic::transport::Channel;

/// Where a server keeps its matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Sqlite,
    Postgres,
}

/// A store servers can share: a fresh PostgreSQL database (dropped at the end) or a fresh
/// SQLite directory (removed at the end).
#[derive(Debug)]
pub(crate) struct Store {
    pub(crate) database_url: Option<String>,
    pub(crate) data_dir: PathBuf,
    name: String,
}

fn admin_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

fn with_database(url: &str, name: &str) -> String {
    match url.rsplit_once('/') {
        Some((base, _)) => format!("{base}/{name}"),
        None => format!("{url}/{name}"),
    }
}

impl Store {
    pub(crate) async fn new(backend: Backend) -> Store {
        let name = format!("missive_blackbox_{}", uuid::Uuid::new_v4().simple());
        let data_dir = std::env::temp_dir().join(&name);
        let database_url = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => {
                let mut admin = sqlx::PgConnection::connect(&admin_url())
                    .await
                    .expect("PostgreSQL at DATABASE_URL accepts connections");
                sqlx::query(&format!("CREATE DATABASE {name}"))
                    .execute(&mut admin)
                    .await
                    .expect("create the test database");
                Some(with_database(&admin_url(), &name))
            }
        };
        Store {
            database_url,
            data_dir,
            name,
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.data_dir);
        if self.database_url.is_some() {
            let name = self.name.clone();
            // Drop runs outside any runtime the test may still have; use a thread of its own.
            let _ = std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                runtime.block_on(async {
                    if let Ok(mut admin) = sqlx::PgConnection::connect(&admin_url()).await {
                        let _ =
                            sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                                .execute(&mut admin)
                                .await;
                    }
                });
            })
            .join();
        }
    }
}

/// A running `missive serve`; killed on drop.
#[derive(Debug)]
pub(crate) struct Server {
    child: Child,
    env: Vec<(String, String)>,
    pub(crate) grpc_addr: String,
    pub(crate) http_base: String,
    pub(crate) http: reqwest::Client,
}

/// The per-client limits, raised (see [`Server::start`]).
const RAISED_LIMITS: [(&str, &str); 6] = [
    ("MISSIVE_RATE_LIMIT_PER_SEC", "1000000"),
    ("MISSIVE_RATE_LIMIT_BURST", "1000000"),
    ("MISSIVE_CREATE_LIMIT_PER_MIN", "100000000"),
    ("MISSIVE_CREATE_LIMIT_BURST", "1000000"),
    ("MISSIVE_MAX_OPEN_MATCHES", "1000000"),
    ("MISSIVE_MAX_WATCHES_PER_CLIENT", "1000000"),
];

/// The binary under test.
pub(crate) fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_missive")
}

impl Server {
    /// Starts a server on `store` on free loopback ports, with `extra` settings on top of the
    /// defaults (which are the binary's own, except a quiet log and the per-client limits:
    /// every player of these tests is the one loopback address, so they are raised far above
    /// what the tests ask).
    pub(crate) async fn start(store: &Store, extra: &[(&str, &str)]) -> Server {
        let mut env: Vec<(String, String)> = vec![
            ("MISSIVE_GRPC_ADDR".into(), "127.0.0.1:0".into()),
            ("MISSIVE_HTTP_ADDR".into(), "127.0.0.1:0".into()),
            (
                "MISSIVE_DATA_DIR".into(),
                store.data_dir.display().to_string(),
            ),
            ("RUST_LOG".into(), "warn".into()),
        ];
        env.extend(
            RAISED_LIMITS
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        if let Some(url) = &store.database_url {
            env.push(("DATABASE_URL".into(), url.clone()));
        }
        for (key, value) in extra {
            env.retain(|(k, _)| k != key);
            env.push(((*key).to_owned(), (*value).to_owned()));
        }
        Server::spawn(env).await
    }

    async fn spawn(env: Vec<(String, String)>) -> Server {
        let mut command = missive_launch::command(binary());
        command
            .arg("serve")
            .env_remove("DATABASE_URL")
            .envs(env.iter().map(|(k, v)| (k, v)));
        let (child, at) = missive_launch::start(&mut command)
            .await
            .expect("the server listens");
        let (grpc_addr, http_base) = (at.grpc, at.http);
        // A restart binds the same ports, so clients find the server where it was.
        let mut env = env;
        for (key, addr) in [
            ("MISSIVE_GRPC_ADDR", grpc_addr.trim_start_matches("http://")),
            ("MISSIVE_HTTP_ADDR", http_base.trim_start_matches("http://")),
        ] {
            env.retain(|(k, _)| k != key);
            env.push((key.to_owned(), addr.to_owned()));
        }
        Server {
            child,
            env,
            grpc_addr,
            http_base,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("HTTP client"),
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The same settings, store and ports (after a kill or an exit).
    pub(crate) async fn restart(&mut self) {
        self.kill();
        *self = Server::spawn(self.env.clone()).await;
    }

    /// SIGKILL, as a crash or a lost machine: nothing is flushed or drained.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends `signal` (`TERM`, `INT`) as an orchestrator would.
    pub(crate) fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg("--")
            .arg(self.pid().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{signal} {}", self.pid());
    }

    /// Waits up to `limit` for the process to exit by itself.
    pub(crate) async fn exited_within(&mut self, limit: Duration) -> Option<ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        None
    }

    pub(crate) async fn grpc(&self) -> MissiveClient<Channel> {
        MissiveClient::connect(self.grpc_addr.clone())
            .await
            .expect("gRPC connects")
    }

    pub(crate) fn client(&self) -> Client {
        Client {
            base: self.http_base.clone(),
            http: self.http.clone(),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP/JSON client of one base URL (a server, or a load balancer in front of several).
#[derive(Debug, Clone)]
pub(crate) struct Client {
    pub(crate) base: String,
    pub(crate) http: reqwest::Client,
}

/// An answer: the status and the JSON body (`null` when there is none).
pub(crate) type Answer = (StatusCode, Value);

impl Client {
    pub(crate) fn new(base: impl Into<String>) -> Client {
        Client {
            base: base.into(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("HTTP client"),
        }
    }

    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        token: Option<&str>,
    ) -> reqwest::Result<Answer> {
        let request = match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        };
        let response = request.send().await?;
        let status = response.status();
        let text = response.text().await?;
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    /// POST `path` with `body`; a transport failure (refused, reset) is an `Err`.
    pub(crate) async fn try_post(
        &self,
        path: &str,
        body: &Value,
        token: Option<&str>,
    ) -> reqwest::Result<Answer> {
        self.send(
            self.http.post(format!("{}{path}", self.base)).json(body),
            token,
        )
        .await
    }

    pub(crate) async fn try_get(&self, path: &str, token: Option<&str>) -> reqwest::Result<Answer> {
        self.send(self.http.get(format!("{}{path}", self.base)), token)
            .await
    }

    pub(crate) async fn post(&self, path: &str, body: &Value, token: Option<&str>) -> Answer {
        self.try_post(path, body, token)
            .await
            .unwrap_or_else(|e| panic!("POST {path}: {e}"))
    }

    pub(crate) async fn get(&self, path: &str, token: Option<&str>) -> Answer {
        self.try_get(path, token)
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"))
    }

    /// Creates a match of `options` (a `GameOptions` JSON object) and returns its id.
    pub(crate) async fn create(&self, options: Value, seats: u32) -> String {
        let (status, body) = self
            .post(
                "/v1/matches",
                &json!({ "options": options, "seatCount": seats }),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["match"]["matchId"]
            .as_str()
            .expect("a match id")
            .to_owned()
    }

    /// Joins as `player`; returns the seat's token.
    pub(crate) async fn join(&self, id: &str, player: &str) -> String {
        let (status, body) = self
            .post(
                &format!("/v1/matches/{id}/join"),
                &json!({ "player": player }),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["seatToken"].as_str().expect("a seat token").to_owned()
    }

    pub(crate) async fn view(&self, id: &str, token: Option<&str>) -> Value {
        let (status, body) = self.get(&format!("/v1/matches/{id}/view"), token).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["view"].clone()
    }

    pub(crate) async fn history(&self, id: &str, token: Option<&str>) -> Value {
        let (status, body) = self.get(&format!("/v1/matches/{id}/history"), token).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }
}

/// Whether a view's match is over.
pub(crate) fn over(view: &Value) -> bool {
    matches!(
        view["match"]["status"].as_str(),
        Some("MATCH_STATUS_FINISHED" | "MATCH_STATUS_ABANDONED")
    )
}

/// A view's version as a number (the JSON mapping writes 64-bit integers as strings).
pub(crate) fn version(value: &Value) -> u64 {
    match value {
        Value::String(s) => s.parse().expect("a version"),
        Value::Number(n) => n.as_u64().expect("a version"),
        other => panic!("not a version: {other}"),
    }
}

/// A small deterministic generator for the players' choices (SplitMix64).
#[derive(Debug, Clone)]
pub(crate) struct Dice(u64);

impl Dice {
    pub(crate) fn new(seed: u64) -> Dice {
        Dice(seed)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// An act a server acknowledged: its request id and the version it answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Acked {
    pub(crate) request_id: String,
    pub(crate) version: u64,
}

/// Plays the match over HTTP/JSON until it is over: each round, every seat that has legal
/// actions plays one of them at random, each act with a fresh request id. Returns the acts
/// the server acknowledged. Bounded by `max_acts`.
pub(crate) async fn play_http(
    client: &Client,
    id: &str,
    tokens: &[String],
    dice: &mut Dice,
    max_acts: usize,
) -> Vec<Acked> {
    let acked = play_http_for(client, id, tokens, dice, max_acts).await;
    assert!(
        over(&client.view(id, None).await),
        "{id} did not finish within {max_acts} acts"
    );
    acked
}

/// Plays as [`play_http`] does, but stops after `acts` acts if the match is not over by then.
pub(crate) async fn play_http_for(
    client: &Client,
    id: &str,
    tokens: &[String],
    dice: &mut Dice,
    acts: usize,
) -> Vec<Acked> {
    let mut acked = Vec::new();
    while acked.len() < acts {
        let mut moved = false;
        let mut finished = false;
        for (seat, token) in tokens.iter().enumerate() {
            let view = client.view(id, Some(token)).await;
            if over(&view) {
                finished = true;
                break;
            }
            let legal = view["legalActions"].as_array().cloned().unwrap_or_default();
            if legal.is_empty() {
                continue;
            }
            let action = legal[dice.below(legal.len())].clone();
            let request_id = format!("{seat}-{}", uuid::Uuid::new_v4().simple());
            let (status, body) = client
                .post(
                    &format!("/v1/matches/{id}/act"),
                    &json!({ "requestId": request_id, "action": action }),
                    Some(token),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "a legal action is accepted: {body}");
            acked.push(Acked {
                request_id,
                version: version(&body["version"]),
            });
            moved = true;
        }
        if finished {
            return acked;
        }
        assert!(moved, "someone can always move in a match under way");
    }
    acked
}

/// The same over gRPC: the legal actions of each view are sent back as they came.
pub(crate) async fn play_grpc(
    client: &mut MissiveClient<Channel>,
    id: &str,
    tokens: &[String],
    dice: &mut Dice,
    max_acts: usize,
) -> Vec<Acked> {
    let mut acked = Vec::new();
    while acked.len() < max_acts {
        for (seat, token) in tokens.iter().enumerate() {
            let view = client
                .get_view(authed(
                    pb::GetViewRequest {
                        match_id: id.to_owned(),
                        ..Default::default()
                    },
                    token,
                ))
                .await
                .expect("GetView")
                .into_inner()
                .view
                .expect("a view");
            let status = view.r#match.as_ref().expect("match info").status();
            if matches!(
                status,
                pb::MatchStatus::Finished | pb::MatchStatus::Abandoned
            ) {
                return acked;
            }
            if view.legal_actions.is_empty() {
                continue;
            }
            let action = view.legal_actions[dice.below(view.legal_actions.len())].clone();
            let request_id = format!("{seat}-{}", uuid::Uuid::new_v4().simple());
            let response = client
                .act(authed(
                    pb::ActRequest {
                        match_id: id.to_owned(),
                        action: Some(action),
                        request_id: request_id.clone(),
                        ..Default::default()
                    },
                    token,
                ))
                .await
                .expect("a legal action is accepted")
                .into_inner();
            acked.push(Acked {
                request_id,
                version: response.version,
            });
        }
    }
    panic!("{id} did not finish within {max_acts} acts");
}

/// A request with the seat token as its bearer credential.
pub(crate) fn authed<T>(message: T, token: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().expect("ASCII token"),
    );
    request
}

/// The request ids of a finished match's acted events, in log order, from its history's
/// audit log (what anyone can download).
pub(crate) fn logged_request_ids(history: &Value) -> Vec<String> {
    history["audit"]["events"]
        .as_array()
        .expect("a finished match's history has its audit log")
        .iter()
        .filter_map(|event| event["requestId"].as_str().map(str::to_owned))
        .collect()
}

/// One game's options per game, in the JSON mapping, with the seat counts the suite plays.
pub(crate) fn games() -> Vec<(&'static str, Value, u32)> {
    vec![
        (
            "love-letter",
            json!({ "loveLetter": { "edition": "LOVE_LETTER_EDITION_2019" } }),
            3,
        ),
        (
            "love-letter classic",
            json!({ "loveLetter": { "edition": "LOVE_LETTER_EDITION_CLASSIC" } }),
            2,
        ),
        ("lopti", json!({ "lopti": { "hands": 1 } }), 3),
        ("amori-e-intrighi", json!({ "amori": {} }), 2),
    ]
}

/// Reads Server-Sent Events from a streaming response: `(event, id, data)` per event, until
/// the stream ends, fails, or `limit` events were read.
pub(crate) async fn read_sse(
    response: reqwest::Response,
    limit: usize,
) -> (Vec<(String, Option<String>, String)>, bool) {
    use futures::StreamExt;
    let mut events = Vec::new();
    let mut buffer = String::new();
    let mut body = response.bytes_stream();
    let (mut event, mut id, mut data) = (String::from("message"), None, String::new());
    while events.len() < limit {
        let Some(chunk) = body.next().await else {
            return (events, true);
        };
        let Ok(chunk) = chunk else {
            return (events, false);
        };
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find('\n') {
            let line = buffer[..end].trim_end_matches('\r').to_owned();
            buffer.drain(..=end);
            if line.is_empty() {
                if !data.is_empty() {
                    events.push((
                        std::mem::replace(&mut event, "message".into()),
                        id.take(),
                        std::mem::take(&mut data),
                    ));
                }
                continue;
            }
            if let Some(value) = line.strip_prefix("event:") {
                event = value.trim().to_owned();
            } else if let Some(value) = line.strip_prefix("id:") {
                id = Some(value.trim().to_owned());
            } else if let Some(value) = line.strip_prefix("data:") {
                data.push_str(value.trim_start());
            }
        }
    }
    (events, false)
}

/// Whether the environment can run a suite that needs `programs`: when one is missing, the
/// test is skipped with a message, except on CI (`CI` set), where it fails.
pub(crate) fn have(programs: &[&str]) -> bool {
    let missing: Vec<&str> = programs
        .iter()
        .copied()
        .filter(|program| {
            !std::env::var_os("PATH").is_some_and(|path| {
                std::env::split_paths(&path).any(|dir| dir.join(program).is_file())
            }) && !std::path::Path::new(program).is_file()
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must have {missing:?} (.ci/run installs them)"
    );
    eprintln!("skipped: {missing:?} not installed (apt-get install them to run this test)");
    false
}

/// The first fenced block of `language` after `heading` in the repository's file `doc`
/// (README.md, docs/API.md): the examples the docs show, for the tests that run them.
pub(crate) fn fenced_block(doc: &str, heading: &str, language: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(doc);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{doc}: {e}"));
    let section = text
        .split(heading)
        .nth(1)
        .unwrap_or_else(|| panic!("{doc} has a section {heading:?}"));
    section
        .split(&format!("```{language}\n"))
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .unwrap_or_else(|| panic!("{doc}'s {heading:?} has a {language} block"))
        .to_owned()
}
