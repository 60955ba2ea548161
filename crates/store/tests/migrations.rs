//! The migrations carry stored data over: a SQLite database written before idempotency moved
//! onto the events (`migrations/sqlite/20261202000002_request_last.sql`) still answers its
//! retried requests with their original events once the store has migrated it.

use anyhow::{Context, Result};
use chrono::{TimeZone, Utc};
use missive_store::{
    MatchUpdate, NewEvent, Snapshot, Store, StoreOptions, canonical_bytes, canonical_json,
    event_hash,
};
use serde_json::json;
use sqlx::Connection;

/// The first migration that no longer has the `requests` table.
const REQUEST_LAST: &str = "20261202000002";

#[tokio::test]
async fn a_sqlite_database_from_before_request_last_keeps_its_requests() -> Result<()> {
    let dir = std::env::temp_dir().join(format!("missive-migrate-{}", uuid::Uuid::new_v4()));
    let old = dir.join("old");
    std::fs::create_dir_all(&old)?;
    // The migrations as they were before, run by hand.
    let all = concat!(env!("CARGO_MANIFEST_DIR"), "/../../migrations/sqlite");
    for entry in std::fs::read_dir(all)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".sql") && name.as_str() < REQUEST_LAST {
            std::fs::copy(entry.path(), old.join(&name))?;
        }
    }
    let url = format!("sqlite://{}", dir.join("store.db").display());
    let result = check(&url, &old).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn check(url: &str, old: &std::path::Path) -> Result<()> {
    let id = uuid::Uuid::new_v4();
    let at = Utc
        .timestamp_opt(1_767_000_000, 0)
        .single()
        .context("a time")?;
    // Three events: `created`, then a request of two events (seq 2 and 3), then one more.
    let events = [
        (None, json!({"created": true})),
        (Some("join-1"), json!({"seat": 0})),
        (Some("join-1"), json!({"seat": 1})),
        (Some("act-1"), json!({"card": "Q"})),
    ];
    let mut conn = sqlx::SqliteConnection::connect(&format!("{url}?mode=rwc")).await?;
    sqlx::migrate::Migrator::new(old)
        .await?
        .run(&mut conn)
        .await?;
    let mut prev = [0u8; 32];
    for (i, (request_id, payload)) in events.iter().enumerate() {
        let seq = i as u64 + 1;
        let ev = NewEvent {
            kind: "action".into(),
            actor: None,
            request_id: request_id.map(str::to_owned),
            payload: payload.clone(),
            at,
        };
        let hash = event_hash(&prev, &canonical_bytes(id, seq, &ev));
        if i == 0 {
            sqlx::query(
                "INSERT INTO matches (match_id, kind, config, rules_version, seat_count, status,
                     seed, seed_hash, version, last_hash, created_at, updated_at)
                 VALUES (?1, 'test', '{}', 1, 2, 'active', ?2, ?2, 4, ?2, ?3, ?3)",
            )
            .bind(id.to_string())
            .bind([7u8; 32].as_slice())
            .bind(at)
            .execute(&mut conn)
            .await?;
        }
        sqlx::query(
            "INSERT INTO events (match_id, seq, kind, actor, request_id, payload, at, prev_hash,
                 hash)
             VALUES (?1, ?2, 'action', NULL, ?3, ?4, ?5, ?6, ?7)",
        )
        .bind(id.to_string())
        .bind(seq as i64)
        .bind(*request_id)
        .bind(canonical_json(payload))
        .bind(at)
        .bind(prev.as_slice())
        .bind(hash.as_slice())
        .execute(&mut conn)
        .await?;
        prev = hash;
    }
    sqlx::query("UPDATE matches SET last_hash = ?1 WHERE match_id = ?2")
        .bind(prev.as_slice())
        .bind(id.to_string())
        .execute(&mut conn)
        .await?;
    for (request_id, first, last) in [("join-1", 2, 3), ("act-1", 4, 4)] {
        sqlx::query(
            "INSERT INTO requests (match_id, request_id, first_seq, last_seq)
             VALUES (?1, ?2, ?3, ?4)",
        )
        .bind(id.to_string())
        .bind(request_id)
        .bind(first)
        .bind(last)
        .execute(&mut conn)
        .await?;
    }
    conn.close().await?;

    let store = Store::connect(url, StoreOptions::default()).await?;
    let retry = |request_id: &str| NewEvent {
        kind: "action".into(),
        actor: None,
        request_id: Some(request_id.into()),
        payload: json!({"again": true}),
        at,
    };
    let again = store
        .append(id, 1, vec![retry("join-1")], MatchUpdate::default())
        .await?;
    assert!(again.duplicate, "{again:?}");
    let seqs: Vec<u64> = again.events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        [2, 3],
        "the whole request, from its first event to its last"
    );
    let again = store
        .append(id, 4, vec![retry("act-1")], MatchUpdate::default())
        .await?;
    assert!(again.duplicate);
    assert_eq!(again.events.len(), 1);
    assert_eq!(again.events[0].payload, json!({"card": "Q"}));
    // A load from a snapshot still lists the request ids before it.
    store
        .put_snapshot(
            id,
            &Snapshot {
                seq: 3,
                rules_version: 1,
                state: json!({}),
            },
        )
        .await?;
    let loaded = store.load(id, 1).await?;
    assert_eq!(loaded.requests, [("join-1".to_owned(), 2)]);
    // A new request is a new request, and the chain still verifies.
    let fresh = store
        .append(id, 4, vec![retry("act-2")], MatchUpdate::default())
        .await?;
    assert!(!fresh.duplicate);
    assert_eq!(fresh.events[0].seq, 5);
    assert_eq!(
        store.verify_chain(id).await?,
        missive_store::ChainCheck::Valid { events: 5 }
    );
    Ok(())
}
