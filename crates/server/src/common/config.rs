//! The server's configuration: one typed struct, grouped by concern, from flags and
//! environment, parsed once in `main`. Secrets (a database URL may hold a password) are
//! redacted in `Debug`; the store's defaults are [`StoreOptions::default`]'s.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use missive_store::StoreOptions;

#[derive(Debug, Clone, Parser)]
#[command(
    name = "missive",
    version,
    about = "Missive: a server for asynchronous turn-based games"
)]
pub struct Config {
    #[command(flatten)]
    pub listen: Listen,
    #[command(flatten)]
    pub store: StoreConfig,
    #[command(flatten)]
    pub requests: Requests,
    #[command(flatten)]
    pub turns: Turns,
    #[command(flatten)]
    pub webhooks: Webhooks,
    #[command(flatten)]
    pub watch: Watch,
    #[command(flatten)]
    pub limits: Limits,
    #[command(flatten)]
    pub connections: Connections,
    #[command(flatten)]
    pub browsers: Browsers,
    #[command(flatten)]
    pub logs: Logs,
    #[command(flatten)]
    pub shutdown: Shutdown,
    #[command(flatten)]
    pub identity: Identity,
    #[command(flatten)]
    pub runtime: Runtime,
}

/// The async runtime the server runs on.
#[derive(Debug, Clone, clap::Args)]
pub struct Runtime {
    /// Threads that run requests, streams and background work; default: one per core. On a
    /// machine the server shares with its database, fewer than the cores spend less CPU per act
    /// (fewer wake-ups across threads; docs/BENCHMARKS.md).
    #[arg(long, env = "MISSIVE_WORKER_THREADS")]
    pub worker_threads: Option<std::num::NonZeroUsize>,
}

/// Where the server listens.
#[derive(Debug, Clone, clap::Args)]
pub struct Listen {
    /// Address for gRPC (port 0 picks a free port).
    #[arg(long, env = "MISSIVE_GRPC_ADDR", default_value = "127.0.0.1:50051")]
    pub grpc_addr: SocketAddr,

    /// Address for HTTP/JSON, SSE, /openapi.json, /healthz and /metrics (port 0 picks a free port).
    #[arg(long, env = "MISSIVE_HTTP_ADDR", default_value = "127.0.0.1:8080")]
    pub http_addr: SocketAddr,
}

/// The match store. Defaults come from [`StoreOptions::default`], the one place they are set.
#[derive(Debug, Clone, clap::Args)]
pub struct StoreConfig {
    /// Directory for the embedded SQLite store (used when no database URL is given).
    #[arg(long, env = "MISSIVE_DATA_DIR", default_value = "./missive-data")]
    pub data_dir: PathBuf,

    /// postgres://… to use PostgreSQL, or sqlite://path; default: SQLite under the data dir.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: Option<Secret>,

    /// Write a state snapshot every this many events.
    #[arg(long, env = "MISSIVE_SNAPSHOT_EVERY", default_value_t = StoreOptions::default().snapshot_every)]
    pub snapshot_every: u64,

    /// Database connection pool size (on PostgreSQL at least 4: fewer opens 4).
    #[arg(long, env = "MISSIVE_DB_MAX_CONNECTIONS", default_value_t = StoreOptions::default().max_connections)]
    pub db_max_connections: u32,

    /// PostgreSQL: milliseconds a request waits for a database connection (including
    /// connecting) before it fails with UNAVAILABLE / 503.
    #[arg(long, env = "MISSIVE_DB_ACQUIRE_TIMEOUT_MS", default_value_t = StoreOptions::default().acquire_timeout.as_millis() as u64)]
    pub db_acquire_timeout_ms: u64,

    /// PostgreSQL: announce appends with NOTIFY and LISTEN for other replicas' appends, so
    /// their watchers hear at once. Off (e.g. behind a transaction-pooling proxy), watchers
    /// rely on the recheck timer alone.
    #[arg(long, env = "MISSIVE_NOTIFY", default_value_t = StoreOptions::default().notify, action = clap::ArgAction::Set)]
    pub notify: bool,

    /// Matches kept in memory.
    #[arg(long, env = "MISSIVE_CACHE_CAPACITY", default_value_t = 10_000)]
    pub cache_capacity: usize,

    /// PostgreSQL: seconds after a match ends (finished or abandoned) before its events are
    /// archived into one compressed row; reads, retries and audits answer as before. 0 never
    /// archives.
    #[arg(long, env = "MISSIVE_ARCHIVE_AFTER_SECS", default_value_t = 3_600)]
    pub archive_after_secs: u64,

