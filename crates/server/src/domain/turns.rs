//! The turn worker: plays the turns the server owes, in every replica, and queues the
//! reminders of deadlines that are near.
//!
//! Pending turns live in the store (see [`missive_store::PendingTurn`]): a human seat's turn
//! deadline, or a bot seat's turn. Each server polls for due ones, claims a batch under a
//! lease (replicas claiming at once get disjoint batches), and plays each through
//! [`Service::play_turn`], which goes through the ordinary action path pinned to the version
//! the seat was awaited after. It wakes at once when this server wrote pending turns, so a
//! match of bots is not paced by the poll interval.
//!
//! Nothing is lost across restarts: a turn is a row written with the event that made it
//! due, and a claim only leases it. A server that dies mid-turn leaves its lease to expire;
//! the turn is then claimed again, and the append's version check and request id make sure
//! it is applied at most once.
//!
//! A reminder is a pending turn's `remind_at`: the store clears it and queues the webhook
//! notification in one transaction, so it is queued at most once whichever replica sees it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tracing::Instrument;

use crate::service::Service;

/// Turns claimed per round trip; a full batch is followed at once by another claim.
const BATCH: u32 = 64;

/// Runs until `stop` resolves; a batch being played is finished first.
pub async fn run(
    service: Arc<Service>,
    poll: Duration,
    lease: Duration,
    stop: impl Future<Output = ()>,
) {
    let lease = chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::seconds(30));
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return,
            () = service.turns_written() => {}
            () = tokio::time::sleep(poll) => {}
        }
        loop {
            let now = service.clock().now();
            let claimed = match service.store().claim_turns(now, now + lease, BATCH).await {
                Ok(claimed) => claimed,
                Err(e) => {
                    tracing::warn!(error = %e, "claiming due turns failed; retrying at the next poll");
                    break;
                }
            };
            let mut full = claimed.len() == BATCH as usize;
            match service
                .store()
                .queue_reminders(now, BATCH, crate::webhooks::turn_reminder_body)
                .await
            {
                Ok(queued) => {
                    crate::metrics::record_reminders(queued);
                    service.wake_webhooks(queued > 0);
                    full |= queued == BATCH;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "queueing reminders failed; retrying at the next poll")
                }
            }
            let mut plays = tokio::task::JoinSet::new();
            for turn in claimed {
                crate::metrics::record_turn_due(turn.bot.is_some());
                let service = service.clone();
                let span = tracing::info_span!("turn", match_id = %turn.match_id,
                    seat = turn.seat, version = turn.version, request_id = tracing::field::Empty);
                plays.spawn(
                    async move {
                        if let Err(e) = service.play_turn(&turn).await {
                            // Left leased: another claim retries it once the lease expires.
                            tracing::warn!(error = %e, "turn not played");
                        }
                    }
                    .instrument(span),
                );
            }
            while plays.join_next().await.is_some() {}
            if !full {
                break;
            }
        }
    }
}
