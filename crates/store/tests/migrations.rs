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
    migrations_before("sqlite", REQUEST_LAST, &old)?;
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
    let rows = old_chain(id, at, &events);
    for row in &rows {
        if row.seq == 1 {
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
        .bind(row.seq as i64)
        .bind(row.request_id)
        .bind(canonical_json(&row.payload))
        .bind(at)
        .bind(row.prev.as_slice())
        .bind(row.hash.as_slice())
        .execute(&mut conn)
        .await?;
    }
    let last = rows.last().context("rows")?.hash;
    sqlx::query("UPDATE matches SET last_hash = ?1 WHERE match_id = ?2")
        .bind(last.as_slice())
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

/// The first PostgreSQL migration whose event rows leave `prev_hash` to the row before and
/// hold their payload as `json`.
const LEANER_ROWS: &str = "20261206000001";

/// A PostgreSQL database written before the leaner rows reads its old rows (their own
/// `prev_hash`, payloads converted from `jsonb`) and the new ones (no `prev_hash`) as one
/// chain, from any point: pages, retries, loads from a snapshot and the whole-log audit.
#[tokio::test]
async fn a_postgres_database_from_before_leaner_rows_reads_old_and_new_rows_as_one_chain()
-> Result<()> {
    let admin_url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
    let name = format!("missive_migrate_{}", uuid::Uuid::new_v4().simple());
    let mut admin = sqlx::PgConnection::connect(&admin_url)
        .await
        .with_context(|| format!("PostgreSQL at {admin_url} (is it running?)"))?;
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await?;
    let (base, _) = admin_url
        .rsplit_once('/')
        .context("DATABASE_URL has no database name")?;
    let url = format!("{base}/{name}");
    let dir = std::env::temp_dir().join(format!("missive-migrate-{}", uuid::Uuid::new_v4()));
    let result = check_leaner_rows(&url, &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&mut admin)
        .await?;
    result
}

async fn check_leaner_rows(url: &str, dir: &std::path::Path) -> Result<()> {
    let old = dir.join("old");
    migrations_before("postgres", LEANER_ROWS, &old)?;
    let mut conn = sqlx::PgConnection::connect(url).await?;
    sqlx::migrate::Migrator::new(old.as_path())
        .await?
        .run(&mut conn)
        .await?;
    let id = uuid::Uuid::new_v4();
    let at = Utc
        .timestamp_opt(1_767_000_000, 0)
        .single()
        .context("a time")?;
    // Four old rows: `created`, then three requests of one event each.
    let old_events = [
        (None, json!({"created": true, "seats": 2})),
        (Some("join-1"), json!({"seat": 0})),
        (Some("join-2"), json!({"seat": 1})),
        (Some("act-1"), json!({"card": "Q", "target": 1})),
    ];
    for row in old_chain(id, at, &old_events) {
        if row.seq == 1 {
            sqlx::query(
                "INSERT INTO matches (match_id, kind, config, rules_version, seat_count, status,
                     seed, seed_hash, version, last_hash, created_at, updated_at)
                 VALUES ($1::uuid, 'test', '{}', 1, 2, 'active', $2, $2, 1, $3, $4, $4)",
            )
            .bind(id.to_string())
            .bind([7u8; 32].as_slice())
            .bind(row.hash.as_slice())
            .bind(at)
            .execute(&mut conn)
            .await?;
        }
        sqlx::query(
            "INSERT INTO events (match_id, seq, kind, actor, request_id, request_last, payload,
                 at, prev_hash, hash)
             VALUES ($1::uuid, $2, 'action', NULL, $3, $4, $5::jsonb, $6, $7, $8)",
        )
        .bind(id.to_string())
        .bind(row.seq as i64)
        .bind(row.request_id)
        .bind(row.request_id.map(|_| row.seq as i64))
        .bind(canonical_json(&row.payload))
        .bind(at)
        .bind(row.prev.as_slice())
        .bind(row.hash.as_slice())
        .execute(&mut conn)
        .await?;
    }
    conn.close().await?;

    let store = Store::connect(url, StoreOptions::default()).await?;
    let act = |request_id: &str, card: &str| NewEvent {
        kind: "action".into(),
        actor: Some(0),
        request_id: Some(request_id.into()),
        payload: json!({"card": card}),
        at,
    };
    // Three new rows: one alone, then a request of two events.
    store
        .append(id, 4, vec![act("act-2", "K")], MatchUpdate::default())
        .await?;
    store
        .append(
            id,
            5,
            vec![act("act-3", "A"), act("act-3", "2")],
            MatchUpdate::default(),
        )
        .await?;

    let mut conn = sqlx::PgConnection::connect(url).await?;
    let (without, kind): (i64, String) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE prev_hash IS NULL),
             (SELECT data_type FROM information_schema.columns
              WHERE table_name = 'events' AND column_name = 'payload')
         FROM events WHERE match_id = $1::uuid",
    )
    .bind(id.to_string())
    .fetch_one(&mut conn)
    .await?;
    conn.close().await?;
    assert_eq!(
        without, 3,
        "the new rows leave prev_hash out, the old keep theirs"
    );
    assert_eq!(kind, "json");

    let whole = store.read_events(id, 0, 100).await?;
    let seqs: Vec<u64> = whole.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(whole[0].prev_hash, [0u8; 32]);
    for pair in whole.windows(2) {
        assert_eq!(pair[1].prev_hash, pair[0].hash, "event {}", pair[1].seq);
    }
    assert_eq!(whole[3].payload, json!({"card": "Q", "target": 1}));
    // Every page, from every point and of every size, is the same chain.
    for after in 0..=7u64 {
        for limit in 1..=3u32 {
            let page = store.read_events(id, after, limit).await?;
            let want: Vec<_> = whole
                .iter()
                .filter(|e| e.seq > after)
                .take(limit as usize)
                .cloned()
                .collect();
            assert_eq!(page, want, "after {after}, at most {limit}");
        }
    }
    // Retries answer with their original events, on old rows and on new.
    let again = store
        .append(id, 7, vec![act("act-1", "Q")], MatchUpdate::default())
        .await?;
    assert!(again.duplicate);
    assert_eq!(again.events, whole[3..4]);
    let again = store
        .append(id, 7, vec![act("act-3", "A")], MatchUpdate::default())
        .await?;
    assert!(again.duplicate);
    assert_eq!(again.events, whole[5..7]);
    // A load from a snapshot on an old row continues into the new ones.
    for seq in [4, 5] {
        store
            .put_snapshot(
                id,
                &Snapshot {
                    seq,
                    rules_version: 1,
                    state: json!({}),
                },
            )
            .await?;
        let loaded = store.load(id, 1).await?;
        assert_eq!(
            loaded.events,
            whole[seq as usize..],
            "from a snapshot at {seq}"
        );
    }
    assert_eq!(
        store.verify_chain(id).await?,
        missive_store::ChainCheck::Valid { events: 7 }
    );
    Ok(())
}

/// Copies the `backend` migrations that come before `first_new` into `old`, to run by hand.
fn migrations_before(backend: &str, first_new: &str, old: &std::path::Path) -> Result<()> {
    std::fs::create_dir_all(old)?;
    let all = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../migrations")
        .join(backend);
    for entry in std::fs::read_dir(all)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".sql") && name.as_str() < first_new {
            std::fs::copy(entry.path(), old.join(&name))?;
        }
    }
    Ok(())
}

/// An event as an earlier build stored it: with its own `prev_hash`.
struct OldRow {
    seq: u64,
    request_id: Option<&'static str>,
    payload: serde_json::Value,
    prev: [u8; 32],
    hash: [u8; 32],
}

/// Events of kind `action` without an actor, at `at`, chained from the genesis hash.
fn old_chain(
    id: uuid::Uuid,
    at: chrono::DateTime<Utc>,
    events: &[(Option<&'static str>, serde_json::Value)],
) -> Vec<OldRow> {
    let mut prev = [0u8; 32];
    let mut rows = Vec::with_capacity(events.len());
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
        rows.push(OldRow {
            seq,
            request_id: *request_id,
            payload: payload.clone(),
            prev,
            hash,
        });
        prev = hash;
    }
    rows
}
