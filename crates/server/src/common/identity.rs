//! Player tokens: JWTs the game's own backend issues, whose subject is the player.
//!
//! A request's `authorization: Bearer <token>` holds either a seat token (64 hex digits) or a
//! player token (a JWT: three base64url parts joined by dots). [`Verifier`] checks a player
//! token's signature (against a JSON Web Key Set fetched from a URL and cached, or an HS256
//! secret), its expiry and, when configured, its issuer and audience; [`layer`] does so for
//! every request of both transports before anything else sees it, refusing a bad token with
//! UNAUTHENTICATED / 401 and putting the [`Player`] in the request's extensions. The rate
//! limits key on that player; the service reads it through `auth::caller`.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

use crate::config;
use crate::error::{ApiError, ApiResult};
use crate::limits;

/// The longest player id (a token's `sub`), in characters.
pub const MAX_PLAYER_ID: usize = 128;
/// The longest player token accepted, in bytes: far above any real JWT, far below a body.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// The soonest the key set is fetched again because a token named a key it lacks.
const UNKNOWN_KEY_REFETCH: Duration = Duration::from_secs(30);
/// How long a fetch of the key set may take.
const JWKS_FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// A verified player: the token's subject, and the display name it carries, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Player {
    /// The `sub` claim: the player's id in the game's backend.
    pub id: String,
    /// The `name` claim, when the token has a usable one.
    pub name: Option<String>,
}

/// The claims read from a player token; `exp`, `nbf`, `iss` and `aud` are checked by the
/// validation itself.
#[derive(Debug, Deserialize)]
struct Claims {
    sub: String,
    #[serde(default)]
    name: Option<String>,
}

/// Whether a bearer token is a JWT rather than a seat token.
pub fn is_jwt(token: &str) -> bool {
    token.bytes().filter(|&b| b == b'.').count() == 2
}

/// What player tokens are checked against.
pub struct Verifier {
    keys: Keys,
    issuer: Option<String>,
    audience: Option<String>,
    leeway: u64,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

enum Keys {
    /// One shared secret, HS256 only.
    Secret(DecodingKey),
    /// The keys of a JSON Web Key Set, fetched from a URL.
    Set(Jwks),
}

impl Verifier {
    /// The verifier the configuration asks for; `None` when player tokens are not accepted.
    pub fn from_config(config: &config::Identity) -> anyhow::Result<Option<Verifier>> {
        let keys = match (&config.jwt_jwks_url, &config.jwt_hs256_secret) {
            (Some(_), Some(_)) => anyhow::bail!(
                "set one of MISSIVE_JWT_JWKS_URL and MISSIVE_JWT_HS256_SECRET, not both"
            ),
            (Some(url), None) => Keys::Set(Jwks::new(url, config.jwks_refresh())?),
            (None, Some(secret)) => {
                let secret = secret.expose().as_bytes();
                anyhow::ensure!(
                    secret.len() >= 32,
                    "MISSIVE_JWT_HS256_SECRET must be at least 32 bytes"
                );
                Keys::Secret(DecodingKey::from_secret(secret))
            }
            (None, None) => return Ok(None),
        };
        Ok(Some(Verifier {
            keys,
            issuer: config.jwt_issuer.clone(),
            audience: config.jwt_audience.clone(),
            leeway: config.jwt_leeway_secs,
        }))
    }

    /// A verifier of HS256 tokens signed with `secret`, checking issuer and audience when given.
    pub fn hs256(secret: &[u8], issuer: Option<&str>, audience: Option<&str>) -> Verifier {
        Verifier {
            keys: Keys::Secret(DecodingKey::from_secret(secret)),
            issuer: issuer.map(str::to_owned),
            audience: audience.map(str::to_owned),
            leeway: 0,
        }
    }

