//! Per-client limits on what the API may be asked: a rate of requests on every RPC, a stricter
//! rate of match creations (each bot seat asked for counts as one more), concurrent watch
//! streams per client and per server; and, in `service/create.rs`, a cap on a creator's
//! open matches. Over a limit the answer is RESOURCE_EXHAUSTED: HTTP 429 with
//! `Retry-After`, gRPC with a `google.rpc.RetryInfo` in the status details (`error.rs`).
//!
//! Clients are told apart by [`ClientKey`], derived once per request by [`client_key`]: the
//! verified player when a layer above this one put a [`Verified`] identity in the request's
//! extensions, else the peer's address (an IPv6 peer by its /64: one host is handed a whole
//! prefix), or the address a trusted proxy forwarded for it.
//!
//! [`RateLimitLayer`] sits on both transports, inside CORS, gRPC-Web and the request metrics,
//! outside the timeouts and the concurrency limits, so a refused request takes no slot. It
//! limits the API only (`/v1/…` over HTTP, `missive.v1.Missive` over gRPC): health checks,
//! `/metrics`, reflection, the OpenAPI document and the web client's files are never limited.
//! It hands each API request a [`Client`] for the checks the handlers make (creations, watch
//! streams). The rates are counted by `governor` (GCRA), one state per key; the keys of clients
//! that went quiet are dropped by [`Limiter::housekeeping`].

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::http::{HeaderMap, Request, Response};
use futures::future::{BoxFuture, FutureExt};
use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tower::{Layer, Service, ServiceExt};

use crate::config::{self, Network};
use crate::error::{ApiError, retry_secs};

/// A player identity verified by a layer in front of this one (a signed token's subject). When
/// present in a request's extensions, the request is counted against that player wherever it
/// comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified(pub String);

/// Who a request is counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClientKey {
    /// A verified player.
    Player(String),
    /// A network address: an IPv4 address, or an IPv6 address with its last 64 bits zeroed.
    Addr(IpAddr),
}

impl ClientKey {
    /// The key of a peer at `ip`: IPv4 as is (IPv4-mapped IPv6 too), IPv6 by its /64.
    pub fn addr(ip: IpAddr) -> ClientKey {
        match ip {
            IpAddr::V4(v4) => ClientKey::Addr(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => ClientKey::Addr(IpAddr::V4(v4)),
                None => {
                    let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                    ClientKey::Addr(IpAddr::V6(Ipv6Addr::from(prefix)))
                }
            },
        }
    }
}

/// `player:<id>` or `addr:<address>`: how a creator is stored with its matches.
impl std::fmt::Display for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientKey::Player(id) => write!(f, "player:{id}"),
            ClientKey::Addr(ip) => write!(f, "addr:{ip}"),
        }
    }
}

/// The proxies whose `Forwarded` and `X-Forwarded-For` headers are believed. Empty (the
/// default): the headers are ignored and every client is its peer address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(pub Vec<Network>);

impl TrustedProxies {
    pub fn trusts(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|n| n.contains(ip))
    }

    /// The client a chain of proxies forwarded for, from the peer `peer`: walking the chain
    /// from the nearest hop back, the first address not of a trusted proxy. The peer itself
    /// when it is not trusted or the headers name no one usable.
    fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let chain = forwarded_for(headers);
        let mut client = peer;
        for hop in chain.iter().rev() {
            client = *hop;
            if !self.trusts(*hop) {
                break;
            }
        }
        client
    }
}

