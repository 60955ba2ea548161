//! The store's conformance suite: every check is written once against `&Store` and runs on
//! SQLite (a temporary file) and on PostgreSQL (a fresh database on the server at
//! `DATABASE_URL`, default `postgres://postgres@127.0.0.1:5432/postgres`, dropped afterwards),
//! and on Citus (a fresh database on every node of the cluster whose coordinator
//! `MISSIVE_CITUS_URL` names, distributed by `deploy/citus/distribute.sql`; skipped unset).

#[path = "../support/citus.rs"]
mod citus_cluster;
mod events;
mod matches;
mod on_postgres;
mod outbox;
mod turns;

use std::collections::HashMap;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use chrono::{TimeZone, Utc};
use futures::FutureExt;
use missive_store::{
    Appended, Attempt, ChainCheck, DeliveryKey, GENESIS_HASH, MatchFilter, MatchId, MatchStatus,
    MatchUpdate, NOTIFY_CHANNEL, NewEvent, NewMatch, Notice, Notification, NotificationKind,
    PendingTurn, REMOVED, Reminder, SeatRecord, Snapshot, Store, StoreError, StoreOptions,
    canonical_bytes, event_hash, truncate_to_micros,
};
use serde_json::json;
use sqlx::Connection;

/// A store on a throwaway database, and what it takes to tamper with it and clean it up.
struct Harness {
    store: Store,
    url: String,
    cleanup: Cleanup,
}

enum Cleanup {
    Sqlite(std::path::PathBuf),
    Postgres {
        admin_url: String,
        name: String,
    },
    /// The database on every node of a Citus cluster, coordinator first.
    Citus {
        nodes: Vec<sqlx::postgres::PgConnectOptions>,
        name: String,
    },
}

const SNAPSHOT_EVERY: u64 = 5;

fn options() -> StoreOptions {
    StoreOptions {
        snapshot_every: SNAPSHOT_EVERY,
        max_connections: 8,
        ..StoreOptions::default()
    }
}

impl Harness {
    async fn sqlite() -> Result<Harness> {
        let path = std::env::temp_dir().join(format!("missive-store-{}.db", uuid::Uuid::new_v4()));
        let url = format!("sqlite://{}", path.display());
        let store = Store::connect(&url, options()).await?;
        Ok(Harness {
            store,
            url,
            cleanup: Cleanup::Sqlite(path),
        })
    }

    async fn postgres() -> Result<Harness> {
        Harness::postgres_with(options()).await
    }

