//! The baseline: single-row INSERT transactions (autocommit) into a scratch table as wide as the
//! events table, straight through sqlx, in the server's own database. This is the cheapest
//! durable write the server could make per action.

use std::time::{Duration, Instant};

use anyhow::Result;
use chrono::Utc;
use sqlx::Postgres;
use sqlx::pool::PoolConnection;
use sqlx::postgres::PgPoolOptions;

use crate::stats::Step;

pub(crate) const TABLE: &str = "missive_load_raw";

/// Creates the scratch table (the columns of an event row, keyed like one).
pub(crate) async fn create_table(database_url: &str) -> Result<()> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect(database_url)
        .await?;
    sqlx::query(&format!(
        "CREATE TABLE IF NOT EXISTS {TABLE} (match_id uuid NOT NULL, seq bigint NOT NULL,
             kind text NOT NULL, actor smallint, request_id text, payload jsonb NOT NULL,
             at timestamptz NOT NULL, prev_hash bytea NOT NULL, hash bytea NOT NULL,
             PRIMARY KEY (match_id, seq))"
    ))
    .execute(&pool)
    .await?;
    pool.close().await;
    Ok(())
}

pub(crate) async fn drop_table(database_url: &str) -> Result<()> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect(database_url)
        .await?;
    sqlx::query(&format!("DROP TABLE IF EXISTS {TABLE}"))
        .execute(&pool)
        .await?;
    pool.close().await;
    Ok(())
}

/// `writers` inserting rows for `window` over at most `connections` connections: one task per
/// connection, each keeping its connection (the cheapest way to issue the inserts; with more
/// writers than connections, the rest could only wait for one).
pub(crate) async fn inserts(
    database_url: &str,
    writers: usize,
    connections: u32,
    window: Duration,
) -> Result<Step> {
    let pool = PgPoolOptions::new()
        .max_connections(connections.min(writers as u32).max(1))
        .min_connections(connections.min(writers as u32).max(1))
        .connect(database_url)
        .await?;
    // Open every connection before the window, as the server's warm pool is.
    let mut held = Vec::new();
    for _ in 0..pool.options().get_max_connections() {
        held.push(pool.acquire().await?);
    }
    let deadline = Instant::now() + window;
    let mut tasks = tokio::task::JoinSet::new();
    for conn in held {
        tasks.spawn(writer(conn, deadline));
    }
    let mut step = Step::default();
    while let Some(done) = tasks.join_next().await {
        step.merge(done??);
    }
    step.window = window;
    pool.close().await;
    Ok(step)
}

async fn writer(mut conn: PoolConnection<Postgres>, deadline: Instant) -> Result<Step> {
    let mut step = Step::default();
    let id = uuid::Uuid::new_v4().to_string();
    // A payload the size of a Love Letter action event.
    let payload = r#"{"action":{"play":{"card":"G1","guess":"Priest","target":1}},"seat":0}"#;
    let mut seq = 0i64;
    while Instant::now() < deadline {
        seq += 1;
        let hash = [seq as u8; 32];
        let sent = Instant::now();
        let result = sqlx::query(&format!(
            "INSERT INTO {TABLE} (match_id, seq, kind, actor, request_id, payload, at,
                 prev_hash, hash)
             VALUES ($1::uuid, $2, $3, $4, $5, $6::jsonb, $7, $8, $9)"
        ))
        .bind(&id)
        .bind(seq)
        .bind("action")
        .bind((seq % 2) as i16)
        .bind(format!("{}-{seq}", seq % 2))
        .bind(payload)
        .bind(Utc::now())
        .bind(hash.to_vec())
        .bind(hash.to_vec())
        .execute(&mut *conn)
        .await;
        let done = Instant::now();
        match result {
            Ok(_) if done <= deadline => step.record(done - sent),
            Ok(_) => {}
            Err(e) => step.error(format!("INSERT {e}")),
        }
    }
    Ok(step)
}
