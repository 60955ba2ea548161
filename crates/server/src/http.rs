//! The HTTP/JSON transport under `/v1`, with bodies in the canonical proto3 JSON mapping of
//! the same messages as gRPC, the watch stream as Server-Sent Events, and the operational
//! endpoints: `/healthz`, `/metrics`, `/openapi.json`; and the web client at `/` (`web.rs`).
//!
//! Routes: the table in `routes.rs` (path parameters fill the message's `matchId`; a body may
//! repeat it but not differ).

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{
    ConnectInfo, DefaultBodyLimit, Extension, FromRequest, MatchedPath, Path, Query, Request, State,
};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter, get, on};
use futures::Stream;
use missive_proto::v1 as pb;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::net::TcpListener;
use tokio_stream::StreamExt;
use tower::ServiceBuilder;

use crate::auth;
use crate::error::{ApiError, ApiResult};
use crate::ratelimit::{self, Client, Limiter};
use crate::service::{Caller, Service};
use crate::{Config, metrics, openapi, routes};

type AppState = Arc<Service>;

/// A request that writes, for `caller`: its work runs to its end in a task of its own, and it
/// is answered within the store's bound ([`Service::bounded_write`]).
async fn writes<Req, Res, F>(
    service: AppState,
    caller: Caller,
    request: Req,
    work: impl FnOnce(Arc<Service>, Caller, Req) -> F + Send + 'static,
) -> ApiResult<Reply<Res>>
where
    Req: Send + 'static,
    Res: Send + 'static,
    F: Future<Output = ApiResult<Res>> + Send + 'static,
{
    let answer = service
        .bounded_write(move |service| work(service, caller, request))
        .await?;
    Ok(Reply(answer))
}

/// A request body in the proto3 JSON mapping. An empty body is the empty message.
#[derive(Debug)]
struct ProtoJson<T>(T);

impl<T: DeserializeOwned + Default, S: Send + Sync> FromRequest<S> for ProtoJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::TooLarge("the request body is too large".into())
            } else {
                ApiError::invalid(format!("unreadable body: {}", rejection.body_text()))
            }
        })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(ProtoJson(T::default()));
        }
        serde_json::from_slice(&bytes)
            .map(ProtoJson)
            .map_err(|e| ApiError::invalid(format!("malformed JSON body: {e}")))
    }
}

/// A response in the proto3 JSON mapping.
struct Reply<T>(T);

impl<T: Serialize> IntoResponse for Reply<T> {
    fn into_response(self) -> Response {
        match serde_json::to_vec(&self.0) {
            Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
            Err(e) => ApiError::internal(format!("serialising a response: {e}")).into_response(),
        }
    }
}

/// The caller, from the `authorization` header.
impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        auth::caller(
            parts
                .headers
                .get(header::AUTHORIZATION)
                .map(|v| v.as_bytes()),
            parts.extensions.get::<crate::identity::Player>(),
        )
    }
}

/// Puts the path's match id in the message, refusing a body that names another match.
fn same_match(path: String, body: &mut String) -> ApiResult<()> {
    if !body.is_empty() && *body != path {
        return Err(ApiError::invalid(
            "the body's matchId differs from the path's",
        ));
    }
    *body = path;
    Ok(())
}

fn query_seat(query: &HashMap<String, String>) -> ApiResult<Option<u32>> {
    query
        .get("seat")
        .map(|s| {
            s.parse()
                .map_err(|_| ApiError::invalid(format!("seat {s:?} is not a number")))
        })
        .transpose()
}

async fn create_match(
    State(service): State<AppState>,
    client: Option<Extension<Client>>,
    ProtoJson(request): ProtoJson<pb::CreateMatchRequest>,
) -> ApiResult<impl IntoResponse> {
    let client = client.map(|Extension(client)| client);
    Ok((
        StatusCode::CREATED,
        Reply(
            service
                .bounded_write(
                    move |s| async move { s.create_match_by(client.as_ref(), request).await },
                )
                .await?,
        ),
    ))
}