    /// PostgreSQL: pack the older events of matches still being played into compressed blocks
    /// (all but the newest few, once there are 20 since the last block); reads, retries and
    /// audits answer as before. Swept as often as ended matches are looked for archiving.
    #[arg(long, env = "MISSIVE_PACK_LIVE", default_value_t = true, action = clap::ArgAction::Set)]
    pub pack_live: bool,
}

/// What a request may be and take.
#[derive(Debug, Clone, clap::Args)]
pub struct Requests {
    /// Allow CreateMatch with a fixed deck order (for tests and tutorials). Off by default.
    #[arg(long, env = "MISSIVE_ALLOW_FIXED_DECK", default_value_t = false)]
    pub allow_fixed_deck: bool,

    /// Seconds before a request is cut off (watch streams excepted).
    #[arg(long, env = "MISSIVE_REQUEST_TIMEOUT_SECS", default_value_t = 10)]
    pub request_timeout_secs: u64,

    /// Largest accepted request body, in bytes.
    #[arg(long, env = "MISSIVE_MAX_BODY_BYTES", default_value_t = 64 * 1024)]
    pub max_body_bytes: usize,

    /// Requests served at once per transport; more wait.
    #[arg(long, env = "MISSIVE_CONCURRENCY_LIMIT", default_value_t = 256)]
    pub concurrency_limit: usize,

    /// HTTP listener: seconds a client has to send a request's headers once it starts one (a
    /// connection sending them slower is closed).
    #[arg(long, env = "MISSIVE_HEADER_READ_TIMEOUT_SECS", default_value_t = 10)]
    pub header_read_timeout_secs: u64,

    /// HTTP listener: seconds a client has to send a request's body (slower: 408).
    #[arg(long, env = "MISSIVE_BODY_READ_TIMEOUT_SECS", default_value_t = 10)]
    pub body_read_timeout_secs: u64,
}

/// Per-client limits on the API (both transports; docs/API.md, "Limits"). Health checks,
/// metrics, reflection, the OpenAPI document and the web client are never limited. Over a
/// limit: RESOURCE_EXHAUSTED, HTTP 429 with `Retry-After`. 0 turns a limit off.
#[derive(Debug, Clone, clap::Args)]
pub struct Limits {
    /// API requests one client may make per second, on average, on each server.
    #[arg(long, env = "MISSIVE_RATE_LIMIT_PER_SEC", default_value_t = 20)]
    pub rate_limit_per_sec: u32,

    /// API requests one client may make at once after a quiet spell.
    #[arg(long, env = "MISSIVE_RATE_LIMIT_BURST", default_value_t = 40)]
    pub rate_limit_burst: u32,

    /// Matches one client may create per minute on each server; each bot seat asked for counts
    /// as one creation more.
    #[arg(long, env = "MISSIVE_CREATE_LIMIT_PER_MIN", default_value_t = 10)]
    pub create_limit_per_min: u32,

    /// Match creations (bot seats included) one client may make at once.
    #[arg(long, env = "MISSIVE_CREATE_LIMIT_BURST", default_value_t = 10)]
    pub create_limit_burst: u32,

    /// Open matches (waiting for players) one creator may have, across replicas; started
    /// matches do not count.
    #[arg(long, env = "MISSIVE_MAX_OPEN_MATCHES", default_value_t = 20)]
    pub max_open_matches: u32,

    /// Watch streams (gRPC and SSE together) one client may hold open on each server.
    #[arg(long, env = "MISSIVE_MAX_WATCHES_PER_CLIENT", default_value_t = 32)]
    pub max_watches_per_client: u32,

    /// Watch streams each server holds open, all clients together.
    #[arg(long, env = "MISSIVE_MAX_WATCHES", default_value_t = 10_000)]
    pub max_watches: u32,

    /// Proxies (addresses or networks, comma-separated, such as `10.0.0.0/8,::1`) whose
    /// `Forwarded` / `X-Forwarded-For` headers name the client. Empty (the default): the
    /// headers are ignored and each client is its peer address.
    #[arg(long, env = "MISSIVE_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<Network>,
}

