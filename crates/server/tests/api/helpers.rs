//! `spawn_app()`: the real `missive` binary on free ports, against a fresh PostgreSQL
//! database (or a fresh SQLite directory), with a gRPC client and an HTTP client. Also: more
//! replicas on the same database, killing and restarting a server, and a TCP proxy that can
//! cut a server off from PostgreSQL.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use missive_proto::v1 as pb;
use missive_proto::v1::missive_client::MissiveClient;
use sqlx::Connection;
use tonic::transport::Channel;

pub(crate) const ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

#[path = "../../../store/tests/support/citus.rs"]
mod citus_cluster;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Postgres,
    Sqlite,
    /// A fresh database on the Citus cluster whose coordinator `MISSIVE_CITUS_URL` names,
    /// migrated and distributed as deploy/citus/README.md says.
    Citus,
}

impl Backend {
    /// Whether the backend is PostgreSQL or a PostgreSQL cluster (a `DATABASE_URL`).
    pub(crate) fn is_postgres(self) -> bool {
        self != Backend::Sqlite
    }
}

/// Whether a Citus cluster is named (`MISSIVE_CITUS_URL`); if not, says the test is skipped.
pub(crate) fn citus_available() -> bool {
    citus_cluster::coordinator_url().is_some()
}

/// One test per backend, each calling the same body with its backend under its own name:
/// `backend_tests! { #[tokio::test] body: Postgres => name_on_postgres, Citus => … }`, or
/// `body(more, args)` after the backend. The Citus one runs its body only when a cluster is
/// named ([`citus_available`]).
macro_rules! backend_tests {
    (#[$test:meta] $body:ident: $($tests:tt)*) => {
        $crate::helpers::backend_tests!(#[$test] $body(): $($tests)*);
    };
    (
        #[$test:meta] $body:ident $args:tt:
        $($(#[$doc:meta])* $backend:ident => $name:ident),+ $(,)?
    ) => {
        $(
            $(#[$doc])*
            #[$test]
            async fn $name() {
                let backend = $crate::helpers::Backend::$backend;
                if backend != $crate::helpers::Backend::Citus || $crate::helpers::citus_available()
                {
                    $crate::helpers::backend_tests!(@call $body $args backend);
                }
            }
        )+
    };
    (@call $body:ident ($($arg:expr),*) $backend:ident) => {
        $body($backend $(, $arg)*).await
    };
}
pub(crate) use backend_tests;

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Options {
    pub(crate) allow_fixed_deck: bool,
    /// Extra environment for the server, e.g. short webhook back-offs.
    pub(crate) env: &'static [(&'static str, &'static str)],
    /// Keep what the server writes on stderr (its log) for [`TestApp::log`], instead of
    /// passing it through.
    pub(crate) capture_log: bool,
}

/// A running server; killed, and its database dropped, on drop.
#[derive(Debug)]
pub(crate) struct TestApp {
    child: Child,
    /// The environment it was started with, to restart it the same way.
    env: Vec<(String, String)>,
    pub(crate) grpc_addr: String,
    pub(crate) http_base: String,
    /// Set when this server created (and so drops) its database.
    database: Option<ScratchDb>,
    database_url: Option<String>,
    data_dir: std::path::PathBuf,
    pub(crate) http: reqwest::Client,
    /// The server's stderr lines, when captured ([`Options::capture_log`]).
    log: Arc<Mutex<Vec<String>>>,
}

fn admin_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| ADMIN_URL.to_owned())
}

fn with_database(url: &str, name: &str) -> String {
    match url.rsplit_once('/') {
        Some((base, _)) => format!("{base}/{name}"),
        None => format!("{url}/{name}"),
    }
}

pub(crate) async fn spawn_app(backend: Backend) -> TestApp {
    spawn_app_with(backend, Options::default()).await
}

/// The per-client limits, raised far above what any test asks: every client of a test is the
/// one loopback address, and the tests measure the server, not its limits (`limits.rs` sets
/// its own).
pub(crate) const RAISED_LIMITS: [(&str, &str); 6] = [
    ("MISSIVE_RATE_LIMIT_PER_SEC", "1000000"),
    ("MISSIVE_RATE_LIMIT_BURST", "1000000"),
    ("MISSIVE_CREATE_LIMIT_PER_MIN", "100000000"),
    ("MISSIVE_CREATE_LIMIT_BURST", "1000000"),
    ("MISSIVE_MAX_OPEN_MATCHES", "1000000"),
    ("MISSIVE_MAX_WATCHES_PER_CLIENT", "1000000"),
];

/// How long a test server waits for the store before answering UNAVAILABLE (see [`base_env`]).
const STORE_WAIT_MS: &str = "15000";

/// The store options of a test that runs the service in its own process: as patient as a test
/// server (see [`base_env`]).
pub(crate) fn patient_store() -> missive_store::StoreOptions {
    missive_store::StoreOptions {
        acquire_timeout: Duration::from_millis(STORE_WAIT_MS.parse().expect("a number")),
        ..missive_store::StoreOptions::default()
    }
}

/// The settings every test server starts with.
fn base_env(data_dir: &std::path::Path) -> Vec<(String, String)> {
    [
        ("MISSIVE_GRPC_ADDR", "127.0.0.1:0"),
        ("MISSIVE_HTTP_ADDR", "127.0.0.1:0"),
        ("MISSIVE_DATA_DIR", &data_dir.display().to_string()),
        ("MISSIVE_SNAPSHOT_EVERY", "16"),
        // Test receivers listen on loopback.
        ("MISSIVE_WEBHOOK_ALLOW_PRIVATE", "true"),
        // Several suites share one PostgreSQL and one disk, and a commit can wait seconds for
        // another test's checkpoint: these tests check what the server answers, not how fast,
        // so they wait for the store longer than a deployment's 3 s. The tests of an outage
        // (`replicas.rs`, `retries.rs`, `cli.rs`) set their own short bound.
        ("MISSIVE_DB_ACQUIRE_TIMEOUT_MS", STORE_WAIT_MS),
        ("RUST_LOG", "warn"),
    ]
    .into_iter()
    .chain(RAISED_LIMITS)
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// The binary with exactly this environment on top of the test's (minus `DATABASE_URL`).
fn command(env: &[(String, String)]) -> Command {
    let mut command = missive_launch::command(env!("CARGO_BIN_EXE_missive"));
    command
        .env_remove("DATABASE_URL")
        .envs(env.iter().map(|(k, v)| (k, v)));
    command
}

pub(crate) async fn spawn_app_with(backend: Backend, options: Options) -> TestApp {
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let data_dir = std::env::temp_dir().join(format!("missive-test-{suffix}"));
    let mut env = base_env(&data_dir);
    env.push((
        "MISSIVE_ALLOW_FIXED_DECK".into(),
        options.allow_fixed_deck.to_string(),
    ));
    for (key, value) in options.env {
        env.push(((*key).to_owned(), (*value).to_owned()));
    }
    let database = ScratchDb::for_backend(backend).await;
    let database_url = database.as_ref().map(|db| db.url.clone());
    if let Some(url) = &database_url {
        env.push(("DATABASE_URL".into(), url.clone()));
    }
    let mut command = command(&env);
    if options.capture_log {
        command.stderr(Stdio::piped());
    }
    let (mut child, grpc_addr, http_base) = start(command).await;
    let log = Arc::new(Mutex::new(Vec::new()));
    if let Some(stderr) = child.stderr.take() {
        let log = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                log.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
    }
    TestApp {
        child,
        env,
        grpc_addr,
        http_base,
        log,
        database,
        database_url,
        data_dir,
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client"),
    }
}

impl TestApp {
    /// Kills the server (SIGKILL: nothing is flushed or released), leaves it down for `down`,
    /// and starts it again on the same database or data directory, on new ports.
    pub(crate) async fn restart_after(&mut self, down: Duration) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        tokio::time::sleep(down).await;
        self.restart().await;
    }
}

/// The JSON body of `response`, the answer to `what` (a method and a path).
async fn json_body<T: serde::de::DeserializeOwned>(response: reqwest::Response, what: &str) -> T {
    response
        .json()
        .await
        .unwrap_or_else(|e| panic!("the JSON of {what}: {e}"))
}

/// A second server on the same PostgreSQL database, as another replica would be.
pub(crate) async fn spawn_replica(app: &TestApp) -> TestApp {
    spawn_replica_with(app, &[]).await
}

/// Two servers on one fresh database (`backend` is a PostgreSQL one), and a gRPC client of each.
pub(crate) async fn two_replicas(
    backend: Backend,
) -> (
    TestApp,
    TestApp,
    MissiveClient<Channel>,
    MissiveClient<Channel>,
) {
    two_replicas_with(backend, &[]).await
}

/// [`two_replicas`], the second with more settings (as [`spawn_replica_with`]).
pub(crate) async fn two_replicas_with(
    backend: Backend,
    extra: &[(&str, String)],
) -> (
    TestApp,
    TestApp,
    MissiveClient<Channel>,
    MissiveClient<Channel>,
) {
    let first = spawn_app(backend).await;
    let second = spawn_replica_with(&first, extra).await;
    let (a, b) = (first.grpc().await, second.grpc().await);
    (first, second, a, b)
}

/// A replica with more settings; a `DATABASE_URL` among them replaces the shared one (to reach
/// the same database another way, e.g. through a [`PgProxy`]).
pub(crate) async fn spawn_replica_with(app: &TestApp, extra: &[(&str, String)]) -> TestApp {
    let url = app
        .database_url
        .clone()
        .expect("replicas share a PostgreSQL database");
    let data_dir =
        std::env::temp_dir().join(format!("missive-test-{}", uuid::Uuid::new_v4().simple()));
    let mut env = base_env(&data_dir);
    env.push(("DATABASE_URL".into(), url.clone()));
    for (key, value) in extra {
        env.retain(|(k, _)| k != key);
        env.push(((*key).to_owned(), value.clone()));
    }
    let (child, grpc_addr, http_base) = start(command(&env)).await;
    TestApp {
        child,
        env,
        grpc_addr,
        http_base,
        database: None,
        database_url: Some(url),
        data_dir,
        log: Arc::default(),
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client"),
    }
}

/// Starts the binary and reads the addresses it prints.
async fn start(mut command: Command) -> (Child, String, String) {
    let (child, at) = missive_launch::start(&mut command)
        .await
        .expect("the server listens");
    (child, at.grpc, at.http)
}

impl TestApp {
    pub(crate) async fn grpc(&self) -> MissiveClient<Channel> {
        MissiveClient::connect(self.grpc_addr.clone())
            .await
            .expect("gRPC connects")
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.http_base)
    }

    /// GETs `path`; the answer, whatever its status.
    pub(crate) async fn get(&self, path: &str) -> reqwest::Response {
        self.get_as(path, None).await
    }

    /// GETs `path`, with `bearer` as its bearer token if given; the answer, whatever its status.
    pub(crate) async fn get_as(&self, path: &str, bearer: Option<&str>) -> reqwest::Response {
        let mut request = self.http.get(self.url(path));
        if let Some(token) = bearer {
            request = request.bearer_auth(token);
        }
        request
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"))
    }

    /// POSTs `body` as JSON to `path`; the answer, whatever its status.
    pub(crate) async fn post(&self, path: &str, body: &serde_json::Value) -> reqwest::Response {
        self.http
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {path}: {e}"))
    }

    /// GETs `path`, with `bearer` as its bearer token if given; the answer's JSON body
    /// (whatever its status).
    pub(crate) async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        bearer: Option<&str>,
    ) -> T {
        json_body(self.get_as(path, bearer).await, &format!("GET {path}")).await
    }

    /// POSTs `body` as JSON to `path`; the answer's JSON body (whatever its status).
    pub(crate) async fn post_json<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: &serde_json::Value,
    ) -> T {
        json_body(self.post(path, body).await, &format!("POST {path}")).await
    }

    /// Takes a seat of match `id` over HTTP/JSON as `player`; its seat token.
    pub(crate) async fn http_join(&self, id: &str, player: &str) -> String {
        let joined: serde_json::Value = self
            .post_json(
                &format!("/v1/matches/{id}/join"),
                &serde_json::json!({ "player": player }),
            )
            .await;
        joined["seatToken"]
            .as_str()
            .unwrap_or_else(|| panic!("a seat token: {joined}"))
            .to_owned()
    }

    /// The server's `/metrics` page.
    pub(crate) async fn metrics(&self) -> String {
        self.http
            .get(self.url("/metrics"))
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("text")
    }

    /// The lines the server has written on stderr so far (captured with
    /// [`Options::capture_log`]; empty otherwise).
    pub(crate) fn log(&self) -> Vec<String> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The value of the series `name` (with its labels) on `/metrics`, if exported.
    pub(crate) async fn metric(&self, name: &str) -> Option<u64> {
        self.metrics()
            .await
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
    }

    /// The PostgreSQL database this server uses (shared by its replicas).
    pub(crate) fn database_url(&self) -> &str {
        self.database_url
            .as_deref()
            .expect("a server on PostgreSQL")
    }

    /// Kills the server with SIGKILL, as a crash would: nothing is flushed or drained.
    pub(crate) fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }

    /// Starts the server again with the same settings and database (on new ports).
    /// Sets one variable of the environment the next [`TestApp::restart`] starts with.
    pub(crate) fn set_env(&mut self, key: &str, value: &str) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.to_owned()));
    }

    pub(crate) async fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let (child, grpc_addr, http_base) = start(command(&self.env)).await;
        self.child = child;
        self.grpc_addr = grpc_addr;
        self.http_base = http_base;
    }
}