async fn list_matches(
    State(service): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Reply<pb::ListMatchesResponse>> {
    let request = pb::ListMatchesRequest {
        status: query_status(&query)?,
        kind: query.get("kind").cloned().unwrap_or_default(),
        limit: query_limit(&query)?,
        page_token: query.get("pageToken").cloned().unwrap_or_default(),
    };
    Ok(Reply(service.bounded(service.list_matches(request)).await?))
}

/// The `status` query parameter: a MatchStatus name or number; 0 when absent.
fn query_status(query: &HashMap<String, String>) -> ApiResult<i32> {
    Ok(match query.get("status") {
        None => 0,
        Some(s) => match pb::MatchStatus::from_str_name(s) {
            Some(status) => status as i32,
            None => s
                .parse()
                .map_err(|_| ApiError::invalid(format!("unknown status {s:?}")))?,
        },
    })
}

/// The `limit` query parameter; 0 (the default) when absent.
fn query_limit(query: &HashMap<String, String>) -> ApiResult<u32> {
    query.get("limit").map_or(Ok(0), |l| {
        l.parse()
            .map_err(|_| ApiError::invalid(format!("limit {l:?} is not a number")))
    })
}

/// The catalogue is the same for every caller and changes only with the server's version:
/// caches may keep it for an hour.
async fn list_games(State(service): State<AppState>) -> impl IntoResponse {
    (
        [(header::CACHE_CONTROL, "public, max-age=3600")],
        Reply(service.list_games(pb::ListGamesRequest {})),
    )
}

async fn get_match(
    State(service): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Reply<pb::GetMatchResponse>> {
    Ok(Reply(
        service
            .bounded(service.get_match(pb::GetMatchRequest { match_id: id }))
            .await?,
    ))
}

async fn get_audit_keys(
    State(service): State<AppState>,
) -> ApiResult<Reply<pb::GetAuditKeysResponse>> {
    Ok(Reply(
        service
            .bounded(service.get_audit_keys(pb::GetAuditKeysRequest {}))
            .await?,
    ))
}

async fn join_match(
    State(service): State<AppState>,
    Path(id): Path<String>,
    caller: Caller,
    ProtoJson(mut request): ProtoJson<pb::JoinMatchRequest>,
) -> ApiResult<Reply<pb::JoinMatchResponse>> {
    same_match(id, &mut request.match_id)?;
    writes(service, caller, request, |s, caller, req| async move {
        s.join_match(&caller, req).await
    })
    .await
}

async fn rematch(
    State(service): State<AppState>,
    Path(id): Path<String>,
    caller: Caller,
    ProtoJson(mut request): ProtoJson<pb::RematchRequest>,
) -> ApiResult<Reply<pb::RematchResponse>> {
    same_match(id, &mut request.match_id)?;
    writes(service, caller, request, |s, caller, req| async move {
        s.rematch(&caller, req).await
    })
    .await
}

async fn list_my_matches(
    State(service): State<AppState>,
    caller: Caller,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Reply<pb::ListMyMatchesResponse>> {
    let request = pb::ListMyMatchesRequest {
        status: query_status(&query)?,
        limit: query_limit(&query)?,
        page_token: query.get("pageToken").cloned().unwrap_or_default(),
    };
    Ok(Reply(
        service
            .bounded(service.list_my_matches(&caller, request))
            .await?,
    ))
}

async fn act(
    State(service): State<AppState>,
    Path(id): Path<String>,
    caller: Caller,
    ProtoJson(mut request): ProtoJson<pb::ActRequest>,
) -> ApiResult<Reply<pb::ActResponse>> {
    same_match(id, &mut request.match_id)?;
    writes(service, caller, request, |s, caller, req| async move {
        s.act(&caller, req).await
    })
    .await
}

async fn get_view(
    State(service): State<AppState>,
    Path(id): Path<String>,
    caller: Caller,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Reply<pb::GetViewResponse>> {
    let request = pb::GetViewRequest {
        match_id: id,
        seat: query_seat(&query)?,
    };
    Ok(Reply(
        service.bounded(service.get_view(&caller, request)).await?,
    ))
}

async fn get_history(
    State(service): State<AppState>,
    Path(id): Path<String>,
    caller: Caller,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<impl IntoResponse> {
    let request = pb::GetHistoryRequest {
        match_id: id,
        seat: query_seat(&query)?,
    };
    let history = service
        .bounded(service.get_history(&caller, request))
        .await?;
    Ok((
        [(
            crate::audit::FORMAT_HEADER,
            crate::audit::FORMAT.to_string(),
        )],
        Reply(history),
    ))
}

async fn leave_match(
    State(service): State<AppState>,
    Path(id): Path<String>,
    caller: Caller,
    ProtoJson(mut request): ProtoJson<pb::LeaveMatchRequest>,
) -> ApiResult<Reply<pb::LeaveMatchResponse>> {
    same_match(id, &mut request.match_id)?;
    writes(service, caller, request, |s, caller, req| async move {
        s.leave_match(&caller, req).await
    })
    .await
}

async fn cancel_match(
    State(service): State<AppState>,
    Path(id): Path<String>,
    caller: Caller,
    ProtoJson(mut request): ProtoJson<pb::CancelMatchRequest>,
) -> ApiResult<Reply<pb::CancelMatchResponse>> {
    same_match(id, &mut request.match_id)?;
    writes(service, caller, request, |s, caller, req| async move {
        s.cancel_match(&caller, req).await
    })
    .await
}

async fn set_webhook(
    State(service): State<AppState>,
    Path(id): Path<String>,
    caller: Caller,
    ProtoJson(mut request): ProtoJson<pb::SetWebhookRequest>,
) -> ApiResult<Reply<pb::SetWebhookResponse>> {
    same_match(id, &mut request.match_id)?;
    Ok(Reply(
        service
            .bounded(service.set_webhook(&caller, request))
            .await?,
    ))
}

async fn remove_webhook(
    State(service): State<AppState>,
    Path(id): Path<String>,
    caller: Caller,
) -> ApiResult<Reply<pb::SetWebhookResponse>> {
    let request = pb::SetWebhookRequest {
        match_id: id,
        ..Default::default()
    };
    Ok(Reply(
        service
            .bounded(service.set_webhook(&caller, request))
            .await?,
    ))
}

async fn get_webhook(
    State(service): State<AppState>,
    Path(id): Path<String>,
    caller: Caller,
) -> ApiResult<Reply<pb::GetWebhookResponse>> {
    let request = pb::GetWebhookRequest { match_id: id };
    Ok(Reply(
        service
            .bounded(service.get_webhook(&caller, request))
            .await?,
    ))
}

/// Each update is an SSE event `update` whose id is the version and whose data is a
/// WatchMatchResponse; an error mid-stream is an `error` event with the error body, and ends it.
async fn watch_match(
    State(service): State<AppState>,
    Path(id): Path<String>,
    caller: Caller,
    client: Option<Extension<Client>>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let after_version = match query.get("afterVersion") {
        None => 0,
        Some(v) => v
            .parse()
            .map_err(|_| ApiError::invalid(format!("afterVersion {v:?} is not a number")))?,
    };
    let request = pb::WatchMatchRequest {
        match_id: id,
        after_version,
        seat: query_seat(&query)?,
    };
    // The stream's place under the watch caps, held as long as the stream.
    let permit = client.map(|Extension(c)| c.open_watch()).transpose()?;
    let updates = service.watch(&caller, request).await?;
    let stream = updates.map(move |item| {
        let _held = &permit;
        Ok(match item {
            Ok(update) => Event::default()
                .event("update")
                .id(update.version.to_string())
                .data(serde_json::to_string(&update).unwrap_or_default()),
            Err(e) => Event::default()
                .event("error")
                .data(e.http_body().to_string()),
        })
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

async fn healthz(State(service): State<AppState>) -> Response {
    if service.draining() {
        return (StatusCode::SERVICE_UNAVAILABLE, "draining\n").into_response();
    }
    // One round trip to the database, whatever the matches it holds.
    match service
        .bounded(async { Ok(service.store().ping().await?) })
        .await
    {
        Ok(()) => (StatusCode::OK, "ok\n").into_response(),
        Err(e) => {
            tracing::warn!(error = ?e, "health check: store unavailable");
            (StatusCode::SERVICE_UNAVAILABLE, "store unavailable\n").into_response()
        }
    }
}

async fn metrics_text() -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        metrics::render(),
    )
        .into_response()
}

async fn openapi_json() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        openapi::document().to_string(),
    )
        .into_response()
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such route".into())
}

/// Gives every error response the JSON body docs/API.md describes, `{"code", "message"}`:
/// the service's errors have it already; the framework's own (an unknown route or method, a
/// path or query that does not parse, a timed-out request) get it here, with the framework's
/// text as the message.
async fn json_errors(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 4096)
        .await
        .ok()
        .and_then(|b| String::from_utf8(b.to_vec()).ok())
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_owned());
    let code = match status {
        StatusCode::NOT_FOUND => "NOT_FOUND",
        StatusCode::METHOD_NOT_ALLOWED => "UNIMPLEMENTED",
        StatusCode::REQUEST_TIMEOUT | StatusCode::GATEWAY_TIMEOUT => "DEADLINE_EXCEEDED",
        StatusCode::PAYLOAD_TOO_LARGE | StatusCode::TOO_MANY_REQUESTS => "RESOURCE_EXHAUSTED",
        StatusCode::UNAUTHORIZED => "UNAUTHENTICATED",
        StatusCode::FORBIDDEN => "PERMISSION_DENIED",
        StatusCode::SERVICE_UNAVAILABLE => "UNAVAILABLE",
        s if s.is_client_error() => "INVALID_ARGUMENT",
        _ => "INTERNAL",
    };
    let body = serde_json::json!({ "code": code, "message": text }).to_string();
    parts.headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(body))
}

/// Runs each request in its span (`telemetry::request_span`), and counts and times it by its
/// RPC and route pattern.
async fn record(request: Request, next: Next) -> Response {
    use tracing::Instrument;
    let (rpc, route) = http_labels(&request);
    let span = crate::telemetry::request_span("http", &rpc);
    let start = Instant::now();
    let response = next.run(request).instrument(span.clone()).await;
    let elapsed = start.elapsed();
    let status = response.status().as_u16();
    span.in_scope(|| {
        tracing::debug!(
            status,
            elapsed_ms = elapsed.as_millis() as u64,
            "http request"
        );
    });
    metrics::record_request("http", rpc, route, metrics::status_class(status), elapsed);
    response
}

/// The `rpc` and `route` labels of a request: the API's RPC (or, off the API, the route's
/// path) and `METHOD pattern`. Never the raw path, nor a method outside the standard ones:
/// labels stay bounded whatever clients send.
fn http_labels(request: &Request) -> (String, String) {
    use axum::http::Method;
    let Some(path) = request.extensions().get::<MatchedPath>() else {
        return ("unmatched".into(), "unmatched".into());
    };
    let method = request.method();
    let method = [
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::HEAD,
        Method::OPTIONS,
        Method::PATCH,
    ]
    .iter()
    .find(|m| *m == method)
    .map_or("OTHER", Method::as_str);
    let rpc = routes::ROUTES
        .iter()
        .find(|r| r.path == path.as_str() && r.method.openapi().eq_ignore_ascii_case(method))
        .map_or_else(|| path.as_str().to_owned(), |r| r.rpc.to_owned());
    (rpc, format!("{method} {}", path.as_str()))
}

/// The handler of one route of the table.
fn method_router(route: &routes::Route) -> MethodRouter<AppState> {
    let filter = match route.method {
        routes::Method::Get => MethodFilter::GET,
        routes::Method::Post => MethodFilter::POST,
        routes::Method::Put => MethodFilter::PUT,
        routes::Method::Delete => MethodFilter::DELETE,
    };
    match route.operation {
        "CreateMatch" => on(filter, create_match),
        "ListMatches" => on(filter, list_matches),
        "GetMatch" => on(filter, get_match),
        "JoinMatch" => on(filter, join_match),
        "Act" => on(filter, act),
        "GetView" => on(filter, get_view),
        "GetHistory" => on(filter, get_history),
        "WatchMatch" => on(filter, watch_match),
        "LeaveMatch" => on(filter, leave_match),
        "CancelMatch" => on(filter, cancel_match),
        "SetWebhook" => on(filter, set_webhook),
        "RemoveWebhook" => on(filter, remove_webhook),
        "GetWebhook" => on(filter, get_webhook),
        "ListMyMatches" => on(filter, list_my_matches),
        "Rematch" => on(filter, rematch),
        "ListGames" => on(filter, list_games),
        "GetAuditKeys" => on(filter, get_audit_keys),
        other => unreachable!("the route table names {other}, which has no handler"),
    }
}

/// The router, with its tower layers: CORS (when configured), request spans and metrics,
/// the per-client limits, timeouts, body limit, concurrency limit.
pub fn router(config: &Config, service: Arc<Service>, limiter: Arc<Limiter>) -> Router {
    let router = routes_of(config, service, limiter);
    // CORS outermost, so a preflight is answered before routing; off unless configured.
    match cors(&config.browsers) {
        Some(cors) => router.layer(cors),
        None => router,
    }
}

/// The CORS layer both listeners wear (see [`crate::config::Browsers`]), or `None` when no origin is allowed (the default).
/// Preflights may send what browser clients of either transport use: a bearer token,
/// JSON or gRPC-Web bodies, gRPC deadlines; gRPC-Web's status headers are readable.
pub fn cors(browsers: &crate::config::Browsers) -> Option<tower_http::cors::CorsLayer> {
    use axum::http::{HeaderName, HeaderValue, Method, header};
    use tower_http::cors::{AllowOrigin, CorsLayer};

    if browsers.cors_origins.is_empty() {
        return None;
    }
    let origin = if browsers.cors_origins.contains(&crate::config::Origin::Any) {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(browsers.cors_origins.iter().filter_map(|o| match o {
            crate::config::Origin::Exact(o) => HeaderValue::from_str(o).ok(),
            crate::config::Origin::Any => None,
        }))
    };
    let name = HeaderName::from_static;
    Some(
        CorsLayer::new()
            .allow_origin(origin)
            .allow_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                name("last-event-id"),
                name("x-grpc-web"),
                name("x-user-agent"),
                name("grpc-timeout"),
            ])
            .expose_headers([
                header::RETRY_AFTER,
                name("grpc-status"),
                name("grpc-message"),
                name("grpc-status-details-bin"),
                name(crate::audit::FORMAT_HEADER),
            ])
            .max_age(std::time::Duration::from_secs(24 * 60 * 60)),
    )
}

