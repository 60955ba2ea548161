//! Wake-ups from other replicas. Every append on PostgreSQL is announced after its commit while
//! another server listens (see [`missive_store::Listener`]); one task per server listens and
//! wakes this server's watchers of that match, which then read the new events from the store as
//! for any update they were not handed. When the listener (re)connects it may have missed
//! notifications, so it wakes every watcher to re-check; watchers also re-check on a slow timer
//! of their own (`MISSIVE_WATCH_RECHECK_MS`), which covers notifications lost in any other way.
//!
//! SQLite has one server process, whose appends wake its watchers directly: no listener.

use std::sync::Arc;
use std::time::Duration;

use missive_store::Notice;
use tokio::task::JoinHandle;

use crate::service::Service;

/// Longest wait between attempts to reach the database again.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Starts listening, if the store can: PostgreSQL with notifications on.
pub fn spawn(service: &Arc<Service>) -> Option<JoinHandle<()>> {
    let mut listener = service.store().listener()?;
    let service = Arc::clone(service);
    Some(tokio::spawn(async move {
        let mut backoff = Duration::from_millis(50);
        let mut down = false;
        loop {
            match listener.next().await {
                Ok(Notice::Appended { match_id, version }) => service.wake(match_id, version),
                Ok(Notice::Resync) => {
                    if down {
                        tracing::info!("listening for other replicas' appends again");
                    }
                    down = false;
                    backoff = Duration::from_millis(50);
                    service.wake_all();
                }
                Err(e) => {
                    if !down {
                        tracing::warn!(error = %e, "not hearing other replicas' appends; retrying");
                    }
                    down = true;
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }))
}
