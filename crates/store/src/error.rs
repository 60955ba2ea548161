//! The store's one error type, and how a driver error maps to it.

use crate::MatchId;

/// The store's errors. Database driver errors are mapped here and never leak out.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// No match with this id.
    #[error("match {0} not found")]
    NotFound(MatchId),
    /// The match's version was not the one the caller expected; or it was (`actual ==
    /// expected`), but the append lost to a writer that left nothing behind, or chained from a
    /// head the database no longer holds. Either way: decide again from a fresh read.
    #[error("version conflict: expected {expected}, match is at {actual}")]
    Conflict {
        /// The version the caller appended against.
        expected: u64,
        /// The match's version when the append was refused.
        actual: u64,
    },
    /// A match with this id already exists.
    #[error("match {0} already exists")]
    AlreadyExists(MatchId),
    /// The database could not be reached in time (connection lost, pool exhausted); retryable.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// Stored data that cannot be what this store wrote (bad hash length, unknown status…).
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    /// Values the store refuses before writing anything: text the database cannot hold (a NUL
    /// character), a number beyond the range both backends store. Nothing was written.
    #[error("{0}")]
    Invalid(String),
    /// Anything else: a bug or an unexpected database error.
    #[error("internal store error: {0}")]
    Internal(String),
}

impl StoreError {
    /// Maps a driver error; callers handle the unique violations they expect before this.
    pub(crate) fn from_sqlx(err: sqlx::Error) -> StoreError {
        match err {
            sqlx::Error::PoolClosed => StoreError::Unavailable(err.to_string()),
            // A timeout waiting for a connection includes failing to open one: the database
            // may be gone, and the connections idle now with it.
            sqlx::Error::PoolTimedOut
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::WorkerCrashed => {
                crate::liveness::connection_failed();
                StoreError::Unavailable(err.to_string())
            }
            sqlx::Error::Database(db) => {
                // 57P01..03: the server is shutting down or refused us; 08xxx: connection;
                // 53xxx: out of connections, memory or disk for now; 25006: a node that is
                // not (or not yet) the primary, as a proxy may reach while a standby is
                // promoted, refused a write.
                let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
                if code.starts_with("08") || code.starts_with("57P") {
                    crate::liveness::connection_failed();
                }
                if code.starts_with("08")
                    || code.starts_with("57P")
                    || code.starts_with("53")
                    || code == "25006"
                {
                    StoreError::Unavailable(db.to_string())
                } else {
                    StoreError::Internal(db.to_string())
                }
            }
            sqlx::Error::Migrate(e) => StoreError::Internal(format!("migration failed: {e}")),
            other => StoreError::Internal(other.to_string()),
        }
    }
}