    /// The player a token names, once its signature, expiry, issuer and audience check out.
    pub async fn verify(&self, token: &str) -> ApiResult<Player> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(unauthenticated(format!(
                "the player token is longer than {MAX_TOKEN_BYTES} bytes"
            )));
        }
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| unauthenticated(format!("the player token is not a JWT: {e}")))?;
        let (key, algorithms) = match &self.keys {
            Keys::Secret(key) => (key.clone(), vec![Algorithm::HS256]),
            Keys::Set(jwks) => jwks.key(header.kid.as_deref()).await?,
        };
        if !algorithms.contains(&header.alg) {
            return Err(unauthenticated(format!(
                "the player token is signed with {:?}, which its key does not sign with",
                header.alg
            )));
        }
        let mut validation = Validation::new(header.alg);
        validation.algorithms = algorithms;
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "sub"]);
        match &self.audience {
            Some(audience) => validation.set_audience(&[audience]),
            None => validation.validate_aud = false,
        }
        if let Some(issuer) = &self.issuer {
            validation.set_issuer(&[issuer]);
        }
        let claims = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(refusal)?
            .claims;
        if claims.sub.is_empty() {
            return Err(unauthenticated("the player token's `sub` is empty"));
        }
        limits::text("the player token's `sub`", &claims.sub, MAX_PLAYER_ID)
            .map_err(|e| unauthenticated(e.to_string()))?;
        let name = claims
            .name
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty() && limits::text("name", n, limits::MAX_PLAYER_NAME).is_ok());
        Ok(Player {
            id: claims.sub,
            name,
        })
    }
}

fn unauthenticated(message: impl Into<String>) -> ApiError {
    ApiError::Unauthenticated(message.into())
}

/// A clear refusal for each way a token fails validation.
fn refusal(e: jsonwebtoken::errors::Error) -> ApiError {
    use jsonwebtoken::errors::ErrorKind;
    unauthenticated(match e.kind() {
        ErrorKind::ExpiredSignature => "the player token has expired".to_owned(),
        ErrorKind::ImmatureSignature => "the player token is not valid yet (nbf)".to_owned(),
        ErrorKind::InvalidAudience => "the player token is for another audience".to_owned(),
        ErrorKind::InvalidIssuer => "the player token is from another issuer".to_owned(),
        ErrorKind::InvalidSignature => "the player token's signature does not verify".to_owned(),
        ErrorKind::MissingRequiredClaim(claim) => {
            format!("the player token has no `{claim}` claim")
        }
        ErrorKind::InvalidAlgorithm => {
            "the player token is signed with an algorithm this server does not accept".to_owned()
        }
        _ => format!("the player token is not valid: {e}"),
    })
}

/// The keys of a JSON Web Key Set, fetched from its URL, kept for `refresh`, and fetched again
/// sooner (at most every [`UNKNOWN_KEY_REFETCH`]) when a token names a key the set lacks, as
/// after the issuer rotates its keys. A failed fetch keeps the keys already held.
struct Jwks {
    url: reqwest::Url,
    client: reqwest::Client,
    refresh: Duration,
    keys: RwLock<Arc<KeySet>>,
    /// Held while fetching, so concurrent requests wait for one fetch instead of each making
    /// their own.
    fetching: tokio::sync::Mutex<()>,
}

/// Keys by id, each with the algorithms it verifies, and when they were fetched.
#[derive(Default)]
struct KeySet {
    by_kid: HashMap<String, (DecodingKey, Vec<Algorithm>)>,
    /// The keys without an id, used by tokens without a `kid` when the set has exactly one.
    anonymous: Vec<(DecodingKey, Vec<Algorithm>)>,
    fetched: Option<Instant>,
    tried: Option<Instant>,
}

impl Jwks {
    fn new(url: &str, refresh: Duration) -> anyhow::Result<Jwks> {
        let url: reqwest::Url = url
            .parse()
            .map_err(|e| anyhow::anyhow!("MISSIVE_JWT_JWKS_URL {url:?}: {e}"))?;
        anyhow::ensure!(
            matches!(url.scheme(), "https" | "http"),
            "MISSIVE_JWT_JWKS_URL must be an http:// or https:// URL"
        );
        let client = reqwest::Client::builder()
            .timeout(JWKS_FETCH_TIMEOUT)
            .build()
            .map_err(|e| anyhow::anyhow!("building the key set's HTTP client: {e}"))?;
        Ok(Jwks {
            url,
            client,
            refresh,
            keys: RwLock::new(Arc::new(KeySet::default())),
            fetching: tokio::sync::Mutex::new(()),
        })
    }