/// A loopback TCP proxy in front of PostgreSQL that can cut every connection through it and
/// refuse new ones, then let them through again: a lost database, without touching the shared
/// PostgreSQL server.
#[derive(Debug)]
pub(crate) struct PgProxy {
    addr: SocketAddr,
    cut: Arc<AtomicBool>,
    /// New connections are accepted and then never answered, as by a database that hangs.
    hang: Arc<AtomicBool>,
    live: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl PgProxy {
    /// Listens on a free loopback port and forwards to the PostgreSQL of the admin URL.
    pub(crate) async fn start() -> PgProxy {
        let upstream = host_port(&admin_url());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let addr = listener.local_addr().expect("proxy address");
        let cut = Arc::new(AtomicBool::new(false));
        let hang = Arc::new(AtomicBool::new(false));
        let live = Arc::new(Mutex::new(Vec::new()));
        let accept = tokio::spawn({
            let (upstream, cut, live) = (upstream.clone(), cut.clone(), live.clone());
            let hang = hang.clone();
            async move {
                let mut held = Vec::new();
                while let Ok((mut inbound, _)) = listener.accept().await {
                    if hang.load(Ordering::SeqCst) {
                        held.push(inbound); // accepted, and never answered
                        continue;
                    }
                    held.clear();
                    if cut.load(Ordering::SeqCst) {
                        drop(inbound); // refused: closed at once
                        continue;
                    }
                    let upstream = upstream.clone();
                    let task = tokio::spawn(async move {
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(&upstream).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                    let mut live = live.lock().unwrap_or_else(|e| e.into_inner());
                    live.retain(|t: &tokio::task::AbortHandle| !t.is_finished());
                    live.push(task.abort_handle());
                }
            }
        });
        PgProxy {
            addr,
            cut,
            hang,
            live,
            accept,
        }
    }

    /// `url` with its host and port replaced by the proxy's.
    pub(crate) fn url(&self, url: &str) -> String {
        let target = host_port(url);
        let with_port = url.replacen(&target, &self.addr.to_string(), 1);
        assert_ne!(with_port, url, "{url} names {target}");
        with_port
    }

    /// Drops every connection through the proxy and refuses new ones.
    pub(crate) fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        for task in live.drain(..) {
            task.abort();
        }
    }

    /// Drops every connection through the proxy and leaves new ones unanswered: a database
    /// that hangs, or a network that drops packets, where every connection attempt waits.
    pub(crate) fn hang(&self) {
        self.hang.store(true, Ordering::SeqCst);
        self.cut();
    }

    /// Lets connections through again.
    pub(crate) fn restore(&self) {
        self.hang.store(false, Ordering::SeqCst);
        self.cut.store(false, Ordering::SeqCst);
    }
}

impl Drop for PgProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

/// `host:port` of a `postgres://[user[:password]@]host[:port][/database]` URL.
fn host_port(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let host = rest.split(['/', '?']).next().unwrap_or(rest);
    if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:5432")
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.data_dir);
        // The database, if this server created it, goes after the server.
        drop(self.database.take());
    }
}

