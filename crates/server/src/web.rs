//! The web client: plain HTML, CSS and JavaScript under `crates/server/web/`, compiled into the
//! binary and served on the HTTP port at `/` (the page) and `/web/…` (its assets). The client
//! speaks only the public HTTP/JSON API and its SSE stream, so it is one more API client, not
//! part of the API: its routes are not in `routes.rs` or the OpenAPI document.
//!
//! Every answer carries a Content-Security-Policy that lets the page load and call nothing but
//! this origin (no inline script or style, no frames), and an ETag of the content: the browser
//! revalidates each time (`no-cache`) and an unchanged file costs a 304.

use std::sync::LazyLock;

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};

/// The policy of every page and asset: this origin only.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// One embedded file.
#[derive(Debug)]
struct Asset {
    content_type: &'static str,
    body: &'static str,
    etag: String,
}

impl Asset {
    fn new(content_type: &'static str, body: &'static str) -> Asset {
        let digest = Sha256::digest(body.as_bytes());
        Asset {
            content_type,
            body,
            etag: format!("\"{}\"", hex::encode(&digest[..12])),
        }
    }

    fn serve(&self, request: &HeaderMap) -> Response {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(self.content_type),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CSP),
        );
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        headers.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        if let Ok(etag) = HeaderValue::from_str(&self.etag) {
            headers.insert(header::ETAG, etag);
        }
        let fresh = request
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|tag| tag.trim() == self.etag));
        if fresh {
            (StatusCode::NOT_MODIFIED, headers).into_response()
        } else {
            (headers, self.body).into_response()
        }
    }
}

macro_rules! asset {
    ($name:ident, $file:literal, $type:literal) => {
        static $name: LazyLock<Asset> =
            LazyLock::new(|| Asset::new($type, include_str!(concat!("../web/", $file))));
    };
}

asset!(INDEX, "index.html", "text/html; charset=utf-8");
asset!(APP_JS, "app.js", "text/javascript; charset=utf-8");
asset!(GAMES_JS, "games.js", "text/javascript; charset=utf-8");
asset!(APP_CSS, "app.css", "text/css; charset=utf-8");
asset!(ICON, "icon.svg", "image/svg+xml");

/// The page and its assets, to merge into the HTTP router.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(|h: HeaderMap| async move { INDEX.serve(&h) }))
        .route(
            "/web/app.js",
            get(|h: HeaderMap| async move { APP_JS.serve(&h) }),
        )
        .route(
            "/web/games.js",
            get(|h: HeaderMap| async move { GAMES_JS.serve(&h) }),
        )
        .route(
            "/web/app.css",
            get(|h: HeaderMap| async move { APP_CSS.serve(&h) }),
        )
        .route(
            "/web/icon.svg",
            get(|h: HeaderMap| async move { ICON.serve(&h) }),
        )
}
