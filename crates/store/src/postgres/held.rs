//! Connections held between statements. sqlx pings every connection handed back to its pool, one
//! more round trip per use; a [`Connections`] keeps its connections instead, and hands one back
//! to the pool (pinged there, which also rolls back a transaction dropped on it) only when a
//! statement on it failed.
//!
//! A held connection lives no longer than the pool's own (`max_lifetime`, sqlx's 30 minutes by
//! default): once it has been held that long, the end of its lease hands it back to the pool,
//! which closes it, and the next lease takes another. So the sessions a server keeps are renewed
//! like the pool's, and their memory on the database server with them.
//!
//! A connection whose work was cancelled part-way (a request dropped, a deadline) is closed
//! instead. sqlx 0.8 cannot be trusted with it: a `BEGIN` cancelled before its answer leaves the
//! session in a transaction that nothing rolls back, and the pool would hand that connection
//! to the next caller, whose statements would run inside it. Closing the session ends the
//! transaction on the server.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use sqlx::Connection;
use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, PgPool, Postgres};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::StoreError;
use crate::liveness;

/// Up to a fixed number of connections taken from the pool and kept between uses.
#[derive(Debug)]
pub(super) struct Connections {
    pool: PgPool,
    /// One permit per free connection.
    pub(super) permits: Arc<Semaphore>,
    /// The free connections, each with when it was taken from the pool; `None` for one that is
    /// to be opened again.
    free: Mutex<Vec<Option<Held>>>,
}

/// A connection taken from the pool.
#[derive(Debug)]
struct Held {
    conn: PoolConnection<Postgres>,
    /// When it was taken from the pool.
    taken: Instant,
    /// When its last work ended.
    used: Instant,
}

impl Connections {
    /// Room for `count` held connections of `pool`, opened as they are first used.
    pub(super) fn new(pool: PgPool, count: usize) -> Arc<Connections> {
        Arc::new(Connections {
            pool,
            permits: Arc::new(Semaphore::new(count)),
            free: Mutex::new((0..count).map(|_| None).collect()),
        })
    }

    /// The held connection `permit` stands for.
    pub(super) fn lease(self: &Arc<Self>, permit: OwnedSemaphorePermit) -> Lease {
        let conn = self
            .free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .flatten();
        Lease {
            connections: Arc::clone(self),
            conn,
            permit: Some(permit),
            state: State::Running,
        }
    }

    /// Runs `f` on a held connection if one is free, else on one of the pool's for this use
    /// only (a read never waits for a held connection). A held connection is kept only if `f`
    /// succeeded.
    pub(super) async fn run<T>(
        self: &Arc<Self>,
        f: impl AsyncFnOnce(&mut PgConnection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut lease = self.any();
        let result = f(lease.conn().await.map_err(StoreError::from_sqlx)?).await;
        lease.done(&result);
        result
    }

    /// A held connection if one is free, else one of the pool's for this use only.
    pub(super) fn any(self: &Arc<Self>) -> Lease {
        match Arc::clone(&self.permits).try_acquire_owned() {
            Ok(permit) => self.lease(permit),
            Err(_) => Lease {
                connections: Arc::clone(self),
                conn: None,
                permit: None,
                state: State::Running,
            },
        }
    }
}

/// A connection in use. When dropped, a held one goes back to the free list if its work
/// succeeded and it has not been held for the pool's lifetime; one whose work failed, or that
/// has been held that long, goes back to the pool; one whose work never finished is closed. The
/// next lease of a held connection that was not kept opens a fresh one.
pub(super) struct Lease {
    connections: Arc<Connections>,
    conn: Option<Held>,
    permit: Option<OwnedSemaphorePermit>,
    state: State,
}

/// How the work on a [`Lease`] ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not yet, or never: cancelled part-way.
    Running,
    Failed,
    Succeeded,
}

impl Lease {
    pub(super) async fn conn(&mut self) -> Result<&mut PgConnection, sqlx::Error> {
        self.state = State::Running;
        // One that sat idle through a lost connection is checked before its work is sent, and
        // replaced if it died too (see `liveness`).
        if let Some(held) = self.conn.as_mut()
            && liveness::suspect(held.used)
            && held.conn.ping().await.is_err()
        {
            drop(self.conn.take().map(|held| held.conn.detach()));
        }
        if self.conn.is_none() {
            let now = Instant::now();
            self.conn = Some(Held {
                conn: self.connections.pool.acquire().await?,
                taken: now,
                used: now,
            });
        }
        match self.conn.as_mut() {
            Some(held) => Ok(&mut *held.conn),
            None => Err(sqlx::Error::PoolClosed),
        }
    }

    /// Records how the work on the connection ended.
    pub(super) fn done<T, E>(&mut self, result: &Result<T, E>) {
        self.state = if result.is_ok() {
            State::Succeeded
        } else {
            State::Failed
        };
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let lifetime = self.connections.pool.options().get_max_lifetime();
        let young = |held: &Held| lifetime.is_none_or(|lifetime| held.taken.elapsed() < lifetime);
        let kept = match self.state {
            State::Succeeded if self.permit.is_some() => {
                self.conn.take().filter(young).map(|held| Held {
                    used: Instant::now(),
                    ..held
                })
            }
            // Out of the pool's count, and its socket closed as it drops.
            State::Running => {
                drop(self.conn.take().map(|held| held.conn.detach()));
                None
            }
            // Back to the pool as it drops.
            State::Succeeded | State::Failed => None,
        };
        if let Some(permit) = self.permit.take() {
            self.connections
                .free
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(kept);
            drop(permit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::postgres::PgPoolOptions;
    use std::time::Duration;

    /// The database session `held` runs a statement on: its server process id.
    async fn session(held: &Arc<Connections>) -> i32 {
        held.run(async |conn| {
            sqlx::query_scalar("SELECT pg_backend_pid()")
                .fetch_one(conn)
                .await
                .map_err(StoreError::from_sqlx)
        })
        .await
        .expect("a statement")
    }

    /// Held for the pool's lifetime, a connection goes back to the pool, which closes it, and
    /// the next use runs on a new session.
    #[tokio::test]
    async fn a_held_connection_is_renewed_after_the_pools_lifetime() {
        let url = std::env::var("DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
        let pool = PgPoolOptions::new()
            .max_connections(2)
            .max_lifetime(Duration::from_millis(500))
            .connect(&url)
            .await
            .expect("PostgreSQL");
        let held = Connections::new(pool.clone(), 1);
        let first = session(&held).await;
        assert_eq!(session(&held).await, first, "kept between uses");
        tokio::time::sleep(Duration::from_millis(600)).await;
        // The use that ends past the lifetime is still the old session's; it hands it back.
        assert_eq!(session(&held).await, first);
        let renewed = session(&held).await;
        assert_ne!(renewed, first, "a new session once the lifetime is past");
        assert_eq!(session(&held).await, renewed, "which is kept in turn");
        let mut open = 1;
        for _ in 0..50 {
            open = sqlx::query_scalar::<_, i64>(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
            )
            .bind(first)
            .fetch_one(&pool)
            .await
            .expect("sessions");
            if open == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(open, 0, "the old session was closed, not kept in the pool");
    }
}
