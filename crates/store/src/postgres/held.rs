//! Connections held between statements. sqlx pings every connection handed back to its pool, one
//! more round trip per use; a [`Connections`] keeps its connections instead, and hands one back
//! to the pool (pinged there, which also rolls back whatever it was left in) only when a
//! statement on it failed or never finished: a cancelled request, a lost database.

use std::sync::{Arc, Mutex};

use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, PgPool, Postgres};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::StoreError;

/// Up to a fixed number of connections taken from the pool and kept between uses.
#[derive(Debug)]
pub(super) struct Connections {
    pool: PgPool,
    /// One permit per free connection.
    pub(super) permits: Arc<Semaphore>,
    /// The free connections; `None` for one that is to be opened again.
    free: Mutex<Vec<Option<PoolConnection<Postgres>>>>,
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
            clean: false,
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
    fn any(self: &Arc<Self>) -> Lease {
        match Arc::clone(&self.permits).try_acquire_owned() {
            Ok(permit) => self.lease(permit),
            Err(_) => Lease {
                connections: Arc::clone(self),
                conn: None,
                permit: None,
                clean: false,
            },
        }
    }
}

/// A connection in use. A held one goes back to the free list when dropped, unless its last
/// statement failed or never finished (then a fresh one is opened next time); one taken from
/// the pool for one use goes back to the pool.
pub(super) struct Lease {
    connections: Arc<Connections>,
    conn: Option<PoolConnection<Postgres>>,
    permit: Option<OwnedSemaphorePermit>,
    clean: bool,
}

impl Lease {
    pub(super) async fn conn(&mut self) -> Result<&mut PgConnection, sqlx::Error> {
        self.clean = false;
        if self.conn.is_none() {
            self.conn = Some(self.connections.pool.acquire().await?);
        }
        match self.conn.as_mut() {
            Some(conn) => Ok(&mut **conn),
            None => Err(sqlx::Error::PoolClosed),
        }
    }

    /// Keeps the connection if `result` says its statements completed.
    pub(super) fn done<T, E>(&mut self, result: &Result<T, E>) {
        self.clean = result.is_ok();
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Some(permit) = self.permit.take() else {
            return;
        };
        let conn = if self.clean { self.conn.take() } else { None };
        self.connections
            .free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(conn);
        drop(permit);
    }
}
