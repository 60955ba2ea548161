//! Connections that may have died together. Connections are not pinged before each use (that
//! doubled the round trips of every query), so a dead one fails the query it is given. When a
//! network cut or a restarted database kills one connection it has usually killed every idle
//! one with it: after any connection fails, each connection last used before that failure is
//! pinged once before its next use, and replaced if the ping fails. A server whose database
//! comes back then serves its next request on a live connection instead of answering
//! UNAVAILABLE once per connection it held; in steady running nothing is pinged. Failures are
//! recorded where driver errors are mapped ([`crate::StoreError`]); PostgreSQL's pool and held
//! connections read them.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sqlx::Connection;
use sqlx::pool::PoolConnectionMetadata;
use sqlx::postgres::PgConnection;

/// When this process started counting; failures are kept as milliseconds after it.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// One more than the millisecond (after [`epoch`]) of the latest connection failure; 0: none.
static LAST_FAILURE: AtomicU64 = AtomicU64::new(0);

/// Records that a connection to the database failed (lost, reset, refused by a server going
/// down), now.
pub(crate) fn connection_failed() {
    let at = u64::try_from(epoch().elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1;
    LAST_FAILURE.fetch_max(at, Ordering::Relaxed);
}

/// Whether a connection last used at `last_used` may have died with the latest failure:
/// it was idle when (or, within the clock's millisecond, just before) a connection failed.
pub(crate) fn suspect(last_used: Instant) -> bool {
    match LAST_FAILURE.load(Ordering::Relaxed) {
        0 => false,
        at => {
            let failed = epoch() + Duration::from_millis(at - 1);
            last_used <= failed + Duration::from_millis(1)
        }
    }
}

/// Whether the pooled connection described by `meta` is fit to hand out: pinged first when
/// [`suspect`]. For the pool's `before_acquire`; a connection that fails is closed by the
/// pool, which hands out another.
pub(crate) async fn check(
    conn: &mut PgConnection,
    meta: PoolConnectionMetadata,
) -> Result<bool, sqlx::Error> {
    let last_used = Instant::now()
        .checked_sub(meta.idle_for)
        .unwrap_or_else(epoch);
    if suspect(last_used) {
        conn.ping().await?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_connections_idle_at_a_failure_are_suspect() {
        let before = Instant::now();
        std::thread::sleep(Duration::from_millis(5));
        connection_failed();
        std::thread::sleep(Duration::from_millis(5));
        let after = Instant::now();
        assert!(suspect(before), "idle when a connection failed");
        assert!(!suspect(after), "used since");
    }
}