/// gRPC connections: HTTP/2 keep-alive pings find dead or stalled peers and close their
/// connections. 0 turns a setting off.
#[derive(Debug, Clone, clap::Args)]
pub struct Connections {
    /// Seconds between HTTP/2 keep-alive pings the gRPC server sends on a connection.
    #[arg(
        long,
        env = "MISSIVE_GRPC_KEEPALIVE_INTERVAL_SECS",
        default_value_t = 60
    )]
    pub grpc_keepalive_interval_secs: u64,

    /// Seconds a peer has to answer a keep-alive ping before its connection is closed.
    #[arg(
        long,
        env = "MISSIVE_GRPC_KEEPALIVE_TIMEOUT_SECS",
        default_value_t = 20
    )]
    pub grpc_keepalive_timeout_secs: u64,

    /// Seconds after which a gRPC connection is asked to go away (GOAWAY; its calls in flight
    /// get a minute to finish, watch streams resume on a new connection); 0: never.
    #[arg(
        long,
        env = "MISSIVE_GRPC_MAX_CONNECTION_AGE_SECS",
        default_value_t = 0
    )]
    pub grpc_max_connection_age_secs: u64,
}

impl Connections {
    fn secs(secs: u64) -> Option<Duration> {
        (secs > 0).then(|| Duration::from_secs(secs))
    }

    pub fn keepalive_interval(&self) -> Option<Duration> {
        Self::secs(self.grpc_keepalive_interval_secs)
    }

    pub fn keepalive_timeout(&self) -> Option<Duration> {
        Self::secs(self.grpc_keepalive_timeout_secs)
    }

    pub fn max_connection_age(&self) -> Option<Duration> {
        Self::secs(self.grpc_max_connection_age_secs)
    }
}

/// Turn deadlines and bot turns, and how long an open match waits for players.
#[derive(Debug, Clone, clap::Args)]
pub struct Turns {
    /// Seconds an open match nobody joins stays open, counted from its last event (its
    /// creation, or its last join or leave); then the server closes it (abandoned, expired).
    /// 0: open matches never expire.
    #[arg(long, env = "MISSIVE_OPEN_MATCH_EXPIRY_SECS", default_value_t = 7 * 24 * 3_600)]
    pub open_match_expiry_secs: u64,

    /// Milliseconds between two looks for passed turn deadlines (bot turns this server
    /// creates are played at once).
    #[arg(long, env = "MISSIVE_TURN_POLL_MS", default_value_t = 250)]
    pub turn_poll_ms: u64,

    /// Seconds a server holds a claimed turn before another may claim it again (if the first
    /// died while playing it).
    #[arg(long, env = "MISSIVE_TURN_LEASE_SECS", default_value_t = 30)]
    pub turn_lease_secs: u64,
}

/// "Your turn" webhooks and their delivery.
#[derive(Debug, Clone, clap::Args)]
pub struct Webhooks {
    /// Delay before the first retry of a failed webhook delivery, in milliseconds; each further
    /// retry waits twice as long (less up to a quarter, at random), up to the maximum.
    #[arg(long, env = "MISSIVE_WEBHOOK_RETRY_BASE_MS", default_value_t = 5_000)]
    pub webhook_retry_base_ms: u64,

    /// Longest wait between two attempts at a webhook delivery, in seconds.
    #[arg(long, env = "MISSIVE_WEBHOOK_RETRY_MAX_SECS", default_value_t = 3_600)]
    pub webhook_retry_max_secs: u64,

    /// Attempts at a webhook delivery before it is given up (the outbox row keeps the record).
    #[arg(long, env = "MISSIVE_WEBHOOK_MAX_ATTEMPTS", default_value_t = 12)]
    pub webhook_max_attempts: u32,

    /// How often the delivery worker looks for due webhook deliveries, in milliseconds (it
    /// also wakes at once after this server queues one).
    #[arg(long, env = "MISSIVE_WEBHOOK_POLL_MS", default_value_t = 1_000)]
    pub webhook_poll_ms: u64,

    /// Let webhooks reach loopback, private and link-local addresses (receivers inside the
    /// server's own network, local development). Off: such URLs are refused.
    #[arg(long, env = "MISSIVE_WEBHOOK_ALLOW_PRIVATE", default_value_t = false, action = clap::ArgAction::Set)]
    pub webhook_allow_private: bool,

    /// Seconds a webhook receiver has to answer one delivery.
    #[arg(long, env = "MISSIVE_WEBHOOK_TIMEOUT_SECS", default_value_t = 10)]
    pub webhook_timeout_secs: u64,

    /// Webhook deliveries in flight at once on this server, all receivers together.
    #[arg(long, env = "MISSIVE_WEBHOOK_CONCURRENCY", default_value_t = 128)]
    pub webhook_concurrency: usize,