    fn current(&self) -> Arc<KeySet> {
        self.keys.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The key a token with this `kid` is verified with, and the algorithms it signs with.
    async fn key(&self, kid: Option<&str>) -> ApiResult<(DecodingKey, Vec<Algorithm>)> {
        let set = self.current();
        let stale = set.fetched.is_none_or(|at| at.elapsed() >= self.refresh);
        if !stale && let Some(found) = set.find(kid) {
            return Ok(found);
        }
        let may_retry = set
            .tried
            .is_none_or(|at| at.elapsed() >= UNKNOWN_KEY_REFETCH);
        if stale || may_retry {
            let _one_fetch = self.fetching.lock().await;
            // Another request may have fetched while this one waited.
            let now = self.current();
            if now.tried == set.tried {
                self.fetch(&now).await;
            }
        }
        self.current().find(kid).ok_or_else(|| match kid {
            Some(kid) => unauthenticated(format!(
                "the player token's key {kid:?} is not in the issuer's key set"
            )),
            None => unauthenticated(
                "the player token names no key (`kid`) and the key set has more than one",
            ),
        })
    }

    /// Fetches the key set, replacing the keys held; on failure keeps them and logs why.
    async fn fetch(&self, held: &KeySet) {
        let fetched = async {
            let response = self
                .client
                .get(self.url.clone())
                .send()
                .await
                .and_then(reqwest::Response::error_for_status)
                .map_err(|e| format!("fetching the key set: {e}"))?;
            let body = response
                .bytes()
                .await
                .map_err(|e| format!("reading the key set: {e}"))?;
            let set: JwkSet =
                serde_json::from_slice(&body).map_err(|e| format!("parsing the key set: {e}"))?;
            Ok::<_, String>(KeySet::of(&set))
        }
        .await;
        let now = Instant::now();
        let next = match fetched {
            Ok(mut set) => {
                set.fetched = Some(now);
                set.tried = Some(now);
                tracing::info!(keys = set.by_kid.len() + set.anonymous.len(), url = %self.url, "fetched the player tokens' key set");
                set
            }
            Err(error) => {
                tracing::warn!(%error, url = %self.url, "the player tokens' key set could not be fetched; keeping the keys held");
                KeySet {
                    by_kid: held.by_kid.clone(),
                    anonymous: held.anonymous.clone(),
                    fetched: held.fetched,
                    tried: Some(now),
                }
            }
        };
        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
    }
}

impl KeySet {
    /// The signing keys of a set; keys this server cannot use (encryption keys, unknown types)
    /// are left out.
    fn of(set: &JwkSet) -> KeySet {
        let mut keys = KeySet::default();
        for jwk in &set.keys {
            if jwk
                .common
                .public_key_use
                .as_ref()
                .is_some_and(|u| *u != jsonwebtoken::jwk::PublicKeyUse::Signature)
            {
                continue;
            }
            let Ok(key) = DecodingKey::from_jwk(jwk) else {
                continue;
            };
            let algorithms = match jwk
                .common
                .key_algorithm
                .and_then(|a| a.to_string().parse::<Algorithm>().ok())
            {
                Some(algorithm) => vec![algorithm],
                None => family(&jwk.algorithm),
            };
            match &jwk.common.key_id {
                Some(kid) => {
                    keys.by_kid.insert(kid.clone(), (key, algorithms));
                }
                None => keys.anonymous.push((key, algorithms)),
            }
        }
        keys
    }

    fn find(&self, kid: Option<&str>) -> Option<(DecodingKey, Vec<Algorithm>)> {
        match kid {
            Some(kid) => self.by_kid.get(kid).cloned(),
            None => match (self.by_kid.len(), self.anonymous.as_slice()) {
                (0, [only]) => Some(only.clone()),
                (1, []) => self.by_kid.values().next().cloned(),
                _ => None,
            },
        }
    }
}

/// The algorithms a key of this type may sign with, when the key does not name one.
fn family(parameters: &jsonwebtoken::jwk::AlgorithmParameters) -> Vec<Algorithm> {
    use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve};
    match parameters {
        AlgorithmParameters::RSA(_) => vec![
            Algorithm::RS256,
            Algorithm::RS384,
            Algorithm::RS512,
            Algorithm::PS256,
            Algorithm::PS384,
            Algorithm::PS512,
        ],
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            _ => Vec::new(),
        },
        AlgorithmParameters::OctetKeyPair(_) => vec![Algorithm::EdDSA],
        // A symmetric key in a published set would let anyone who reads it sign.
        AlgorithmParameters::OctetKey(_) => Vec::new(),
    }
}

/// Verifies the player token of each request (a bearer JWT), putting the [`Player`] in the
/// request's extensions; a request with a bad one is answered by `refuse` and goes no further.
/// Requests with a seat token or none pass untouched.
pub async fn identify<B>(
    verifier: Option<&Verifier>,
    mut request: axum::http::Request<B>,
) -> Result<axum::http::Request<B>, ApiError> {
    let Some(value) = request.headers().get(axum::http::header::AUTHORIZATION) else {
        return Ok(request);
    };
    let Some(token) = value
        .to_str()
        .ok()
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .filter(|t| is_jwt(t))
    else {
        return Ok(request);
    };
    let Some(verifier) = verifier else {
        return Err(unauthenticated(
            "this server does not accept player tokens (JWTs); use a seat token",
        ));
    };
    let player = verifier.verify(token).await?;
    // The rate limits key on the player.
    request
        .extensions_mut()
        .insert(crate::ratelimit::Verified(player.id.clone()));
    request.extensions_mut().insert(player);
    Ok(request)
}

