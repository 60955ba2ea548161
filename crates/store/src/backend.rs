//! What a backend is: a folder of the same shape, [`crate::postgres`] and [`crate::sqlite`]
//! (`matches.rs`, `events.rs`, `turns.rs`, `outbox.rs`, and `mod.rs` with its connection), in
//! which each operation is a function of the same path, name and parameters, holding that
//! backend's SQL.
//!
//! An operation is declared once, as its [`crate::Store`] method: it checks what it is given,
//! for both backends, and calls the function of the same path in the store's backend through
//! `with_backend!` (in `lib.rs`), the single place a call chooses one. Each arm of that macro
//! is the same code, so the compiler holds the two folders to the same operations. A backend
//! gets values already checked (text, ranges, seats of a new match) and answers the guarantees
//! the crate docs state; how it keeps them is its own.

use crate::StoreError;

/// What a backend operation answers.
pub(crate) type Answer<T> = Result<T, StoreError>;

/// A transaction on a connection of `pool`, begun by `statement`, whatever becomes of the
/// caller. sqlx 0.8 cannot be trusted with a `BEGIN` whose caller is dropped (a request
/// cancelled, a deadline) while it waits for the answer: PostgreSQL arms the transaction's
/// rollback only once `BEGIN` is answered, and SQLite's worker may hand its answer to a caller
/// already gone. The pool then gets back a connection inside a transaction, and the next
/// caller's statements run in it: on PostgreSQL its writes are never committed, on SQLite
/// every other writer waits on the lock it holds. So the `BEGIN` runs in a task of its own,
/// which a dropped caller does not cancel; the transaction it ends with, then dropped, rolls
/// back.
pub(crate) async fn begin<DB: sqlx::Database>(
    pool: &sqlx::Pool<DB>,
    statement: &'static str,
) -> Answer<sqlx::Transaction<'static, DB>> {
    let pool = pool.clone();
    tokio::spawn(async move { pool.begin_with(statement).await })
        .await
        .map_err(|e| StoreError::Internal(format!("beginning a transaction: {e}")))?
        .map_err(StoreError::from_sqlx)
}