    async fn postgres_with(options: StoreOptions) -> Result<Harness> {
        let admin_url = std::env::var("DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
        let name = format!("missive_test_{}", uuid::Uuid::new_v4().simple());
        let mut admin = sqlx::PgConnection::connect(&admin_url)
            .await
            .with_context(|| format!("PostgreSQL at {admin_url} (is it running?)"))?;
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await?;
        admin.close().await?;
        let (base, _) = admin_url
            .rsplit_once('/')
            .context("DATABASE_URL has no database name")?;
        let url = format!("{base}/{name}");
        let store = Store::connect(&url, options).await?;
        Ok(Harness {
            store,
            url,
            cleanup: Cleanup::Postgres { admin_url, name },
        })
    }

    /// A store on a fresh distributed database of the Citus cluster at `MISSIVE_CITUS_URL`;
    /// `None`, after saying so, when it is not set.
    async fn citus() -> Result<Option<Harness>> {
        let Some(admin_url) = citus_cluster::coordinator_url() else {
            return Ok(None);
        };
        let db = citus_cluster::create(&admin_url, options()).await?;
        let store = match Store::connect(&db.url, options()).await {
            Ok(store) => store,
            Err(e) => {
                citus_cluster::drop_database(&db.nodes, &db.name).await?;
                return Err(e.into());
            }
        };
        Ok(Some(Harness {
            store,
            url: db.url,
            cleanup: Cleanup::Citus {
                nodes: db.nodes,
                name: db.name,
            },
        }))
    }

    /// Rewrites one stored event's payload behind the store's back.
    async fn tamper(&self, id: MatchId, seq: u64) -> Result<u64> {
        let affected = match &self.cleanup {
            Cleanup::Sqlite(_) => {
                let mut conn = sqlx::SqliteConnection::connect(&self.url).await?;
                sqlx::query("UPDATE events SET payload = '{\"card\":\"forged\"}' WHERE match_id = ? AND seq = ?")
                    .bind(id.to_string())
                    .bind(seq as i64)
                    .execute(&mut conn)
                    .await?
                    .rows_affected()
            }
            Cleanup::Postgres { .. } | Cleanup::Citus { .. } => {
                let mut conn = sqlx::PgConnection::connect(&self.url).await?;
                sqlx::query("UPDATE events SET payload = '{\"card\":\"forged\"}' WHERE match_id = $1 AND seq = $2")
                    .bind(id)
                    .bind(seq as i64)
                    .execute(&mut conn)
                    .await?
                    .rows_affected()
            }
        };
        Ok(affected)
    }

    /// Records a migration this build does not have, as a newer release would have applied.
    async fn record_unknown_migration(&self) -> Result<()> {
        const SQL: &str = "INSERT INTO _sqlx_migrations \
            (version, description, success, checksum, execution_time) \
            VALUES (20991231000001, 'from a newer release', TRUE, X'00', 0)";
        match &self.cleanup {
            Cleanup::Sqlite(_) => {
                let mut conn = sqlx::SqliteConnection::connect(&self.url).await?;
                sqlx::query(SQL).execute(&mut conn).await?;
            }
            Cleanup::Postgres { .. } | Cleanup::Citus { .. } => {
                let mut conn = sqlx::PgConnection::connect(&self.url).await?;
                sqlx::query(&SQL.replace("X'00'", "'\\x00'::bytea"))
                    .execute(&mut conn)
                    .await?;
            }
        }
        Ok(())
    }

    /// Runs `body` on this harness, then drops its database whatever the body's outcome.
    async fn run(self, body: impl AsyncFnOnce(&Harness) -> Result<()>) -> Result<()> {
        let result = body(&self).await;
        self.finish().await?;
        result
    }

    async fn finish(self) -> Result<()> {
        let Harness { store, cleanup, .. } = self;
        drop(store);
        match cleanup {
            Cleanup::Sqlite(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
            }
            Cleanup::Postgres { admin_url, name } => {
                let mut admin = sqlx::PgConnection::connect(&admin_url).await?;
                sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut admin)
                    .await?;
            }
            Cleanup::Citus { nodes, name } => {
                citus_cluster::drop_database(&nodes, &name).await?;
            }
        }
        Ok(())
    }
}

fn at(second: i64) -> chrono::DateTime<Utc> {
    // Nanoseconds on purpose: the store must truncate them consistently.
    Utc.timestamp_opt(1_700_000_000 + second, 123_456_789)
        .unwrap()
}

fn new_match(seats: u8) -> NewMatch {
    NewMatch {
        id: uuid::Uuid::new_v4(),
        kind: "love-letter".to_owned(),
        config: json!({"target": 4, "variant": {"z": 1, "a": 2}}),
        rules_version: 1,
        seat_count: seats,
        seed: [7; 32],
        seed_hash: [9; 32],
        turn_timeout_secs: Some(86_400),
        turn_reminder_secs: Some(3_600),
        created_at: at(0),
        creator: None,
        start: MatchUpdate::default(),
    }
}

fn created() -> NewEvent {
    NewEvent {
        kind: "created".to_owned(),
        actor: None,
        request_id: None,
        payload: json!({"by": "alice"}),
        at: at(0),
    }
}

fn action(seat: u8, request: &str, n: i64) -> NewEvent {
    NewEvent {
        kind: "action".to_owned(),
        actor: Some(seat),
        request_id: Some(request.to_owned()),
        payload: json!({"play": {"card": format!("C{n}"), "target": 1}, "n": n}),
        at: at(n),
    }
}

/// Appends one action by `seat` for each `n` of `ns` (request `r{n}`, at second `n`) to match
/// `id` at `version`; the version after them.
async fn append_actions(
    store: &Store,
    id: MatchId,
    mut version: u64,
    seat: u8,
    ns: std::ops::RangeInclusive<i64>,
) -> Result<u64> {
    for n in ns {
        let event = action(seat, &format!("r{n}"), n);
        version = store
            .append(id, version, vec![event], MatchUpdate::default())
            .await?
            .events[0]
            .seq;
    }
    Ok(version)
}