/// [`identify`] as a predicate of the gRPC server's layers: a refusal becomes the call's status.
#[derive(Clone, Debug)]
pub struct GrpcIdentify(Option<Arc<Verifier>>);

/// The gRPC server's layer that verifies player tokens.
pub fn grpc_layer(
    verifier: Option<Arc<Verifier>>,
) -> tower::filter::AsyncFilterLayer<GrpcIdentify> {
    tower::filter::AsyncFilterLayer::new(GrpcIdentify(verifier))
}

impl<B: Send + 'static> tower::filter::AsyncPredicate<axum::http::Request<B>> for GrpcIdentify {
    type Future =
        futures::future::BoxFuture<'static, Result<axum::http::Request<B>, tower::BoxError>>;
    type Request = axum::http::Request<B>;

    fn check(&mut self, request: axum::http::Request<B>) -> Self::Future {
        let verifier = self.0.clone();
        Box::pin(async move {
            identify(verifier.as_deref(), request)
                .await
                .map_err(|e| Box::new(tonic::Status::from(e)) as tower::BoxError)
        })
    }
}

/// [`identify`] as HTTP middleware: a refusal is answered as any other error.
pub async fn http(
    axum::extract::State(verifier): axum::extract::State<Option<Arc<Verifier>>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    match identify(verifier.as_deref(), request).await {
        Ok(request) => next.run(request).await,
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::json;

    const SECRET: &[u8] = b"a-secret-of-at-least-thirty-two-bytes";

    fn token(claims: serde_json::Value, secret: &[u8]) -> String {
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(secret),
        )
        .expect("sign")
    }

    fn later() -> u64 {
        jsonwebtoken::get_current_timestamp() + 600
    }

    fn refused(result: ApiResult<Player>) -> String {
        match result {
            Err(ApiError::Unauthenticated(message)) => message,
            other => panic!("expected UNAUTHENTICATED, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_token_is_taken_only_with_its_signature_time_issuer_and_audience() {
        let verifier = Verifier::hs256(SECRET, Some("iss-a"), Some("aud-a"));
        let good =
            json!({"sub": "p1", "name": "Ann", "iss": "iss-a", "aud": "aud-a", "exp": later()});
        assert_eq!(
            verifier
                .verify(&token(good.clone(), SECRET))
                .await
                .expect("valid"),
            Player {
                id: "p1".into(),
                name: Some("Ann".into())
            }
        );
        let other_secret = b"another-secret-of-at-least-32-bytes!!";
        assert!(
            refused(verifier.verify(&token(good.clone(), other_secret)).await)
                .contains("signature")
        );
        for (field, value, why) in [
            ("exp", json!(1), "expired"),
            ("nbf", json!(later() + 3600), "not valid yet"),
            ("iss", json!("iss-b"), "issuer"),
            ("aud", json!("aud-b"), "audience"),
            ("sub", json!(""), "`sub`"),
            ("sub", json!("a\u{0}b"), "control"),
        ] {
            let mut claims = good.clone();
            claims[field] = value;
            let message = refused(verifier.verify(&token(claims, SECRET)).await);
            assert!(message.contains(why), "{field}: {message}");
        }
        let mut no_exp = good.clone();
        no_exp.as_object_mut().expect("object").remove("exp");
        assert!(refused(verifier.verify(&token(no_exp, SECRET)).await).contains("`exp`"));
        // An unsigned token ("alg": "none") is not a token.
        let unsigned = format!(
            "{}.{}.",
            base64url(br#"{"alg":"none","typ":"JWT"}"#),
            base64url(good.to_string().as_bytes())
        );
        refused(verifier.verify(&unsigned).await);
        refused(verifier.verify("x.y.z").await);
        refused(verifier.verify(&"a.b.".repeat(4000)).await);
    }

    fn base64url(bytes: &[u8]) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
            for i in 0..=chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            }
        }
        out
    }

    #[test]
    fn only_three_dotted_parts_are_taken_for_a_jwt() {
        assert!(is_jwt("a.b.c"));
        assert!(!is_jwt(&"ab".repeat(32)));
        assert!(!is_jwt("a.b"));
    }
}