/// The refusal of an HTTP request over a limit: 429 with `Retry-After`.
fn http_refusal(error: ApiError) -> Response {
    error.into_response()
}

fn routes_of(config: &Config, service: Arc<Service>, limiter: Arc<Limiter>) -> Router {
    let identity = service.identity();
    let mut router = Router::new();
    for route in routes::ROUTES {
        router = router.route(route.path, method_router(route));
    }
    router
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics_text))
        .route("/openapi.json", get(openapi_json))
        .merge(crate::web::routes())
        .fallback(not_found)
        .with_state(service)
        .layer(
            ServiceBuilder::new()
                .layer(middleware::from_fn(record))
                .layer(middleware::map_response(json_errors))
                // Player tokens are verified first: the rate limit keys on the player.
                .layer(middleware::from_fn_with_state(
                    identity,
                    crate::identity::http,
                ))
                .layer(ratelimit::RateLimitLayer::new(
                    limiter,
                    ratelimit::Scope::Http,
                    http_refusal,
                ))
                .layer(tower_http::timeout::TimeoutLayer::with_status_code(
                    StatusCode::REQUEST_TIMEOUT,
                    config.requests.timeout(),
                ))
                // A body sent slower than this fails to read (a slow sender holds no handler).
                .layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
                    config.requests.body_read_timeout(),
                ))
                .layer(DefaultBodyLimit::max(config.requests.max_body_bytes))
                .layer(tower::limit::GlobalConcurrencyLimitLayer::new(
                    config.requests.concurrency_limit,
                )),
        )
}