    /// Webhook deliveries in flight at once to one host (a receiver's host name or address,
    /// whatever the port); more wait in the outbox.
    #[arg(long, env = "MISSIVE_WEBHOOK_HOST_CONCURRENCY", default_value_t = 8)]
    pub webhook_host_concurrency: usize,
}

/// Watch streams.
#[derive(Debug, Clone, clap::Args)]
pub struct Watch {
    /// Milliseconds between a watch stream's own checks of the store for updates it was not
    /// told of (a missed notification, another replica without NOTIFY).
    #[arg(long, env = "MISSIVE_WATCH_RECHECK_MS", default_value_t = 10_000)]
    pub watch_recheck_ms: u64,
}

/// How the server stops on SIGTERM or Ctrl-C: health checks turn "not serving" at once, watch
/// streams end with UNAVAILABLE naming where to resume, calls in flight finish.
#[derive(Debug, Clone, clap::Args)]
pub struct Shutdown {
    /// Seconds calls in flight get to finish after the signal; then the process exits anyway
    /// (with 0: whatever was acknowledged is committed).
    #[arg(long, env = "MISSIVE_SHUTDOWN_GRACE_SECS", default_value_t = 20)]
    pub shutdown_grace_secs: u64,
}

/// Player tokens: JWTs the game's own backend issues, whose `sub` is the player (docs/API.md,
/// "Players"). Without a key, the server accepts seat tokens only.
#[derive(Debug, Clone, clap::Args)]
pub struct Identity {
    /// URL of the JSON Web Key Set whose keys sign player tokens (RS*, PS*, ES256, ES384,
    /// EdDSA); fetched at the first token, kept, and fetched again periodically and when a
    /// token names a key it lacks.
    #[arg(long, env = "MISSIVE_JWT_JWKS_URL")]
    pub jwt_jwks_url: Option<String>,

    /// A secret of at least 32 bytes that signs player tokens with HS256, instead of a key set
    /// (for development, tests, and backends that share a secret with the server).
    #[arg(long, env = "MISSIVE_JWT_HS256_SECRET")]
    pub jwt_hs256_secret: Option<KeySecret>,

    /// The `iss` every player token must carry; any issuer when unset.
    #[arg(long, env = "MISSIVE_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,

    /// The `aud` every player token must carry; when unset the audience is not checked (set it
    /// when the issuer signs tokens for other services too).
    #[arg(long, env = "MISSIVE_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,

    /// Seconds the key set is kept before it is fetched again.
    #[arg(long, env = "MISSIVE_JWT_JWKS_REFRESH_SECS", default_value_t = 600)]
    pub jwt_jwks_refresh_secs: u64,

    /// Seconds of clock difference allowed when checking a player token's `exp` and `nbf`.
    #[arg(long, env = "MISSIVE_JWT_LEEWAY_SECS", default_value_t = 30)]
    pub jwt_leeway_secs: u64,
}

impl Identity {
    pub fn jwks_refresh(&self) -> Duration {
        Duration::from_secs(self.jwt_jwks_refresh_secs.max(1))
    }
}

/// A signing secret: never printed.
#[derive(Clone)]
pub struct KeySecret(String);

impl KeySecret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for KeySecret {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(KeySecret(s.to_owned()))
    }
}

impl std::fmt::Debug for KeySecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("\"***\"")
    }
}

impl Shutdown {
    pub fn grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_grace_secs)
    }
}

/// Calls from web pages: cross-origin requests (CORS), on both listeners (gRPC-Web included).
#[derive(Debug, Clone, clap::Args)]
pub struct Browsers {
    /// Origins whose pages may call the API (CORS), comma-separated, such as
    /// `https://play.example.com`; `*` allows any origin. Empty (the default): no CORS headers,
    /// so browsers only let pages of the server's own origin call it.
    #[arg(long, env = "MISSIVE_CORS_ORIGINS", value_delimiter = ',', value_parser = parse_origin)]
    pub cors_origins: Vec<Origin>,
}

/// Logging (the filter is `RUST_LOG`, default `info`).
#[derive(Debug, Clone, clap::Args)]
pub struct Logs {
    /// How log lines on stderr are written: `text` for people, `json` (one object a line, with
    /// the request's span fields) for log collectors.
    #[arg(long, env = "MISSIVE_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// See [`Logs::log_format`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// An origin allowed by CORS: `*`, or `scheme://host[:port]` as a browser sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Any,
    Exact(String),
}

