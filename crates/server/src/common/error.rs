//! The server's one error type and its only two mappings: to a gRPC `Status` and to an HTTP
//! status with a JSON body `{code, message, rule?}`.
//!
//! Messages are written for the caller and never carry internal detail: store and bug reports
//! are logged here, at the mapping point, and the caller gets a generic sentence.

use axum::http::StatusCode;
use missive_store::StoreError;

/// The server's own refusals (FAILED_PRECONDITION, HTTP 409 with `rule`), beside the games'
/// rule codes. Stable: clients branch on them; docs/API.md lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Joining a match that has started or ended.
    MatchNotOpen,
    /// Joining a seat someone holds.
    SeatTaken,
    /// Joining a match whose every seat is held.
    MatchFull,
    /// Acting before every seat is taken.
    MatchNotStarted,
    /// Acting, leaving or registering a webhook once the match is over.
    MatchOver,
    /// The server's default action for a seat that is not awaited.
    NotAwaited,
    /// A bot with nothing to play.
    NoLegalAction,
    /// A request id sent again with a different request.
    RequestIdReused,
    /// A join retried after its player left the seat.
    SeatLeft,
    /// A match created under rules this server does not run.
    RulesVersionUnavailable,
    /// A player joining a match in which they already hold a seat.
    AlreadySeated,
    /// A rematch of a match still under way.
    MatchNotOver,
    /// Cancelling a match that has started.
    MatchStarted,
}

impl Rule {
    pub const ALL: [Rule; 13] = [
        Rule::MatchNotOpen,
        Rule::SeatTaken,
        Rule::MatchFull,
        Rule::MatchNotStarted,
        Rule::MatchOver,
        Rule::NotAwaited,
        Rule::NoLegalAction,
        Rule::RequestIdReused,
        Rule::SeatLeft,
        Rule::RulesVersionUnavailable,
        Rule::AlreadySeated,
        Rule::MatchNotOver,
        Rule::MatchStarted,
    ];

    /// The code clients see.
    pub fn code(self) -> &'static str {
        match self {
            Rule::MatchNotOpen => "match-not-open",
            Rule::SeatTaken => "seat-taken",
            Rule::MatchFull => "match-full",
            Rule::MatchNotStarted => "match-not-started",
            Rule::MatchOver => "match-over",
            Rule::NotAwaited => "not-awaited",
            Rule::NoLegalAction => "no-legal-action",
            Rule::RequestIdReused => "request-id-reused",
            Rule::SeatLeft => "seat-left",
            Rule::RulesVersionUnavailable => "rules-version-unavailable",
            Rule::AlreadySeated => "already-seated",
            Rule::MatchNotOver => "match-not-over",
            Rule::MatchStarted => "match-started",
        }
    }
}

/// Why a request failed, in the API's terms.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request is malformed: a bad id, a missing field, an unknown action.
    #[error("{0}")]
    InvalidArgument(String),
    /// The rules refuse the action; `rule` is the game's stable code for the rule.
    #[error("{message}")]
    Rule { rule: String, message: String },
    /// The match is not in a state that allows this (not started, over, full).
    #[error("{message}")]
    FailedPrecondition { rule: String, message: String },
    /// The caller's expected version is not the match's version.
    #[error("{0}")]
    Aborted(String),
    /// No token where one is needed, or a token that is not valid for this match.
    #[error("{0}")]
    Unauthenticated(String),
    /// A valid token asking for something its seat may not do.
    #[error("{0}")]
    PermissionDenied(String),
    #[error("{0}")]
    NotFound(String),
    /// The request is larger than the server accepts.
    #[error("{0}")]
    TooLarge(String),
    /// The client is over one of its limits (`ratelimit.rs`): HTTP 429 with `Retry-After`,
    /// gRPC with a `google.rpc.RetryInfo` detail. The message names the limit.
    #[error("{message}")]
    Exhausted {
        message: String,
        retry_after: std::time::Duration,
    },
    /// The store cannot be reached; retrying later may work.
    #[error("the match store is unavailable")]
    Unavailable(String),
    /// This server is shutting down; the same request to another server (or to this one once
    /// it is back) may work. The message says how to resume.
    #[error("{0}")]
    Draining(String),
    /// A bug or corrupt data; the detail is logged, never sent.
    #[error("internal error")]
    Internal(String),
}

impl ApiError {
    pub fn invalid(message: impl Into<String>) -> Self {
        ApiError::InvalidArgument(message.into())
    }

    pub fn precondition(rule: Rule, message: impl Into<String>) -> Self {
        ApiError::FailedPrecondition {
            rule: rule.code().to_owned(),
            message: message.into(),
        }
    }

    pub fn internal(detail: impl Into<String>) -> Self {
        ApiError::Internal(detail.into())
    }

