//! The archiver: moves the logs of matches that ended a while ago into one compressed row each
//! ([`missive_store::Store::archive_finished`]), in every replica.
//!
//! A finished match is read far less than it was written, but its events are most of the
//! database: archived, an event takes about a seventh of the room. Reads, retried requests and
//! audits answer exactly as before, so the wait is only there to keep the last act's retries
//! and the final views on the cheaper rows. Replicas archive disjoint matches; one that dies
//! mid-batch leaves the batch's transaction uncommitted and the matches to the next round.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::service::Service;

/// Matches archived per transaction; a full batch is followed at once by another.
const BATCH: u32 = 64;

/// Runs until `stop` resolves, archiving matches that ended more than `after` ago; it looks
/// every `after` (at most every minute).
pub async fn run(service: Arc<Service>, after: Duration, stop: impl Future<Output = ()>) {
    let poll = after.min(Duration::from_secs(60));
    let after = chrono::Duration::from_std(after).unwrap_or(chrono::Duration::MAX);
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return,
            () = tokio::time::sleep(poll) => {}
        }
        while let Some(ended_before) = service.clock().now().checked_sub_signed(after) {
            match service.store().archive_finished(ended_before, BATCH).await {
                Ok(archived) => {
                    if archived > 0 {
                        tracing::debug!(archived, "archived ended matches");
                    }
                    if archived < BATCH {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "archiving ended matches failed; retrying later");
                    break;
                }
            }
        }
    }
}