fn parse_origin(s: &str) -> Result<Origin, String> {
    let s = s.trim();
    if s == "*" {
        return Ok(Origin::Any);
    }
    let host = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
        .ok_or_else(|| format!("{s:?} is not an origin: expected * or http(s)://host[:port]"))?;
    if host.is_empty() || host.contains(['/', '?', '#', ' ']) || !s.is_ascii() {
        return Err(format!(
            "{s:?} is not an origin: scheme://host[:port], with no path or trailing slash"
        ));
    }
    Ok(Origin::Exact(s.to_owned()))
}

/// An address or a network (`10.0.0.0/8`, `::1`) whose forwarding headers are believed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    addr: IpAddr,
    prefix: u8,
}

impl Network {
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl std::str::FromStr for Network {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (addr, prefix) = match s.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("{s:?} is not an address or a network (a.b.c.d/n)"))?;
        let addr = canonical(addr);
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{s:?}: the prefix length must be 0 to {max}"))?,
        };
        Ok(Network { addr, prefix })
    }
}

/// IPv4-mapped IPv6 addresses as the IPv4 address they are.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// A setting that may hold a credential (a database URL with a password): shown in `Debug`
/// with the password replaced by `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Secret(s.to_owned()))
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", redact(&self.0))
    }
}

impl Turns {
    pub fn poll(&self) -> Duration {
        Duration::from_millis(self.turn_poll_ms.max(1))
    }

    pub fn lease(&self) -> Duration {
        Duration::from_secs(self.turn_lease_secs.max(1))
    }

    /// How long an open match waits for a join; `None`: forever.
    pub fn open_match_expiry(&self) -> Option<Duration> {
        (self.open_match_expiry_secs > 0).then(|| Duration::from_secs(self.open_match_expiry_secs))
    }
}

impl Requests {
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout_secs.max(1))
    }

    pub fn header_read_timeout(&self) -> Duration {
        Duration::from_secs(self.header_read_timeout_secs.max(1))
    }

    pub fn body_read_timeout(&self) -> Duration {
        Duration::from_secs(self.body_read_timeout_secs.max(1))
    }
}

impl Watch {
    pub fn recheck(&self) -> Duration {
        Duration::from_millis(self.watch_recheck_ms.max(10))
    }
}

impl StoreConfig {
    /// How long an ended match waits to be archived; `None`: never.
    pub fn archive_after(&self) -> Option<Duration> {
        (self.archive_after_secs > 0).then(|| Duration::from_secs(self.archive_after_secs))
    }

    /// How often the archiver looks for ended matches to archive and live ones to pack;
    /// `None` if it has neither to do.
    pub fn archiver_poll(&self) -> Option<Duration> {
        let poll = self.archive_after().unwrap_or(Duration::MAX);
        (self.archive_after().is_some() || self.pack_live)
            .then(|| poll.min(Duration::from_secs(60)))
    }

    /// The store URL: the database URL if given, else SQLite in the data directory.
    pub fn url(&self) -> String {
        match &self.database_url {
            Some(url) if !url.expose().is_empty() => url.expose().to_owned(),
            _ => format!("sqlite://{}", self.data_dir.join("missive.db").display()),
        }
    }

    /// Whether the store is the embedded SQLite one in the data directory.
    pub fn embedded(&self) -> bool {
        self.database_url
            .as_ref()
            .is_none_or(|url| url.expose().is_empty())
    }

    /// The store's options.
    pub fn options(&self) -> StoreOptions {
        StoreOptions {
            snapshot_every: self.snapshot_every,
            max_connections: self.db_max_connections,
            acquire_timeout: Duration::from_millis(self.db_acquire_timeout_ms.max(1)),
            notify: self.notify,
            accept_newer_schema: true,
        }
    }
}