/// The addresses of the `Forwarded` header's `for=` parameters (RFC 7239), or else of
/// `X-Forwarded-For`, in the order the headers list them (the client first). Obfuscated or
/// unknown identifiers end the chain there: nothing before them can be believed.
fn forwarded_for(headers: &HeaderMap) -> Vec<IpAddr> {
    let forwarded: Vec<&str> = headers
        .get_all("forwarded")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|element| {
            element.split(';').find_map(|pair| {
                let (name, value) = pair.trim().split_once('=')?;
                name.trim()
                    .eq_ignore_ascii_case("for")
                    .then_some(value.trim())
            })
        })
        .collect();
    let hops: Vec<Option<IpAddr>> = if !forwarded.is_empty() {
        forwarded.into_iter().map(forwarded_node).collect()
    } else {
        headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|hop| hop.trim().parse().ok())
            .collect()
    };
    // Keep the hops after the last unusable one: the chain is read from the nearest end.
    let start = hops.iter().rposition(Option::is_none).map_or(0, |i| i + 1);
    hops[start..].iter().flatten().copied().collect()
}

/// A `Forwarded` node: `192.0.2.1`, `"192.0.2.1:4711"`, `"[2001:db8::1]:4711"`.
fn forwarded_node(value: &str) -> Option<IpAddr> {
    let value = value.trim_matches('"');
    if let Some(rest) = value.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    if let Ok(ip) = value.parse() {
        return Some(ip);
    }
    value.parse::<SocketAddr>().ok().map(|s| s.ip())
}

/// The peer address of a request: axum's `ConnectInfo` (the HTTP listener) or tonic's
/// `TcpConnectInfo` (the gRPC listener).
fn peer<B>(request: &Request<B>) -> Option<IpAddr> {
    let extensions = request.extensions();
    if let Some(info) = extensions.get::<axum::extract::ConnectInfo<SocketAddr>>() {
        return Some(info.0.ip());
    }
    extensions
        .get::<tonic::transport::server::TcpConnectInfo>()
        .and_then(|info| info.remote_addr())
        .map(|addr| addr.ip())
}

/// Who `request` is counted against: its [`Verified`] player, else the address of its peer or,
/// from a trusted proxy, of the client the proxy forwarded for. A request with neither (not
/// served from a socket) counts against the unspecified address, all such requests together.
pub fn client_key<B>(request: &Request<B>, trusted: &TrustedProxies) -> ClientKey {
    if let Some(Verified(player)) = request.extensions().get::<Verified>() {
        return ClientKey::Player(player.clone());
    }
    let peer = peer(request).unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
    ClientKey::addr(trusted.client(peer, request.headers()))
}

/// The limits, as configured (`config.rs`, group `Limits`). A rate or cap of 0 is no limit.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// API requests a client may make per second, on average…
    pub requests_per_sec: u32,
    /// …and at once after a quiet spell.
    pub request_burst: u32,
    /// Match creations a client may make per minute (one bot seat counts as one creation)…
    pub creates_per_min: u32,
    /// …and at once.
    pub create_burst: u32,
    /// Open matches (waiting for players) one creator may have.
    pub max_open_matches: u32,
    /// Watch streams one client may hold open on this server.
    pub max_watches_per_client: u32,
    /// Watch streams this server holds open, all clients together.
    pub max_watches: u32,
    pub trusted_proxies: TrustedProxies,
}

/// The limiter's settings, from the server's configuration.
impl From<&config::Limits> for Settings {
    fn from(limits: &config::Limits) -> Self {
        Settings {
            requests_per_sec: limits.rate_limit_per_sec,
            request_burst: limits.rate_limit_burst,
            creates_per_min: limits.create_limit_per_min,
            create_burst: limits.create_limit_burst,
            max_open_matches: limits.max_open_matches,
            max_watches_per_client: limits.max_watches_per_client,
            max_watches: limits.max_watches,
            trusted_proxies: TrustedProxies(limits.trusted_proxies.clone()),
        }
    }
}

/// How long a refused watch is told to wait: streams end when matches do or clients leave.
const WATCH_RETRY: Duration = Duration::from_secs(5);
/// How long a creation refused for too many open matches is told to wait.
pub const OPEN_MATCHES_RETRY: Duration = Duration::from_secs(60);

