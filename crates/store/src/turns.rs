//! Pending turns: turn deadlines and bot turns, one row per awaited seat the server may have
//! to act for.
//!
//! Rows are written only by appends (and match creation), in the same statement or
//! transaction as the event that makes their seat awaited, through [`MatchUpdate::turns`];
//! each backend's `turns.rs` claims, lists and drops them, and queues reminders. A claim leases
//! rows: on PostgreSQL by reading the due rows without a lock, then leasing each with a
//! one-row update that holds only while it is still due, so replicas claiming at once never get
//! the same row and wait on each other for one row's update at most; on SQLite inside
//! `BEGIN IMMEDIATE`, which serialises claimers. A lease only keeps other claimers away while the claimer acts; acting twice is
//! prevented by the append itself (expected version and request id).
//!
//! This module holds what both backends share: the checks of pending turns before anything is
//! written, and which due reminders become notifications.
//!
//! [`MatchUpdate::turns`]: crate::MatchUpdate::turns

use chrono::{DateTime, Utc};

use crate::rows::{ReminderRow, Time, parse_id, small, unsigned};
use crate::{PendingTurn, Reminder, StoreError};

/// Refuses pending turns for seats the match does not have, or the same seat twice: a caller
/// bug, refused before anything is written.
pub(crate) fn check(turns: &[PendingTurn], seat_count: i16) -> Result<(), StoreError> {
    for (i, t) in turns.iter().enumerate() {
        if i16::from(t.seat) >= seat_count {
            return Err(StoreError::Internal(format!(
                "pending turn for seat {} of a match with {seat_count} seats",
                t.seat
            )));
        }
        if turns[..i].iter().any(|u| u.seat == t.seat) {
            return Err(StoreError::Internal(format!(
                "two pending turns for seat {}",
                t.seat
            )));
        }
    }
    Ok(())
}

/// The outbox rows of reminders, one array per column.
#[derive(Debug, Default)]
pub(crate) struct ReminderColumns {
    pub(crate) match_id: Vec<String>,
    pub(crate) seq: Vec<i64>,
    pub(crate) seat: Vec<i16>,
    pub(crate) url: Vec<String>,
    pub(crate) body: Vec<String>,
    pub(crate) at: Vec<Time>,
}

/// The outbox rows of the reminders in `due` that are still worth sending: the seat has a
/// webhook and its deadline is ahead of `now`. Each payload is `body`'s rendering.
pub(crate) fn reminders(
    due: Vec<ReminderRow>,
    now: DateTime<Utc>,
    body: &(dyn Fn(&Reminder) -> String + Sync),
) -> Result<ReminderColumns, StoreError> {
    let mut c = ReminderColumns::default();
    for row in due {
        let Some(url) = row.url else { continue };
        if row.due_at.0 <= now {
            continue;
        }
        c.body.push(body(&Reminder {
            match_id: parse_id(&row.match_id)?,
            seq: unsigned(row.version, "turn version")?,
            seat: small(row.seat.into(), "turn seat")?,
            due_at: row.due_at.0,
            remind_at: row.remind_at.0,
        }));
        c.match_id.push(row.match_id);
        c.seq.push(row.version);
        c.seat.push(row.seat);
        c.url.push(url);
        c.at.push(row.remind_at);
    }
    Ok(c)
}