/// Serves HTTP on `listener` until `shutdown`, then lets in-flight requests finish. Each
/// request carries its peer's address (`ConnectInfo`, for the per-client limits); a client
/// has [`crate::config::Requests::header_read_timeout`] to send a request's headers, or its
/// connection is closed.
pub async fn serve(
    config: Config,
    service: Arc<Service>,
    limiter: Arc<Limiter>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use tower::ServiceExt;

    let app = router(&config, service, limiter);
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1
        .timer(TokioTimer::new())
        .header_read_timeout(config.requests.header_read_timeout());
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was accepted:
                    // wait a little rather than spin.
                    tracing::debug!(error = %e, "accepting an HTTP connection");
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let serve =
            hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let mut request = request.map(axum::body::Body::new);
                request.extensions_mut().insert(ConnectInfo(peer));
                app.clone().oneshot(request)
            });
        let connection = graceful.watch(http1.serve_connection(TokioIo::new(stream), serve));
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "HTTP connection");
            }
        });
    }
    // No new connections; those open finish their requests (watch streams end with the drain).
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn cors_is_worn_only_when_origins_are_configured() {
        assert!(cors(&Config::parse_from(["missive"]).browsers).is_none());
        let config = Config::parse_from(["missive", "--cors-origins", "https://play.example.com"]);
        assert!(cors(&config.browsers).is_some());
        assert!(cors(&Config::parse_from(["missive", "--cors-origins", "*"]).browsers).is_some());
    }
}