/// A fresh PostgreSQL database for one test, or one on every node of a Citus cluster; dropped
/// (with any connections left) on drop.
#[derive(Debug)]
pub(crate) struct ScratchDb {
    pub(crate) url: String,
    /// The administrative connection of every node it was created on.
    nodes: Vec<sqlx::postgres::PgConnectOptions>,
    name: String,
}

impl ScratchDb {
    pub(crate) async fn create() -> ScratchDb {
        let admin = admin_url();
        let name = format!("missive_test_{}", uuid::Uuid::new_v4().simple());
        let mut conn = sqlx::PgConnection::connect(&admin)
            .await
            .expect("PostgreSQL is reachable");
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .expect("create database");
        conn.close().await.ok();
        ScratchDb {
            url: with_database(&admin, &name),
            nodes: vec![admin.parse().expect("a PostgreSQL URL")],
            name,
        }
    }

    /// A database on the Citus cluster `MISSIVE_CITUS_URL` names, migrated and distributed.
    pub(crate) async fn create_citus() -> ScratchDb {
        let admin = citus_cluster::coordinator_url()
            .expect("a Citus test runs only when MISSIVE_CITUS_URL is set");
        let db = citus_cluster::create(&admin, patient_store())
            .await
            .expect("a database on the Citus cluster");
        ScratchDb {
            url: db.url,
            nodes: db.nodes,
            name: db.name,
        }
    }