/// `scheme://user:password@host/…` → `scheme://user:***@host/…`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((auth, host)) = rest.rsplit_once('@') else {
        return url.to_owned();
    };
    match auth.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_the_database_password() {
        let config = Config::parse_from([
            "missive",
            "--database-url",
            "postgres://app:hunter2@db:5432/missive",
        ]);
        let shown = format!("{config:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(
            shown.contains("postgres://app:***@db:5432/missive"),
            "{shown}"
        );
    }

    #[test]
    fn cors_origins_are_none_by_default_and_a_comma_list_or_any() {
        let config = Config::parse_from(["missive"]);
        assert!(config.browsers.cors_origins.is_empty());
        let config = Config::parse_from([
            "missive",
            "--cors-origins",
            "https://play.example.com, http://localhost:5173",
        ]);
        assert_eq!(
            config.browsers.cors_origins,
            [
                Origin::Exact("https://play.example.com".into()),
                Origin::Exact("http://localhost:5173".into())
            ]
        );
        let any = Config::parse_from(["missive", "--cors-origins", "*"]);
        assert_eq!(any.browsers.cors_origins, [Origin::Any]);
        for bad in [
            "play.example.com",
            "https://play.example.com/",
            "https://",
            "ftp://x",
        ] {
            assert!(
                Config::try_parse_from(["missive", "--cors-origins", bad]).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn worker_threads_default_to_the_runtimes_own_and_are_never_zero() {
        assert_eq!(Config::parse_from(["missive"]).runtime.worker_threads, None);
        let config = Config::parse_from(["missive", "--worker-threads", "1"]);
        assert_eq!(config.runtime.worker_threads.map(|n| n.get()), Some(1));
        assert!(Config::try_parse_from(["missive", "--worker-threads", "0"]).is_err());
    }

    #[test]
    fn the_readme_lists_every_setting() {
        let readme = include_str!("../../../../README.md");
        let table = &readme[readme
            .find("## Configuration")
            .expect("a configuration section")..];
        for arg in <Config as clap::CommandFactory>::command().get_arguments() {
            let Some(long) = arg.get_long() else {
                continue;
            };
            if long == "help" || long == "version" {
                continue;
            }
            let env = arg
                .get_env()
                .expect("every setting has an environment variable");
            let row = format!("| `--{long}` | `{}` |", env.to_string_lossy());
            assert!(table.contains(&row), "README.md lacks the row {row}");
        }
    }

    #[test]
    fn limits_are_on_by_default_and_proxies_are_trusted_only_when_listed() {
        let config = Config::parse_from(["missive"]);
        let limits = &config.limits;
        assert!(limits.rate_limit_per_sec > 0 && limits.rate_limit_burst > 0);
        assert!(
            limits.create_limit_per_min > 0
                && limits.create_limit_per_min < limits.rate_limit_per_sec * 60
        );
        assert!(limits.max_open_matches > 0);
        assert!(limits.max_watches_per_client > 0 && limits.max_watches > 0);
        assert!(limits.trusted_proxies.is_empty());
        assert!(config.connections.keepalive_interval().is_some());
        let config = Config::parse_from(["missive", "--trusted-proxies", "10.0.0.0/8, ::1"]);
        let trusts = |ip: &str| {
            let ip = ip.parse().unwrap();
            config.limits.trusted_proxies.iter().any(|n| n.contains(ip))
        };
        assert!(trusts("10.2.3.4") && trusts("::1") && trusts("::ffff:10.9.9.9"));
        assert!(!trusts("192.0.2.1"));
        assert!(Config::try_parse_from(["missive", "--trusted-proxies", "10.0.0.0/40"]).is_err());
    }

    #[test]
    fn logs_are_text_unless_json_is_asked_for() {
        assert_eq!(
            Config::parse_from(["missive"]).logs.log_format,
            LogFormat::Text
        );
        let json = Config::parse_from(["missive", "--log-format", "json"]);
        assert_eq!(json.logs.log_format, LogFormat::Json);
        assert!(Config::try_parse_from(["missive", "--log-format", "xml"]).is_err());
    }

    #[test]
    fn the_store_defaults_are_the_stores_own() {
        // The declared defaults, not the environment (CI sets DATABASE_URL, for one).
        let command = <Config as clap::CommandFactory>::command();
        let default = |id: &str| {
            command
                .get_arguments()
                .find(|a| a.get_id() == id)
                .and_then(|a| a.get_default_values().first())
                .and_then(|v| v.to_str())
                .unwrap_or_else(|| panic!("{id} has a default"))
                .to_owned()
        };
        let store = StoreOptions::default();
        assert_eq!(default("snapshot_every"), store.snapshot_every.to_string());
        assert_eq!(
            default("db_max_connections"),
            store.max_connections.to_string()
        );
        assert_eq!(
            default("db_acquire_timeout_ms"),
            store.acquire_timeout.as_millis().to_string()
        );
        assert_eq!(default("notify"), store.notify.to_string());
        let config = Config::parse_from(["missive", "--database-url", "", "--data-dir", "d"]);
        assert!(config.store.embedded());
        assert_eq!(config.store.url(), "sqlite://d/missive.db");
    }
}
