//! Store benchmark on PostgreSQL: append throughput against raw single-row INSERT transactions,
//! and match load time as the log grows (snapshots on).
//!
//! `cargo bench -p missive-store --bench store` (DATABASE_URL selects the server; default
//! `postgres://postgres@127.0.0.1:5432/postgres`; BENCH_APPENDS sets the appends per level,
//! default 3200). It creates a scratch database, prints a table, and drops the database.
//!
//! The raw baseline issues the same number of autocommit INSERTs of a similar row (same columns
//! and sizes as an event) into a plain table, with the same concurrency, in the same run against
//! the same server, each writer on a connection of its own that it keeps (no pool round trips),
//! so `store/raw` is the store's overhead over the cheapest durable write.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use chrono::Utc;
use missive_store::{MatchUpdate, NewEvent, NewMatch, Snapshot, Store, StoreOptions};
use serde_json::json;
use sqlx::postgres::PgPoolOptions;
use sqlx::{Connection, PgPool};

const LEVELS: [usize; 3] = [1, 8, 32];
/// Each level alternates raw and store rounds and compares the summed times, so that the
/// machine's swings (fsync latency on shared disks varies several-fold) hit both sides alike.
const ROUNDS: usize = 4;
/// The last size is the worst case for 10,000: one event short of the next snapshot.
const LOAD_SIZES: [u64; 4] = [10, 1_000, 10_000, 10_099];
const LOAD_REPEATS: usize = 30;

fn payload(n: u64) -> serde_json::Value {
    json!({"play": {"card": format!("Q{n}"), "target": 1, "guess": "Priest"}, "n": n})
}

fn event(n: u64, request: Option<String>) -> NewEvent {
    NewEvent {
        kind: "action".to_owned(),
        actor: Some((n % 4) as u8),
        request_id: request,
        payload: payload(n),
        at: Utc::now(),
    }
}

fn new_match() -> NewMatch {
    NewMatch {
        id: uuid::Uuid::new_v4(),
        kind: "love-letter".to_owned(),
        config: json!({"target": 4}),
        rules_version: 1,
        seat_count: 4,
        seed: [1; 32],
        seed_hash: [2; 32],
        turn_timeout_secs: None,
        turn_reminder_secs: None,
        created_at: Utc::now(),
        creator: None,
        start: MatchUpdate::default(),
    }
}