    /// The database a server on `backend` uses, if any.
    pub(crate) async fn for_backend(backend: Backend) -> Option<ScratchDb> {
        match backend {
            Backend::Postgres => Some(ScratchDb::create().await),
            Backend::Citus => Some(ScratchDb::create_citus().await),
            Backend::Sqlite => None,
        }
    }
}

impl Drop for ScratchDb {
    fn drop(&mut self) {
        let (nodes, name) = (std::mem::take(&mut self.nodes), self.name.clone());
        // Drop runs outside any runtime guarantee: use a small runtime of its own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            rt.block_on(citus_cluster::drop_database(&nodes, &name))
                .ok()
        })
        .join();
    }
}

/// Attaches a bearer token to a gRPC request.
pub(crate) fn authed<T>(message: T, token: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().expect("ascii token"),
    );
    request
}

/// A small deterministic generator so a failing game can be reproduced.
#[derive(Debug)]
pub(crate) struct Lcg(pub u64);

impl Lcg {
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

pub(crate) fn love_letter_options(seats: u32) -> pb::CreateMatchRequest {
    pb::CreateMatchRequest {
        options: Some(pb::GameOptions {
            game: Some(pb::game_options::Game::LoveLetter(
                pb::LoveLetterOptions::default(),
            )),
        }),
        seat_count: seats,
        turn_timeout_secs: None,
        turn_reminder_secs: None,
        bots: Vec::new(),
        ..Default::default()
    }
}

/// An act over HTTP/JSON with the seat token `token`: its status and its JSON body.
pub(crate) async fn http_act(
    app: &TestApp,
    id: &str,
    token: &str,
    body: &serde_json::Value,
) -> (reqwest::StatusCode, serde_json::Value) {
    let response = app
        .http
        .post(app.url(&format!("/v1/matches/{id}/act")))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .expect("act");
    (response.status(), response.json().await.expect("json body"))
}

/// An act of `action` pinned to `view`'s version, under a new request id.
pub(crate) fn act_request(
    match_id: &str,
    view: &pb::MatchView,
    action: pb::GameAction,
) -> pb::ActRequest {
    pb::ActRequest {
        match_id: match_id.to_owned(),
        action: Some(action),
        request_id: uuid::Uuid::new_v4().to_string(),
        expected_version: Some(view.version),
        seat: None,
        omit_view: false,
    }
}

/// An act of `action` by `seat` under a new request id, pinned to `expected_version` if given.
pub(crate) fn seat_act(
    match_id: &str,
    seat: u32,
    action: pb::GameAction,
    expected_version: Option<u64>,
) -> pb::ActRequest {
    pb::ActRequest {
        match_id: match_id.to_owned(),
        action: Some(action),
        request_id: uuid::Uuid::new_v4().to_string(),
        expected_version,
        seat: Some(seat),
        ..Default::default()
    }
}

/// Sends the act `request` with the seat token `token`; the answer (the act must be accepted).
pub(crate) async fn act_with(
    client: &mut MissiveClient<Channel>,
    request: pb::ActRequest,
    token: &str,
) -> pb::ActResponse {
    let request_id = request.request_id.clone();
    client
        .act(authed(request, token))
        .await
        .unwrap_or_else(|e| panic!("act {request_id}: {e}"))
        .into_inner()
}

/// Creates a match as `request` asks; returns its id.
pub(crate) async fn create_match(
    client: &mut MissiveClient<Channel>,
    request: pb::CreateMatchRequest,
) -> String {
    let created = client
        .create_match(request)
        .await
        .expect("create")
        .into_inner();
    created.r#match.expect("info").match_id
}

/// Takes seat `seat` of a match (the first free one with `None`) as `player`.
pub(crate) async fn join_as(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    player: &str,
    seat: Option<u32>,
) -> pb::JoinMatchResponse {
    client
        .join_match(pb::JoinMatchRequest {
            match_id: match_id.to_owned(),
            player: player.to_owned(),
            seat,
            ..Default::default()
        })
        .await
        .unwrap_or_else(|e| panic!("{player} joins: {e}"))
        .into_inner()
}

/// Gives up the seat whose token this is.
pub(crate) async fn leave(client: &mut MissiveClient<Channel>, match_id: &str, token: &str) {
    client
        .leave_match(authed(
            pb::LeaveMatchRequest {
                match_id: match_id.to_owned(),
                ..Default::default()
            },
            token,
        ))
        .await
        .expect("leave");
}

/// Creates an open Love Letter match of `seats` seats; returns its id.
pub(crate) async fn open_love_letter(client: &mut MissiveClient<Channel>, seats: u32) -> String {
    create_match(client, love_letter_options(seats)).await
}

/// The match as `GetMatch` reads it from the store.
pub(crate) async fn get_match(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
) -> pb::MatchInfo {
    client
        .get_match(pb::GetMatchRequest {
            match_id: match_id.to_owned(),
        })
        .await
        .expect("get match")
        .into_inner()
        .r#match
        .expect("match info")
}

/// A request with the token's bearer header, or a spectator's without a token.
pub(crate) fn maybe_authed<T>(message: T, token: Option<&str>) -> tonic::Request<T> {
    match token {
        Some(token) => authed(message, token),
        None => tonic::Request::new(message),
    }
}

/// The view of the seat whose token this is, or a spectator's with `None`.
pub(crate) async fn view(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    token: Option<&str>,
) -> pb::MatchView {
    let request = pb::GetViewRequest {
        match_id: match_id.to_owned(),
        seat: None,
    };
    client
        .get_view(maybe_authed(request, token))
        .await
        .expect("view")
        .into_inner()
        .view
        .expect("a view")
}

/// A spectator's view (no token).
pub(crate) async fn spectator_view(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
) -> pb::MatchView {
    view(client, match_id, None).await
}

/// The view of the seat whose token this is.
pub(crate) async fn seat_view(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    token: &str,
) -> pb::MatchView {
    view(client, match_id, Some(token)).await
}

/// The history as the token's seat sees it (a spectator's with `None`).
pub(crate) async fn history(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    token: Option<&str>,
) -> pb::GetHistoryResponse {
    seat_history(client, match_id, None, token).await
}

/// The history of `seat` (or of the token's own seat with `None`), read with `token`.
pub(crate) async fn seat_history(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    seat: Option<u32>,
    token: Option<&str>,
) -> pb::GetHistoryResponse {
    let request = pb::GetHistoryRequest {
        match_id: match_id.to_owned(),
        seat,
    };
    client
        .get_history(maybe_authed(request, token))
        .await
        .expect("history")
        .into_inner()
}

/// The game events of a match's history (each with its seq) as `seat` reads it with `token`
/// (a spectator's with `None`).
pub(crate) async fn game_events(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    seat: Option<u32>,
    token: Option<&str>,
) -> Vec<(u64, pb::GameEvent)> {
    let history = seat_history(client, match_id, seat, token).await;
    history
        .entries
        .into_iter()
        .filter_map(|e| match e.entry {
            Some(pb::history_entry::Entry::Game(event)) => Some((e.seq, event)),
            _ => None,
        })
        .collect()
}

/// A finished match's full audit log.
pub(crate) async fn audit_log(client: &mut MissiveClient<Channel>, match_id: &str) -> pb::AuditLog {
    client
        .get_history(pb::GetHistoryRequest {
            match_id: match_id.to_owned(),
            seat: None,
        })
        .await
        .expect("history")
        .into_inner()
        .audit
        .expect("the full log once the match is over")
}

/// Where a finished match was dealt: the seq of the event that dealt it and the seed the
/// shuffle drew from, recomputed from the revealed seed and the logged nonces as docs/API.md
/// states it: `SHA-256("missive deal v1" ‖ seed ‖ len(nonce) ‖ nonce …)` over the seats'
/// holders when the last seat was taken. A match from before nonces was dealt at creation
/// (seq 1) from the seed itself.
pub(crate) fn deal_of(log: &pb::AuditLog) -> (u64, [u8; 32]) {
    use pb::audit_event::Body;
    use sha2::{Digest, Sha256};
    let seed: [u8; 32] = hex::decode(&log.seed)
        .expect("hex seed")
        .try_into()
        .expect("32 bytes");
    let mut holders: Vec<Option<String>> = Vec::new();
    for event in &log.events {
        match &event.body {
            Some(Body::Created(c)) => {
                if !c.deal_at_start {
                    return (event.seq, seed);
                }
                holders = vec![None; c.seat_count as usize];
                for bot in &c.bots {
                    holders[bot.seat as usize] = Some(bot.nonce.clone());
                }
            }
            Some(Body::Joined(j)) => holders[j.seat as usize] = Some(j.nonce.clone()),
            Some(Body::Left(l)) => holders[l.seat as usize] = None,
            _ => {}
        }
        if !holders.is_empty() && holders.iter().all(Option::is_some) {
            let mut hasher = Sha256::new();
            hasher.update(b"missive deal v1");
            hasher.update(seed);
            for nonce in holders.iter().flatten() {
                assert!((1..=64).contains(&nonce.len()), "a nonce of 1 to 64 bytes");
                hasher.update([nonce.len() as u8]);
                hasher.update(nonce.as_bytes());
            }
            return (event.seq, hasher.finalize().into());
        }
    }
    panic!("the match never started");
}

/// The game a match's `created` event names.
pub(crate) fn game_of(
    registry: &missive_server::games::Registry,
    created: Option<&pb::MatchCreated>,
) -> std::sync::Arc<dyn missive_server::games::GameKind> {
    let options = created
        .and_then(|c| c.options.as_ref())
        .expect("created first, with options");
    registry.parse_options(options, None).expect("a game").0
}

/// One replayed event: its seq, the state right after it, and the observations it produced.
pub(crate) type Step = (
    u64,
    Box<dyn missive_server::games::MatchState>,
    Vec<missive_rules::Observation<pb::GameEvent>>,
);

/// Replays an audit log step by step through the rules, dealing from the deal seed the log
/// itself gives (not through the server's own fold).
pub(crate) fn replay(log: &pb::AuditLog) -> Vec<Step> {
    let registry = missive_server::games::Registry::new();
    let (dealt_at, seed) = deal_of(log);
    let mut created: Option<pb::MatchCreated> = None;
    let mut state: Option<Box<dyn missive_server::games::MatchState>> = None;
    let mut steps = Vec::new();
    for event in &log.events {
        let stored = missive_server::audit::stored_event(&registry, event, created.as_ref())
            .expect("rebuilds");
        let mut observations = Vec::new();
        if let Some(pb::audit_event::Body::Created(c)) = &event.body {
            created = Some(c.clone());
        }
        if event.seq == dealt_at {
            let c = created.as_ref().expect("created first");
            let (game, parsed) = registry
                .parse_options(
                    c.options.as_ref().expect("options"),
                    Some(c.seat_count as u8),
                )
                .expect("options");
            let fresh = game
                .setup(&parsed.config, c.seat_count as u8, seed)
                .expect("setup");
            observations = fresh.setup_observations();
            state = Some(fresh);
        }
        if let Some(pb::audit_event::Body::Action(a)) = &event.body {
            observations = state
                .as_mut()
                .expect("dealt first")
                .apply(
                    a.seat as u8,
                    &game_of(&registry, created.as_ref())
                        .decode_action(&stored.payload["action"])
                        .expect("decodes"),
                )
                .expect("a logged action replays");
        }
        // Nothing is dealt before the start: no state, and nothing told to anyone.
        match &state {
            Some(state) => steps.push((event.seq, state.boxed_clone(), observations)),
            None => assert!(observations.is_empty()),
        }
    }
    steps
}

/// The game events the replayed `steps` told `who`, each with the seq of its step.
pub(crate) fn told_to(steps: &[Step], who: missive_rules::Viewer) -> Vec<(u64, pb::GameEvent)> {
    steps
        .iter()
        .flat_map(|(seq, _, observations)| {
            observations
                .iter()
                .filter(|o| o.audience.includes(who))
                .map(|o| (*seq, o.event.clone()))
        })
        .collect()
}

/// Every act of `acts` (its request id, and the version its answer or its retry's gave) is in
/// the match's log exactly once, at that version; `log` is each event's request id and seq.
pub(crate) fn assert_each_act_logged_once<'a>(
    acts: &HashMap<String, u64>,
    log: impl IntoIterator<Item = (Option<&'a str>, u64)>,
) {
    let mut logged: HashMap<String, u64> = HashMap::new();
    for (request_id, seq) in log {
        if let Some(request_id) = request_id
            && acts.contains_key(request_id)
        {
            assert!(
                logged.insert(request_id.to_owned(), seq).is_none(),
                "act {request_id} is in the log twice"
            );
        }
    }
    assert_eq!(
        &logged, acts,
        "every act in the log once, at the version it was answered"
    );
}