    /// The canonical gRPC code name, also used as the `code` of HTTP error bodies.
    pub fn code_name(&self) -> &'static str {
        match self {
            ApiError::InvalidArgument(_) => "INVALID_ARGUMENT",
            ApiError::Rule { .. } | ApiError::FailedPrecondition { .. } => "FAILED_PRECONDITION",
            ApiError::Aborted(_) => "ABORTED",
            ApiError::Unauthenticated(_) => "UNAUTHENTICATED",
            ApiError::PermissionDenied(_) => "PERMISSION_DENIED",
            ApiError::NotFound(_) => "NOT_FOUND",
            ApiError::TooLarge(_) | ApiError::Exhausted { .. } => "RESOURCE_EXHAUSTED",
            ApiError::Unavailable(_) | ApiError::Draining(_) => "UNAVAILABLE",
            ApiError::Internal(_) => "INTERNAL",
        }
    }

    /// The rule code for refusals, for clients to branch on.
    pub fn rule(&self) -> Option<&str> {
        match self {
            ApiError::Rule { rule, .. } | ApiError::FailedPrecondition { rule, .. } => Some(rule),
            _ => None,
        }
    }

    /// What the caller is told; internal detail is logged here instead.
    pub(crate) fn public_message(&self) -> String {
        match self {
            ApiError::Unavailable(detail) => {
                tracing::warn!(%detail, "store unavailable");
            }
            ApiError::Internal(detail) => {
                tracing::error!(%detail, "internal error");
            }
            _ => {}
        }
        crate::metrics::record_error(self.code_name());
        self.to_string()
    }

    pub fn http_status(&self) -> StatusCode {
        match self {
            ApiError::InvalidArgument(_) => StatusCode::BAD_REQUEST,
            ApiError::Rule { .. } | ApiError::FailedPrecondition { .. } | ApiError::Aborted(_) => {
                StatusCode::CONFLICT
            }
            ApiError::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            ApiError::PermissionDenied(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Exhausted { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable(_) | ApiError::Draining(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The HTTP body: `{"code": "FAILED_PRECONDITION", "message": "...", "rule": "..."}`.
    pub fn http_body(&self) -> serde_json::Value {
        let mut body = serde_json::json!({
            "code": self.code_name(),
            "message": self.public_message(),
        });
        if let Some(rule) = self.rule() {
            body["rule"] = serde_json::Value::String(rule.to_owned());
        }
        body
    }
}

impl From<ApiError> for tonic::Status {
    fn from(err: ApiError) -> Self {
        use tonic::Code;
        let code = match &err {
            ApiError::InvalidArgument(_) => Code::InvalidArgument,
            ApiError::Rule { .. } | ApiError::FailedPrecondition { .. } => Code::FailedPrecondition,
            ApiError::Aborted(_) => Code::Aborted,
            ApiError::Unauthenticated(_) => Code::Unauthenticated,
            ApiError::PermissionDenied(_) => Code::PermissionDenied,
            ApiError::NotFound(_) => Code::NotFound,
            ApiError::TooLarge(_) | ApiError::Exhausted { .. } => Code::ResourceExhausted,
            ApiError::Unavailable(_) | ApiError::Draining(_) => Code::Unavailable,
            ApiError::Internal(_) => Code::Internal,
        };
        let rule = err.rule().map(str::to_owned);
        if let ApiError::Exhausted { retry_after, .. } = &err {
            use tonic_types::{ErrorDetails, StatusExt};
            return tonic::Status::with_error_details(
                code,
                err.public_message(),
                ErrorDetails::with_retry_info(Some(*retry_after)),
            );
        }
        let mut status = tonic::Status::new(code, err.public_message());
        if let Some(rule) = rule
            && let Ok(value) = rule.parse()
        {
            status.metadata_mut().insert("missive-rule", value);
        }
        status
    }
}

impl axum::response::IntoResponse for ApiError {
    fn into_response(self) -> axum::response::Response {
        let mut response = (self.http_status(), axum::Json(self.http_body())).into_response();
        if let ApiError::Exhausted { retry_after, .. } = &self {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                retry_secs(*retry_after).into(),
            );
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound(_) => ApiError::NotFound("no such match".into()),
            StoreError::Conflict { .. } => {
                ApiError::Aborted("the match changed meanwhile; reload and retry".into())
            }
            StoreError::AlreadyExists(id) => ApiError::internal(format!("match {id} exists")),
            StoreError::Unavailable(detail) => ApiError::Unavailable(detail),
            StoreError::Corrupt(detail) => ApiError::internal(format!("corrupt: {detail}")),
            StoreError::Invalid(detail) => ApiError::InvalidArgument(detail),
            StoreError::Internal(detail) => ApiError::internal(detail),
        }
    }
}

/// Shorthand for the service's results.
pub type ApiResult<T> = Result<T, ApiError>;

/// Whole seconds to wait, rounded up, at least 1: what `Retry-After` says.
pub fn retry_secs(wait: std::time::Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_server_rule_is_listed_in_the_api_docs() {
        let api = include_str!("../../../../docs/API.md");
        for rule in Rule::ALL {
            assert!(
                api.contains(&format!("`{}`", rule.code())),
                "{rule:?} is not in docs/API.md"
            );
        }
    }
}