/// `writers` tasks, each appending `per_writer` single-event requests to its own match.
async fn store_appends(store: &Store, writers: usize, per_writer: usize) -> Result<Duration> {
    let mut ids = Vec::new();
    for _ in 0..writers {
        ids.push(store.create_match(new_match(), vec![]).await?.0.id);
    }
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for id in ids {
        let store = store.clone();
        tasks.spawn(async move {
            for n in 0..per_writer as u64 {
                let request = Some(format!("req-{n}"));
                store
                    .append(id, n, vec![event(n, request)], MatchUpdate::default())
                    .await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(started.elapsed())
}

/// The same number of single-row INSERT transactions, straight through sqlx.
async fn raw_inserts(pool: &PgPool, writers: usize, per_writer: usize) -> Result<Duration> {
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..writers {
        let pool = pool.clone();
        tasks.spawn(async move {
            // Each writer keeps its connection: the cheapest way to issue the inserts.
            let mut conn = pool.acquire().await?;
            let id = uuid::Uuid::new_v4().to_string();
            for n in 0..per_writer as u64 {
                let hash = [n as u8; 32];
                sqlx::query(
                    "INSERT INTO raw_events (match_id, seq, kind, actor, request_id, payload, at,
                         prev_hash, hash)
                     VALUES ($1::uuid, $2, $3, $4, $5, $6::jsonb, $7, $8, $9)",
                )
                .bind(&id)
                .bind(n as i64 + 1)
                .bind("action")
                .bind((n % 4) as i16)
                .bind(format!("req-{n}"))
                .bind(payload(n).to_string())
                .bind(Utc::now())
                .bind(hash.to_vec())
                .bind(hash.to_vec())
                .execute(&mut *conn)
                .await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(started.elapsed())
}

/// A match of `events` events with a snapshot every `snapshot_every`, as a server would write.
async fn long_match(store: &Store, events: u64) -> Result<uuid::Uuid> {
    let (record, _) = store.create_match(new_match(), vec![]).await?;
    let mut version = 0;
    while version < events {
        let batch = (events - version).min(store.snapshot_every());
        let appended = store
            .append(
                record.id,
                version,
                (version..version + batch).map(|n| event(n, None)).collect(),
                MatchUpdate::default(),
            )
            .await?;
        version = appended.events.last().map_or(version, |e| e.seq);
        if version % store.snapshot_every() == 0 {
            // A state of a realistic size: four hands, a deck, discards and scores.
            let state = json!({
                "deck": (0..16).map(|c| format!("card-{c}")).collect::<Vec<_>>(),
                "hands": [["G"], ["P"], ["B"], ["H"]],
                "discards": (0..12).map(|c| format!("card-{c}")).collect::<Vec<_>>(),
                "scores": [1, 0, 2, 1], "turn": version,
            });
            store
                .put_snapshot(
                    record.id,
                    &Snapshot {
                        seq: version,
                        rules_version: 1,
                        state,
                    },
                )
                .await?;
        }
    }
    Ok(record.id)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

async fn run(url: &str) -> Result<()> {
    let appends: usize = std::env::var("BENCH_APPENDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3200);
    let options = StoreOptions {
        max_connections: 32,
        ..StoreOptions::default()
    };
    let store = Store::connect(url, options.clone()).await?;
    let raw = PgPoolOptions::new()
        .max_connections(32)
        .connect(url)
        .await?;
    sqlx::query(
        "CREATE TABLE raw_events (match_id uuid NOT NULL, seq bigint NOT NULL, kind text NOT NULL,
             actor smallint, request_id text, payload jsonb NOT NULL, at timestamptz NOT NULL,
             prev_hash bytea NOT NULL, hash bytea NOT NULL, PRIMARY KEY (match_id, seq))",
    )
    .execute(&raw)
    .await?;
    let fsync: String = sqlx::query_scalar("SHOW fsync").fetch_one(&raw).await?;
    let sync_commit: String = sqlx::query_scalar("SHOW synchronous_commit")
        .fetch_one(&raw)
        .await?;
    println!(
        "PostgreSQL, fsync={fsync}, synchronous_commit={sync_commit}; {appends} appends per level and side, in {ROUNDS} alternating rounds"
    );
    println!();
    println!("| writers | store appends/s | raw inserts/s | store/raw |");
    println!("|--------:|----------------:|--------------:|----------:|");
    for writers in LEVELS {
        let per_writer = (appends / ROUNDS / writers).max(1);
        let total = (per_writer * writers * ROUNDS) as f64;
        let (mut store_time, mut raw_time) = (Duration::ZERO, Duration::ZERO);
        for _ in 0..ROUNDS {
            raw_time += raw_inserts(&raw, writers, per_writer).await?;
            store_time += store_appends(&store, writers, per_writer).await?;
        }
        let store_rate = total / store_time.as_secs_f64();
        let raw_rate = total / raw_time.as_secs_f64();
        println!(
            "| {writers:>7} | {store_rate:>15.0} | {raw_rate:>13.0} | {:>9.2} |",
            store_rate / raw_rate
        );
    }
    println!();
    println!(
        "snapshot every {} events; median of {LOAD_REPEATS} loads",
        store.snapshot_every()
    );
    println!();
    println!("| events | load time | events replayed | vs 10 |");
    println!("|-------:|----------:|----------------:|------:|");
    let mut base = None;
    for size in LOAD_SIZES {
        let id = long_match(&store, size).await?;
        let mut samples = Vec::new();
        let mut replayed = 0;
        for _ in 0..LOAD_REPEATS {
            let started = Instant::now();
            let loaded = store.load(id, 1).await?;
            samples.push(started.elapsed());
            replayed = loaded.events.len();
        }
        let time = median(samples);
        let base = *base.get_or_insert(time);
        println!(
            "| {size:>6} | {:>6.2} ms | {replayed:>15} | {:>5.2} |",
            time.as_secs_f64() * 1e3,
            time.as_secs_f64() / base.as_secs_f64()
        );
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    // `cargo bench` passes `--bench`; `cargo test --benches` would too, so only run when asked.
    if !std::env::args().any(|a| a == "--bench") {
        return Ok(());
    }
    let admin_url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
    let name = format!("missive_bench_{}", uuid::Uuid::new_v4().simple());
    let mut admin = sqlx::PgConnection::connect(&admin_url)
        .await
        .with_context(|| format!("PostgreSQL at {admin_url}"))?;
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await?;
    let (base, _) = admin_url
        .rsplit_once('/')
        .context("DATABASE_URL has no database")?;
    let result = run(&format!("{base}/{name}")).await;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&mut admin)
        .await?;
    result
}