/// The limits' state: the rate counters per key and the open watch streams.
#[derive(Debug)]
pub struct Limiter {
    settings: Settings,
    requests: Option<DefaultKeyedRateLimiter<ClientKey>>,
    creates: Option<DefaultKeyedRateLimiter<ClientKey>>,
    watches: Mutex<Watches>,
}

#[derive(Debug, Default)]
struct Watches {
    total: u32,
    by_client: HashMap<ClientKey, u32>,
}

/// A refusal for going over `limit`, telling the client when to try again.
fn exhausted(message: String, retry_after: Duration) -> ApiError {
    ApiError::Exhausted {
        message,
        retry_after,
    }
}

fn quota(per: Duration, count: u32, burst: u32) -> Option<Quota> {
    let count = NonZeroU32::new(count)?;
    let period = per / count.get();
    let burst = NonZeroU32::new(burst.max(1))?;
    Quota::with_period(period.max(Duration::from_nanos(1))).map(|q| q.allow_burst(burst))
}

impl Limiter {
    pub fn new(settings: Settings) -> Arc<Limiter> {
        let requests = quota(
            Duration::from_secs(1),
            settings.requests_per_sec,
            settings.request_burst,
        )
        .map(RateLimiter::keyed);
        let creates = quota(
            Duration::from_secs(60),
            settings.creates_per_min,
            settings.create_burst,
        )
        .map(RateLimiter::keyed);
        Arc::new(Limiter {
            settings,
            requests,
            creates,
            watches: Mutex::new(Watches::default()),
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Counts one API request of `key`'s.
    pub fn check_request(&self, key: &ClientKey) -> Result<(), ApiError> {
        let Some(limiter) = &self.requests else {
            return Ok(());
        };
        limiter.check_key(key).map_err(|not_until| {
            let wait = not_until.wait_time_from(limiter.clock().now());
            crate::metrics::record_limited("requests");
            exhausted(
                format!(
                    "rate limit: more than {} requests a second (bursts of {}) from this client \
                     (MISSIVE_RATE_LIMIT_PER_SEC); retry after {}s",
                    self.settings.requests_per_sec,
                    self.settings.request_burst.max(1),
                    retry_secs(wait)
                ),
                wait,
            )
        })
    }

    /// Counts a creation of `key`'s asking for `bots` bot seats: 1 + `bots` creations, at most
    /// a whole burst (a request that asks for more is still possible, as a burst's worth).
    pub fn check_create(&self, key: &ClientKey, bots: usize) -> Result<(), ApiError> {
        let Some(limiter) = &self.creates else {
            return Ok(());
        };
        let burst = self.settings.create_burst.max(1);
        let cost = u32::try_from(bots)
            .unwrap_or(u32::MAX)
            .saturating_add(1)
            .min(burst);
        let cost = NonZeroU32::new(cost).unwrap_or(NonZeroU32::MIN);
        let refused = match limiter.check_key_n(key, cost) {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(not_until)) => not_until.wait_time_from(limiter.clock().now()),
            // Not reachable with the cost capped at the burst; refused the same way.
            Err(_) => Duration::from_secs(60),
        };
        crate::metrics::record_limited("creates");
        Err(exhausted(
            format!(
                "creation rate limit: more than {} match creations a minute (bursts of {burst}) \
                 from this client, each bot seat counting as one more (MISSIVE_CREATE_LIMIT_PER_MIN); \
                 this one counts {cost}; retry after {}s",
                self.settings.creates_per_min,
                retry_secs(refused)
            ),
            refused,
        ))
    }

    /// The refusal of a creation by a creator with `max_open_matches` open matches: it says
    /// what the player can do (cancel one, or wait for one to fill or, when open matches
    /// expire after `expiry`, to expire), not which setting to change.
    pub fn too_many_open_matches(&self, expiry: Option<Duration>) -> ApiError {
        crate::metrics::record_limited("open_matches");
        let wait = match expiry {
            Some(expiry) => format!(
                "or wait until one fills or expires (after {} without a join)",
                in_words(expiry)
            ),
            None => "or wait until one fills".to_owned(),
        };
        exhausted(
            format!(
                "open match cap: you already have {} matches waiting for players; cancel one \
                 (CancelMatch, with the cancel token its creation returned), {wait}",
                self.settings.max_open_matches
            ),
            OPEN_MATCHES_RETRY,
        )
    }

    /// A place for one more watch stream of `key`'s, held until the permit is dropped.
    pub fn open_watch(self: &Arc<Self>, key: &ClientKey) -> Result<WatchPermit, ApiError> {
        let per_client = self.settings.max_watches_per_client;
        let total = self.settings.max_watches;
        let mut watches = self.watches.lock().unwrap_or_else(|e| e.into_inner());
        if total > 0 && watches.total >= total {
            drop(watches);
            crate::metrics::record_limited("watches");
            return Err(exhausted(
                format!(
                    "watch cap: this server holds its maximum of {total} watch streams \
                     (MISSIVE_MAX_WATCHES); retry after {}s, or on another server",
                    WATCH_RETRY.as_secs()
                ),
                WATCH_RETRY,
            ));
        }
        let held = watches.by_client.get(key).copied().unwrap_or(0);
        if per_client > 0 && held >= per_client {
            drop(watches);
            crate::metrics::record_limited("client_watches");
            return Err(exhausted(
                format!(
                    "watch cap: this client already holds {per_client} watch streams \
                     (MISSIVE_MAX_WATCHES_PER_CLIENT); close one first"
                ),
                WATCH_RETRY,
            ));
        }
        watches.total += 1;
        *watches.by_client.entry(key.clone()).or_insert(0) += 1;
        Ok(WatchPermit {
            limiter: self.clone(),
            key: key.clone(),
        })
    }

    /// Forgets the rate state of clients that have been quiet long enough to be back to a full
    /// burst (they would be counted the same from scratch), and gives back the memory.
    pub fn housekeeping(&self) {
        for limiter in [&self.requests, &self.creates].into_iter().flatten() {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }

    /// Clients with rate state, for tests and metrics.
    pub fn tracked_clients(&self) -> usize {
        [&self.requests, &self.creates]
            .into_iter()
            .flatten()
            .map(|l| l.len())
            .sum()
    }
}

/// A duration in the largest whole unit that states it exactly: `7 days`, `90 minutes`.
fn in_words(duration: Duration) -> String {
    let secs = duration.as_secs();
    let (n, unit) = match secs {
        s if s > 0 && s % 86_400 == 0 => (s / 86_400, "day"),
        s if s > 0 && s % 3_600 == 0 => (s / 3_600, "hour"),
        s if s > 0 && s % 60 == 0 => (s / 60, "minute"),
        s => (s, "second"),
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// One open watch stream's place; dropping it frees the place.
#[derive(Debug)]
pub struct WatchPermit {
    limiter: Arc<Limiter>,
    key: ClientKey,
}

impl Drop for WatchPermit {
    fn drop(&mut self) {
        let mut watches = self
            .limiter
            .watches
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        watches.total = watches.total.saturating_sub(1);
        if let Some(held) = watches.by_client.get_mut(&self.key) {
            *held -= 1;
            if *held == 0 {
                watches.by_client.remove(&self.key);
            }
        }
    }
}

/// The client of an API request and the limits it is held to, for the handlers' own checks.
#[derive(Debug, Clone)]
pub struct Client {
    pub key: ClientKey,
    pub limiter: Arc<Limiter>,
}

impl Client {
    /// A place for one more watch stream.
    pub fn open_watch(&self) -> Result<WatchPermit, ApiError> {
        self.limiter.open_watch(&self.key)
    }
}

/// Which requests a [`RateLimitLayer`] limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The HTTP API: paths under `/v1/`.
    Http,
    /// The `missive.v1.Missive` gRPC service.
    Grpc,
}

impl Scope {
    fn limits(self, path: &str) -> bool {
        match self {
            Scope::Http => path.starts_with("/v1/"),
            Scope::Grpc => path.starts_with("/missive.v1.Missive/"),
        }
    }
}

/// The tower layer of both transports: keys each API request, refuses it over the request
/// rate with `refuse`'s response, and otherwise hands it on with its [`Client`].
pub struct RateLimitLayer<B> {
    limiter: Arc<Limiter>,
    scope: Scope,
    refuse: fn(ApiError) -> Response<B>,
}

impl<B> Clone for RateLimitLayer<B> {
    fn clone(&self) -> Self {
        RateLimitLayer {
            limiter: self.limiter.clone(),
            scope: self.scope,
            refuse: self.refuse,
        }
    }
}

impl<B> std::fmt::Debug for RateLimitLayer<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimitLayer")
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl<B> RateLimitLayer<B> {
    pub fn new(limiter: Arc<Limiter>, scope: Scope, refuse: fn(ApiError) -> Response<B>) -> Self {
        RateLimitLayer {
            limiter,
            scope,
            refuse,
        }
    }
}

impl<S, B> Layer<S> for RateLimitLayer<B> {
    type Service = RateLimit<S, B>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimit {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`RateLimitLayer`] wraps around another.
pub struct RateLimit<S, B> {
    inner: S,
    layer: RateLimitLayer<B>,
}

impl<S: Clone, B> Clone for RateLimit<S, B> {
    fn clone(&self) -> Self {
        RateLimit {
            inner: self.inner.clone(),
            layer: self.layer.clone(),
        }
    }
}

impl<S, B> std::fmt::Debug for RateLimit<S, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimit")
            .field("layer", &self.layer)
            .finish_non_exhaustive()
    }
}

impl<S, ReqB, B> Service<Request<ReqB>> for RateLimit<S, B>
where
    S: Service<Request<ReqB>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ReqB: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Response<B>, S::Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // The inner service is readied per request, once it is let through: a refused request
        // never waits for (or holds) a concurrency slot.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request<ReqB>) -> Self::Future {
        if self.layer.scope.limits(request.uri().path()) {
            let limiter = &self.layer.limiter;
            let key = client_key(&request, &limiter.settings.trusted_proxies);
            if let Err(refused) = limiter.check_request(&key) {
                let response = (self.layer.refuse)(refused);
                return futures::future::ready(Ok(response)).boxed();
            }
            request.extensions_mut().insert(Client {
                key,
                limiter: limiter.clone(),
            });
        }
        self.inner.clone().oneshot(request).boxed()
    }
}

/// Keeps the limiter's state bounded: every `every`, forget quiet clients.
pub async fn housekeeping(limiter: Arc<Limiter>, every: Duration) -> Infallible {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        limiter.housekeeping();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(peer: &str, headers: &[(&str, &str)]) -> Request<()> {
        let mut request = Request::new(());
        let peer: SocketAddr = peer.parse().unwrap();
        request
            .extensions_mut()
            .insert(axum::extract::ConnectInfo(peer));
        for (name, value) in headers {
            request.headers_mut().append(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        request
    }

    fn trusted(list: &[&str]) -> TrustedProxies {
        TrustedProxies(list.iter().map(|n| n.parse().unwrap()).collect())
    }

    fn addr(ip: &str) -> ClientKey {
        ClientKey::Addr(ip.parse().unwrap())
    }

    #[test]
    fn a_verified_player_is_the_key_wherever_it_comes_from() {
        let mut r = request("198.51.100.7:5000", &[("x-forwarded-for", "192.0.2.1")]);
        r.extensions_mut().insert(Verified("ana".into()));
        assert_eq!(
            client_key(&r, &trusted(&["0.0.0.0/0"])),
            ClientKey::Player("ana".into())
        );
        assert_eq!(client_key(&r, &trusted(&[])).to_string(), "player:ana");
    }

    #[test]
    fn forwarding_headers_count_only_from_a_trusted_peer() {
        let headers = [("x-forwarded-for", "192.0.2.1, 10.0.0.5")];
        let r = request("198.51.100.7:5000", &headers);
        assert_eq!(client_key(&r, &trusted(&[])), addr("198.51.100.7"));
        assert_eq!(
            client_key(&r, &trusted(&["10.0.0.0/8"])),
            addr("198.51.100.7"),
            "the peer is no trusted proxy"
        );
        let r = request("10.0.0.9:5000", &headers);
        assert_eq!(client_key(&r, &trusted(&[])), addr("10.0.0.9"));
        // 10.0.0.5 is another trusted hop; the client is the first untrusted one from the end.
        assert_eq!(client_key(&r, &trusted(&["10.0.0.0/8"])), addr("192.0.2.1"));
        // A forged first entry in front of a real client does not move the key.
        let r = request(
            "10.0.0.9:5000",
            &[("x-forwarded-for", "203.0.113.66, 192.0.2.1")],
        );
        assert_eq!(client_key(&r, &trusted(&["10.0.0.0/8"])), addr("192.0.2.1"));
    }

    #[test]
    fn the_forwarded_header_is_read_before_x_forwarded_for() {
        let r = request(
            "127.0.0.1:5000",
            &[
                (
                    "forwarded",
                    "for=\"[2001:db8:cafe::17]:4711\";proto=https, for=127.0.0.2",
                ),
                ("x-forwarded-for", "192.0.2.1"),
            ],
        );
        assert_eq!(
            client_key(&r, &trusted(&["127.0.0.0/8"])),
            addr("2001:db8:cafe::"),
            "an IPv6 client by its /64"
        );
        // An obfuscated hop ends what can be believed: the hop after it is the client.
        let r = request(
            "127.0.0.1:5000",
            &[("forwarded", "for=192.0.2.1, for=_hidden, for=192.0.2.60")],
        );
        assert_eq!(client_key(&r, &trusted(&["127.0.0.1"])), addr("192.0.2.60"));
        let r = request("127.0.0.1:5000", &[("forwarded", "for=unknown")]);
        assert_eq!(client_key(&r, &trusted(&["127.0.0.1"])), addr("127.0.0.1"));
    }

    #[test]
    fn networks_parse_and_match() {
        let net: Network = "10.1.0.0/16".parse().unwrap();
        assert!(net.contains("10.1.200.3".parse().unwrap()));
        assert!(net.contains("::ffff:10.1.0.1".parse().unwrap()));
        assert!(!net.contains("10.2.0.1".parse().unwrap()));
        let all: Network = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("203.0.113.1".parse().unwrap()));
        let one: Network = "::1".parse().unwrap();
        assert!(one.contains("::1".parse().unwrap()));
        assert!(!one.contains("127.0.0.1".parse().unwrap()));
        for bad in ["10.0.0.0/33", "nope", "::/129", ""] {
            assert!(bad.parse::<Network>().is_err(), "{bad}");
        }
    }

    fn settings() -> Settings {
        Settings {
            requests_per_sec: 1,
            request_burst: 3,
            creates_per_min: 1,
            create_burst: 4,
            max_open_matches: 0,
            max_watches_per_client: 2,
            max_watches: 3,
            trusted_proxies: TrustedProxies::default(),
        }
    }

    #[test]
    fn a_client_over_its_rate_waits_and_others_do_not() {
        let limiter = Limiter::new(settings());
        let (a, b) = (addr("192.0.2.1"), addr("192.0.2.2"));
        for _ in 0..3 {
            limiter.check_request(&a).unwrap();
        }
        let Err(ApiError::Exhausted {
            message,
            retry_after,
        }) = limiter.check_request(&a)
        else {
            panic!("the fourth request in a second is over the burst");
        };
        assert!(message.contains("rate limit"), "{message}");
        assert!(
            retry_after > Duration::ZERO && retry_after <= Duration::from_secs(1),
            "{retry_after:?}"
        );
        limiter.check_request(&b).unwrap();
        assert!(limiter.tracked_clients() >= 2);
    }

    #[test]
    fn bot_seats_make_a_creation_cost_more() {
        let limiter = Limiter::new(settings());
        let key = addr("192.0.2.1");
        // A burst of 4: one creation with three bots takes it all.
        limiter.check_create(&key, 3).unwrap();
        assert!(limiter.check_create(&key, 0).is_err());
        let other = addr("192.0.2.2");
        limiter.check_create(&other, 0).unwrap();
        limiter.check_create(&other, 1).unwrap();
        limiter.check_create(&other, 0).unwrap();
        assert!(limiter.check_create(&other, 0).is_err());
        // More bots than a burst costs a burst, not an impossible request.
        limiter.check_create(&addr("192.0.2.3"), 100).unwrap();
    }

    #[test]
    fn zero_is_no_limit() {
        let limiter = Limiter::new(Settings::default());
        let key = addr("192.0.2.1");
        let mut permits = Vec::new();
        for _ in 0..1000 {
            limiter.check_request(&key).unwrap();
            limiter.check_create(&key, 5).unwrap();
            permits.push(limiter.open_watch(&key).unwrap());
        }
    }

    #[test]
    fn watch_permits_are_capped_per_client_and_per_server_and_given_back() {
        let limiter = Limiter::new(settings());
        let (a, b) = (addr("192.0.2.1"), addr("192.0.2.2"));
        let first = limiter.open_watch(&a).unwrap();
        let _second = limiter.open_watch(&a).unwrap();
        let refused = limiter.open_watch(&a).unwrap_err().to_string();
        assert!(refused.contains("MAX_WATCHES_PER_CLIENT"), "{refused}");
        let _third = limiter.open_watch(&b).unwrap();
        let refused = limiter.open_watch(&b).unwrap_err().to_string();
        assert!(refused.contains("MISSIVE_MAX_WATCHES)"), "{refused}");
        drop(first);
        let _again = limiter.open_watch(&b).unwrap();
        assert!(limiter.open_watch(&a).is_err(), "the server is full again");
    }

    #[test]
    fn quiet_clients_are_forgotten() {
        let limiter = Limiter::new(Settings {
            requests_per_sec: 1_000_000,
            request_burst: 1,
            ..settings()
        });
        for n in 0..100u8 {
            limiter
                .check_request(&addr(&format!("192.0.2.{n}")))
                .unwrap();
        }
        assert_eq!(limiter.tracked_clients(), 100);
        std::thread::sleep(Duration::from_millis(5));
        limiter.housekeeping();
        assert_eq!(limiter.tracked_clients(), 0);
    }

    #[test]
    fn the_open_match_refusal_says_what_to_do_and_names_no_setting() {
        let limiter = Limiter::new(Settings {
            max_open_matches: 20,
            ..Settings::default()
        });
        let week = limiter
            .too_many_open_matches(Some(Duration::from_secs(7 * 86_400)))
            .to_string();
        assert!(week.contains("20 matches waiting for players"), "{week}");
        assert!(week.contains("CancelMatch"), "{week}");
        assert!(week.contains("expires (after 7 days"), "{week}");
        let never = limiter.too_many_open_matches(None).to_string();
        assert!(!never.contains("expire"), "{never}");
        for message in [week, never] {
            assert!(!message.contains("MISSIVE_"), "{message}");
            assert!(!message.contains("--"), "{message}");
        }
        assert_eq!(in_words(Duration::from_secs(90 * 60)), "90 minutes");
        assert_eq!(in_words(Duration::from_secs(1)), "1 second");
        assert_eq!(in_words(Duration::from_secs(3_600)), "1 hour");
    }

    #[test]
    fn retry_after_rounds_up() {
        assert_eq!(retry_secs(Duration::ZERO), 1);
        assert_eq!(retry_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_secs(Duration::from_millis(1001)), 2);
        assert_eq!(retry_secs(Duration::from_secs(60)), 60);
    }
}
