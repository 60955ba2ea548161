//! The archiver: moves the logs of matches that ended a while ago into one compressed row each
//! ([`missive_store::Store::archive_finished`]), and packs the older events of matches still
//! being played into compressed blocks ([`missive_store::Store::pack_live`]), in every replica.
//!
//! A finished match is read far less than it was written, but its events are most of the
//! database: archived, an event takes about a seventh of the room. Reads, retried requests and
//! audits answer exactly as before, so the wait is only there to keep the last act's retries
//! and the final views on the cheaper rows. A live match's newest events stay rows, for the
//! same reason. Replicas archive and pack disjoint matches; one that dies mid-batch leaves the
//! batch's transaction uncommitted and the matches to the next round.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::service::Service;

/// Matches archived per transaction; a full batch is followed at once by another.
const BATCH: u32 = 64;
/// Live matches looked at per statement of a packing sweep.
const PACK_BATCH: u32 = 256;

/// What the archiver does, and how often.
#[derive(Debug, Clone, Copy)]
pub struct Work {
    /// How often it looks.
    pub poll: Duration,
    /// How long after its end a match is archived; `None`: never.
    pub archive_after: Option<Duration>,
    /// Whether live matches are packed, one sweep of them every `poll`.
    pub pack_live: bool,
}

/// Runs until `stop` resolves, doing `work` every `work.poll`.
pub async fn run(service: Arc<Service>, work: Work, stop: impl Future<Output = ()>) {
    let after = work
        .archive_after
        .map(|after| chrono::Duration::from_std(after).unwrap_or(chrono::Duration::MAX));
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return,
            () = tokio::time::sleep(work.poll) => {}
        }
        if let Some(after) = after {
            archive(&service, after).await;
        }
        if work.pack_live {
            pack(&service).await;
        }
    }
}

/// Archives every match that ended more than `after` ago.
async fn archive(service: &Service, after: chrono::Duration) {
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

/// One sweep over the live matches, packing those with enough event rows.
async fn pack(service: &Service) {
    let mut after = None;
    loop {
        match service.store().pack_live(after, PACK_BATCH).await {
            Ok(sweep) => {
                if sweep.packed > 0 {
                    tracing::debug!(packed = sweep.packed, "packed live matches' older events");
                }
                if sweep.looked_at < PACK_BATCH {
                    return;
                }
                after = sweep.last;
            }
            Err(e) => {
                tracing::warn!(error = %e, "packing live matches failed; retrying later");
                return;
            }
        }
    }
}