/// A match with one event, seat 0 and seat 1 on webhooks A and B, seat 2 on none.
async fn match_with_webhooks(h: &Harness) -> Result<MatchId> {
    let m = new_match(3);
    h.store.create_match(m.clone(), vec![created()]).await?;
    let now = Utc::now();
    h.store
        .set_webhook(m.id, 0, "http://a.example/hook", [1; 32], now)
        .await?;
    h.store
        .set_webhook(m.id, 1, "http://b.example/hook", [2; 32], now)
        .await?;
    Ok(m.id)
}

fn notify(seats: &[u8]) -> MatchUpdate {
    MatchUpdate {
        notify: notes(seats),
        ..MatchUpdate::default()
    }
}

/// "Your turn" notifications with a payload of the test's own: the store keeps the bytes
/// it is given, whatever they say.
fn notes(seats: &[u8]) -> Vec<Notification> {
    seats
        .iter()
        .map(|&seat| Notification {
            seat,
            body: note(seat),
        })
        .collect()
}

fn note(seat: u8) -> String {
    format!("{{\"your turn\":{seat}}}")
}

macro_rules! conformance {
    ($($module:ident :: $check:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $check() -> anyhow::Result<()> {
                    let h = super::Harness::sqlite().await?;
                    h.run(super::$module::$check).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $check() -> anyhow::Result<()> {
                    let h = super::Harness::postgres().await?;
                    h.run(super::$module::$check).await
                }
            )*
        }
        mod citus {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $check() -> anyhow::Result<()> {
                    let Some(h) = super::Harness::citus().await? else {
                        return Ok(());
                    };
                    h.run(super::$module::$check).await
                }
            )*
        }
    };
}

conformance!(
    matches::a_new_match_starts_open_with_empty_seats_and_its_first_events,
    matches::a_creation_answers_the_record_a_read_gives,
    events::appended_events_read_back_exactly_as_returned,
    events::appending_at_a_stale_version_is_a_typed_conflict,
    events::concurrent_retries_of_one_request_store_it_once,
    events::a_retried_request_returns_the_original_events_not_new_ones,
    matches::seat_and_status_updates_apply_with_the_events,
    matches::listing_filters_by_status_and_kind_and_pages_by_id,
    matches::a_players_matches_list_newest_activity_first_and_page_by_it,
    matches::invited_seats_are_kept_and_their_match_is_never_listed,
    events::loading_uses_the_newest_snapshot_of_the_same_rules_version,
    events::a_snapshot_of_another_rules_version_is_ignored_and_rebuilt_from_events,
    events::a_valid_log_verifies_and_its_hashes_recompute_from_the_columns,
    events::an_out_of_band_update_of_one_event_is_named_by_verification,
    events::racing_writers_get_one_event_per_seq_and_a_valid_chain,
    events::appends_made_together_each_get_their_own_outcome,
    turns::pending_turns_are_written_with_their_event_and_replaced_by_the_next,
    turns::due_turns_are_claimed_once_until_their_lease_expires,
    turns::concurrent_claimers_never_share_a_turn,
    turns::a_due_reminder_is_queued_once_for_a_seat_with_a_webhook,
    turns::a_seat_that_stays_awaited_keeps_its_reminder_or_its_absence,
    turns::concurrent_reminder_queuers_queue_each_reminder_once,
    outbox::an_append_queues_notifications_for_the_awaited_seats_with_webhooks,
    outbox::claimed_deliveries_are_leased_retried_and_recorded,
    outbox::deferred_deliveries_come_back_later_unattempted,
    outbox::a_replaced_or_removed_webhook_redirects_or_cancels_its_queue,
    outbox::two_workers_never_claim_the_same_notification,
    events::a_load_from_a_snapshot_lists_the_request_ids_before_it,
    matches::text_a_database_cannot_hold_is_refused_and_nothing_is_written,
    matches::a_timeout_beyond_what_both_backends_store_is_refused,
    events::cancelled_work_leaves_the_store_writable,
    matches::the_server_key_is_stored_once_and_shared,
    matches::a_creators_open_matches_are_counted_up_to_the_limit,
    matches::open_matches_idle_since_a_time_are_found_longest_idle_first,
    events::an_append_the_database_refuses_fails_alone_in_its_batch,
    matches::a_database_a_newer_release_migrated_is_served_but_not_migrated_by_an_older_build,
);
