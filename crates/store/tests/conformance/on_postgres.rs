//! What only PostgreSQL does, or what only it can be made to do: refusals of a read-only node,
//! append announcements, archives and packed blocks, transactions cut short, and held
//! connections the database dropped.

use super::*;

/// A write that reaches a node still in recovery (a replica, or a standby that a proxy sends
/// connections to while it is being promoted) is refused with SQLSTATE 25006: the store
/// answers UNAVAILABLE, which clients retry with the same request id, not an internal error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_refused_as_read_only_is_unavailable_not_internal() -> Result<()> {
    let h = Harness::postgres().await?;
    h.run(async |h| {
        let m = new_match(2);
        h.store.create_match(m.clone(), vec![created()]).await?;
        let Cleanup::Postgres { admin_url, name } = &h.cleanup else {
            anyhow::bail!("a PostgreSQL harness");
        };
        // New sessions of the database start read-only, as on a standby; the store's current
        // connections are cut so that it opens new ones.
        let mut admin = sqlx::PgConnection::connect(admin_url).await?;
        sqlx::query(&format!(
            "ALTER DATABASE {name} SET default_transaction_read_only = on"
        ))
        .execute(&mut admin)
        .await?;
        sqlx::query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = $1 AND pid <> pg_backend_pid()",
        )
        .bind(name)
        .execute(&mut admin)
        .await?;
        for n in 0..20 {
            let ev = action(0, &format!("read-only-{n}"), 1);
            match h
                .store
                .append(m.id, 1, vec![ev], MatchUpdate::default())
                .await
            {
                Err(StoreError::Unavailable(message)) if message.contains("read-only") => {
                    return Ok(());
                }
                // A connection the termination cut: also unavailable; try again.
                Err(StoreError::Unavailable(_)) => continue,
                other => anyhow::bail!("a read-only refusal answered {other:?}"),
            }
        }
        anyhow::bail!("no append reached a read-only session")
    })
    .await
}

/// Announcements (PostgreSQL): a store alone on its database, its own listener connected,
/// sends none; once another store's listener is connected, the first store's appends reach it,
/// one made while the sender still believed itself alone included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_are_announced_only_while_another_store_listens() -> Result<()> {
    let h = Harness::postgres().await?;
    h.run(async |h| {
        // Not a store's listener: it hears what is sent, but nobody sends for its sake.
        let mut bystander = sqlx::postgres::PgListener::connect(&h.url).await?;
        bystander.listen(NOTIFY_CHANNEL).await?;
        let mut own = h.store.listener().context("announcements are on")?;
        assert_eq!(own.next().await?, Notice::Resync);
        let m = new_match(2);
        h.store.create_match(m.clone(), vec![created()]).await?;
        let alone = vec![action(0, "alone", 2)];
        h.store
            .append(m.id, 1, alone, MatchUpdate::default())
            .await?;
        let heard = tokio::time::timeout(Duration::from_millis(1500), bystander.recv()).await;
        ensure!(heard.is_err(), "a store alone announced {heard:?}");

        // The sender checked for listeners moments ago; the append right after another
        // store's listener connects is held back, then sent when the sender looks again.
        let other = Store::connect(&h.url, options()).await?;
        let mut theirs = other.listener().context("announcements are on")?;
        assert_eq!(theirs.next().await?, Notice::Resync);
        let heard = vec![action(1, "heard", 3)];
        h.store
            .append(m.id, 2, heard, MatchUpdate::default())
            .await?;
        let notice = tokio::time::timeout(Duration::from_secs(5), theirs.next()).await??;
        assert_eq!(
            notice,
            Notice::Appended {
                match_id: m.id,
                version: 3
            }
        );
        let sent = tokio::time::timeout(Duration::from_secs(1), bystander.recv()).await??;
        assert_eq!(sent.payload(), format!("{}:3", m.id));
        Ok(())
    })
    .await
}

/// The request index (PostgreSQL) keys a request id by 64 bits of its MD5: two ids of one match
/// with the same key cannot both be stored, and the second is refused as invalid (not retried as
/// a lost race), with nothing written, through the group commit and the plain insert alike; the
/// first still answers its retries. A 64-bit collision is beyond a test's reach, so the key
/// function is replaced here, before the match has an event, by one that keys an id by its
/// length.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_id_whose_index_key_another_holds_is_refused_and_nothing_is_written() -> Result<()>
{
    let h = Harness::postgres().await?;
    h.run(async |h| {
        let mut conn = sqlx::PgConnection::connect(&h.url).await?;
        sqlx::query(
            "CREATE OR REPLACE FUNCTION request_key(request_id text) RETURNS bigint
                 LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
                 AS $$ SELECT length(request_id)::bigint $$",
        )
        .execute(&mut conn)
        .await?;
        conn.close().await?;
        let m = new_match(2);
        h.store.create_match(m.clone(), vec![created()]).await?;
        h.store
            .append(m.id, 1, vec![action(0, "aaaa", 1)], MatchUpdate::default())
            .await?;
        // "bbbb" has the key of "aaaa": alone (group commit), then as a two-event request.
        for events in [
            vec![action(1, "bbbb", 2)],
            vec![action(1, "bbbb", 2), action(1, "bbbb", 3)],
        ] {
            match h
                .store
                .append(m.id, 2, events, MatchUpdate::default())
                .await
            {
                Err(StoreError::Invalid(message)) if message.contains("another request id") => {}
                other => anyhow::bail!("a request id with a taken key answered {other:?}"),
            }
        }
        let log = h.store.read_events(m.id, 0, 10).await?;
        assert_eq!(log.len(), 2, "nothing written: {log:?}");
        let again = h
            .store
            .append(m.id, 2, vec![action(0, "aaaa", 1)], MatchUpdate::default())
            .await?;
        assert!(again.duplicate);
        assert_eq!(again.events, log[1..]);
        let other = h
            .store
            .append(m.id, 2, vec![action(1, "ccccc", 2)], MatchUpdate::default())
            .await?;
        assert!(!other.duplicate);
        assert_eq!(other.events[0].seq, 3);
        Ok(())
    })
    .await
}

/// Archiving (PostgreSQL): a match that ended has its event rows and snapshots replaced by one
/// compressed row, and every read, retry and audit answers exactly as it did from the rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archived_match_answers_reads_retries_and_audits_as_before() -> Result<()> {
    let h = Harness::postgres().await?;
    h.run(async |h| {
        let ended = new_match(2);
        h.store.create_match(ended.clone(), vec![created()]).await?;
        // A request of two events, then single ones, a snapshot, and the last act ends it.
        let two = vec![
            action(0, "req-1", 1),
            NewEvent {
                kind: "turn".into(),
                actor: None,
                request_id: None,
                payload: json!({"next": 1, "note": "ünïcode ✓"}),
                at: at(1),
            },
        ];
        h.store
            .append(ended.id, 1, two.clone(), MatchUpdate::default())
            .await?;
        for n in 2..=8 {
            h.store
                .append(
                    ended.id,
                    n + 1,
                    vec![action((n % 2) as u8, &format!("req-{n}"), n as i64)],
                    MatchUpdate::default(),
                )
                .await?;
        }
        h.store
            .put_snapshot(
                ended.id,
                &Snapshot {
                    seq: 6,
                    rules_version: 1,
                    state: json!({"at": 6}),
                },
            )
            .await?;
        let last = action(1, "req-last", 9);
        let finish = MatchUpdate {
            status: Some(MatchStatus::Finished),
            ..MatchUpdate::default()
        };
        h.store
            .append(ended.id, 10, vec![last.clone()], finish.clone())
            .await?;
        // Still being played, and ended too recently: neither is archived.
        let playing = new_match(2);
        h.store
            .create_match(playing.clone(), vec![created()])
            .await?;
        let recent = new_match(2);
        h.store
            .create_match(recent.clone(), vec![created()])
            .await?;
        let mut recent_end = action(0, "recent", 1);
        recent_end.at = Utc::now() + chrono::Duration::days(1);
        h.store
            .append(recent.id, 1, vec![recent_end], finish.clone())
            .await?;

        let record = h.store.get_match(ended.id).await?;
        let events = h.store.read_events(ended.id, 0, 1000).await?;
        let page = h.store.read_events(ended.id, 3, 4).await?;
        let loaded = h.store.load(ended.id, 1).await?;
        assert_eq!(events.len(), 11);
        assert!(loaded.snapshot.is_some(), "the snapshot is used before");

        let cutoff = Utc::now() + chrono::Duration::hours(1);
        assert_eq!(h.store.archive_finished(cutoff, 10).await?, 1);
        assert_eq!(
            h.store.archive_finished(cutoff, 10).await?,
            0,
            "archived once"
        );

        let mut db = sqlx::PgConnection::connect(&h.url).await?;
        let (rows, snapshots, archives): (i64, i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM events WHERE match_id = $1::uuid),
                (SELECT count(*) FROM snapshots WHERE match_id = $1::uuid),
                (SELECT count(*) FROM archives WHERE match_id = $1::uuid)",
        )
        .bind(ended.id.to_string())
        .fetch_one(&mut db)
        .await?;
        assert_eq!(
            (rows, snapshots, archives),
            (0, 0, 1),
            "the rows became one archive"
        );

        // Reads, from a store that has not seen the match too.
        let cold = Store::connect(&h.url, options()).await?;
        for store in [&h.store, &cold] {
            assert_eq!(store.get_match(ended.id).await?, record);
            assert_eq!(store.read_events(ended.id, 0, 1000).await?, events);
            assert_eq!(store.read_events(ended.id, 3, 4).await?, page);
            assert!(store.read_events(ended.id, 11, 5).await?.is_empty());
            let after = store.load(ended.id, 1).await?;
            assert_eq!(after.record, loaded.record);
            assert_eq!(after.snapshot, None);
            assert_eq!(after.events, events, "every event, no snapshot");
            assert_eq!(
                store.verify_chain(ended.id).await?,
                ChainCheck::Valid { events: 11 }
            );
            // Retries find their original events, whatever version they name.
            for (expected, batch, original) in [
                (1, two.clone(), &events[1..3]),
                (10, vec![last.clone()], &events[10..11]),
                (11, vec![last.clone()], &events[10..11]),
            ] {
                let retry = store
                    .append(ended.id, expected, batch, finish.clone())
                    .await?;
                assert!(retry.duplicate);
                assert_eq!(retry.events, original);
            }
            // Anything new is refused, and writes nothing.
            let refused = store
                .append(
                    ended.id,
                    11,
                    vec![action(0, "late", 12)],
                    MatchUpdate::default(),
                )
                .await;
            assert!(
                matches!(&refused, Err(StoreError::Invalid(m)) if m.contains("archived")),
                "{refused:?}"
            );
            let snapshot = Snapshot {
                seq: 8,
                rules_version: 1,
                state: json!({"at": 8}),
            };
            store.put_snapshot(ended.id, &snapshot).await?;
            assert_eq!(store.load(ended.id, 1).await?.snapshot, None);
        }
        assert_eq!(h.store.read_events(ended.id, 0, 1000).await?, events);
        for (id, count) in [(playing.id, 1), (recent.id, 2)] {
            assert_eq!(h.store.read_events(id, 0, 10).await?.len(), count);
            let (rows,): (i64,) =
                sqlx::query_as("SELECT count(*) FROM events WHERE match_id = $1::uuid")
                    .bind(id.to_string())
                    .fetch_one(&mut db)
                    .await?;
            assert_eq!(rows, count as i64, "not archived");
        }

        // A changed archive is refused, not served.
        sqlx::query(
            "UPDATE archives SET body = set_byte(body, length(body) / 2,
                get_byte(body, length(body) / 2) # 1) WHERE match_id = $1::uuid",
        )
        .bind(ended.id.to_string())
        .execute(&mut db)
        .await?;
        let corrupt = cold.read_events(ended.id, 0, 1000).await;
        assert!(
            matches!(corrupt, Err(StoreError::Corrupt(_))),
            "{corrupt:?}"
        );
        Ok(())
    })
    .await
}

/// Replicas archiving at once take disjoint matches, and every ended match is archived once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_archivers_archive_each_match_once() -> Result<()> {
    let h = Harness::postgres().await?;
    h.run(async |h| {
        let mut ids = Vec::new();
        for n in 0..24 {
            let m = new_match(2);
            h.store.create_match(m.clone(), vec![created()]).await?;
            let status = if n % 3 == 0 {
                MatchStatus::Abandoned
            } else {
                MatchStatus::Finished
            };
            let end = MatchUpdate {
                status: Some(status),
                ..MatchUpdate::default()
            };
            h.store
                .append(m.id, 1, vec![action(0, "end", 1)], end)
                .await?;
            ids.push(m.id);
        }
        let cutoff = Utc::now() + chrono::Duration::hours(1);
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..4 {
            let store = Store::connect(&h.url, options()).await?;
            tasks.spawn(async move {
                let mut total = 0;
                loop {
                    let n = store.archive_finished(cutoff, 3).await?;
                    total += n;
                    if n == 0 {
                        return anyhow::Ok(total);
                    }
                }
            });
        }
        let mut total = 0;
        while let Some(done) = tasks.join_next().await {
            total += done??;
        }
        assert_eq!(total, 24);
        for id in ids {
            let events = h.store.read_events(id, 0, 10).await?;
            assert_eq!(events.len(), 2);
            assert_eq!(
                h.store.verify_chain(id).await?,
                ChainCheck::Valid { events: 2 }
            );
        }
        Ok(())
    })
    .await
}

/// Appends single-event requests `req-{from}..=req-{to}` to a match at version `from - 1`.
async fn act_through(store: &Store, id: MatchId, from: u64, to: u64) -> Result<()> {
    for n in from..=to {
        let event = action((n % 2) as u8, &format!("req-{n}"), n as i64);
        store
            .append(id, n - 1, vec![event], MatchUpdate::default())
            .await?;
    }
    Ok(())
}

/// Event rows and packed blocks of a match.
async fn rows_and_blocks(db: &mut sqlx::PgConnection, id: MatchId) -> Result<(i64, i64)> {
    Ok(sqlx::query_as(
        "SELECT (SELECT count(*) FROM events WHERE match_id = $1::uuid),
            (SELECT count(*) FROM event_blocks WHERE match_id = $1::uuid)",
    )
    .bind(id.to_string())
    .fetch_one(db)
    .await?)
}

/// Every page of the log, from every `after`, at a few sizes.
async fn every_page(
    store: &Store,
    id: MatchId,
    len: u64,
) -> Result<Vec<Vec<missive_store::StoredEvent>>> {
    let mut pages = Vec::new();
    for after in 0..=len + 1 {
        for limit in [1, 3, 1000] {
            pages.push(store.read_events(id, after, limit).await?);
        }
    }
    Ok(pages)
}

/// Packing (PostgreSQL): a live match's older event rows become compressed blocks, never
/// splitting a request, and every read, load, retry, append, audit and archive answers exactly
/// as it did from the rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_packed_live_match_answers_reads_retries_loads_and_audits_as_before() -> Result<()> {
    let h = Harness::postgres().await?;
    h.run(async |h| {
        let m = new_match(2);
        h.store.create_match(m.clone(), vec![created()]).await?;
        // 1 created, 2-3 one request, 4-40 single ones, 41-43 one request, 44-45 single ones.
        let two = vec![
            action(0, "req-2", 2),
            NewEvent {
                kind: "turn".into(),
                actor: None,
                request_id: Some("req-2".into()),
                payload: json!({"next": 1, "note": "ünïcode ✓"}),
                at: at(3),
            },
        ];
        h.store
            .append(m.id, 1, two.clone(), MatchUpdate::default())
            .await?;
        act_through(&h.store, m.id, 4, 40).await?;
        let three: Vec<NewEvent> = (41..=43).map(|n| action(1, "req-41", n)).collect();
        h.store
            .append(m.id, 40, three.clone(), MatchUpdate::default())
            .await?;
        act_through(&h.store, m.id, 44, 45).await?;
        let snapshot = Snapshot {
            seq: 30,
            rules_version: 1,
            state: json!({"at": 30}),
        };
        h.store.put_snapshot(m.id, &snapshot).await?;
        // A match with too few rows to pack, and one that ended (archiving's, not packing's).
        let short = new_match(2);
        h.store.create_match(short.clone(), vec![created()]).await?;
        act_through(&h.store, short.id, 2, 19).await?;

        let events = h.store.read_events(m.id, 0, 1000).await?;
        assert_eq!(events.len(), 45);
        let pages = every_page(&h.store, m.id, 45).await?;
        // Loads with the snapshot (rules version 1) and without (2).
        let loaded = [h.store.load(m.id, 1).await?, h.store.load(m.id, 2).await?];
        assert_eq!(loaded[0].snapshot.as_ref().map(|s| s.seq), Some(30));

        let sweep = h.store.pack_live(None, 100).await?;
        assert_eq!((sweep.looked_at, sweep.packed), (2, 1), "{sweep:?}");
        let again = h.store.pack_live(None, 100).await?;
        assert_eq!(again.packed, 0, "nothing more to pack: {again:?}");
        let mut db = sqlx::PgConnection::connect(&h.url).await?;
        // The block ends before the three-event request, not inside it.
        assert_eq!(rows_and_blocks(&mut db, m.id).await?, (5, 1));
        let (first, last): (i64, i64) = sqlx::query_as(
            "SELECT first_seq, last_seq FROM event_blocks WHERE match_id = $1::uuid",
        )
        .bind(m.id.to_string())
        .fetch_one(&mut db)
        .await?;
        assert_eq!((first, last), (1, 40));
        assert_eq!(rows_and_blocks(&mut db, short.id).await?, (19, 0));

        let cold = Store::connect(&h.url, options()).await?;
        for store in [&h.store, &cold] {
            assert_eq!(every_page(store, m.id, 45).await?, pages);
            for (before, rules) in loaded.iter().zip([1, 2]) {
                let after = store.load(m.id, rules).await?;
                assert_eq!(after.record, before.record);
                assert_eq!(after.snapshot, before.snapshot);
                assert_eq!(after.events, before.events);
                let sorted = |mut r: Vec<(String, u64)>| {
                    r.sort();
                    r
                };
                assert_eq!(sorted(after.requests), sorted(before.requests.clone()));
            }
            assert_eq!(
                store.verify_chain(m.id).await?,
                ChainCheck::Valid { events: 45 }
            );
            // Retries of packed requests, and of a request still in rows, find their originals.
            for (expected, batch, original) in [
                (1, two.clone(), &events[1..3]),
                (20, vec![action(0, "req-21", 21)], &events[20..21]),
                (40, three.clone(), &events[40..43]),
            ] {
                let retry = store
                    .append(m.id, expected, batch, MatchUpdate::default())
                    .await?;
                assert!(retry.duplicate);
                assert_eq!(retry.events, original);
            }
        }
        // A store that has not cached the head checks a packed request id even at the current
        // version: the original, not a second copy.
        let fresh = Store::connect(&h.url, options()).await?;
        let reused = fresh
            .append(
                m.id,
                45,
                vec![action(0, "req-7", 99)],
                MatchUpdate::default(),
            )
            .await?;
        assert!(reused.duplicate);
        assert_eq!(reused.events, &events[6..7]);

        // Play goes on, from either store; a second block follows the first.
        act_through(&h.store, m.id, 46, 50).await?;
        act_through(&cold, m.id, 51, 70).await?;
        let sweep = h.store.pack_live(None, 1).await?;
        let sweep = h.store.pack_live(sweep.last, 1).await?;
        let end = h.store.pack_live(sweep.last, 1).await?;
        assert_eq!(end.looked_at, 0, "the sweep ends");
        assert_eq!(rows_and_blocks(&mut db, m.id).await?, (4, 2));
        let events = h.store.read_events(m.id, 0, 1000).await?;
        assert_eq!(events.len(), 70);
        let pages = every_page(&h.store, m.id, 70).await?;
        let cold = Store::connect(&h.url, options()).await?;
        assert_eq!(every_page(&cold, m.id, 70).await?, pages);
        assert_eq!(
            cold.verify_chain(m.id).await?,
            ChainCheck::Valid { events: 70 }
        );
        let fresh_load = cold.load(m.id, 2).await?;
        assert_eq!(fresh_load.events, events);
        // A snapshot among the rows: the load reads no block's events, but every request id.
        let snapshot = Snapshot {
            seq: 68,
            rules_version: 1,
            state: json!({"at": 68}),
        };
        h.store.put_snapshot(m.id, &snapshot).await?;
        let from_snapshot = cold.load(m.id, 1).await?;
        assert_eq!(from_snapshot.snapshot, Some(snapshot));
        assert_eq!(from_snapshot.events, &events[68..]);
        let mut folded: Vec<(String, u64)> = Vec::new();
        for e in &events[..68] {
            if let Some(r) = &e.request_id
                && !folded.iter().any(|(f, _)| f == r)
            {
                folded.push((r.clone(), e.seq));
            }
        }
        let mut requests = from_snapshot.requests;
        requests.sort();
        folded.sort();
        assert_eq!(requests, folded);
        assert_eq!(
            folded.len(),
            64,
            "created has none; two requests have several events"
        );

        // Archiving takes the blocks with the rows.
        let finish = MatchUpdate {
            status: Some(MatchStatus::Finished),
            ..MatchUpdate::default()
        };
        h.store
            .append(m.id, 70, vec![action(0, "req-end", 71)], finish)
            .await?;
        let events = h.store.read_events(m.id, 0, 1000).await?;
        let cutoff = Utc::now() + chrono::Duration::days(3650);
        assert_eq!(h.store.archive_finished(cutoff, 10).await?, 1);
        assert_eq!(rows_and_blocks(&mut db, m.id).await?, (0, 0));
        let cold = Store::connect(&h.url, options()).await?;
        assert_eq!(cold.read_events(m.id, 0, 1000).await?, events);
        assert_eq!(
            cold.verify_chain(m.id).await?,
            ChainCheck::Valid { events: 71 }
        );
        let retry = cold
            .append(m.id, 1, two.clone(), MatchUpdate::default())
            .await?;
        assert_eq!(retry.events, &events[1..3]);
        Ok(())
    })
    .await
}

/// A changed block is refused, not served; and replicas packing at once never pack one match
/// twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn packing_refuses_changed_blocks_and_concurrent_packers_pack_each_match_once() -> Result<()>
{
    let h = Harness::postgres().await?;
    h.run(async |h| {
        let mut ids = Vec::new();
        for _ in 0..12 {
            let m = new_match(2);
            h.store.create_match(m.clone(), vec![created()]).await?;
            act_through(&h.store, m.id, 2, 30).await?;
            ids.push(m.id);
        }
        let mut logs = Vec::new();
        for id in &ids {
            logs.push(h.store.read_events(*id, 0, 1000).await?);
        }
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..4 {
            let store = Store::connect(&h.url, options()).await?;
            tasks.spawn(async move {
                let (mut packed, mut after) = (0, None);
                loop {
                    let sweep = store.pack_live(after, 5).await?;
                    packed += sweep.packed;
                    after = sweep.last;
                    if sweep.looked_at < 5 {
                        return anyhow::Ok(packed);
                    }
                }
            });
        }
        let mut packed = 0;
        while let Some(done) = tasks.join_next().await {
            packed += done??;
        }
        // Each match packed once (a packer that found it locked or done skipped it).
        assert_eq!(packed, 12);
        let mut db = sqlx::PgConnection::connect(&h.url).await?;
        let cold = Store::connect(&h.url, options()).await?;
        for (id, log) in ids.iter().zip(&logs) {
            assert_eq!(rows_and_blocks(&mut db, *id).await?, (4, 1));
            assert_eq!(&cold.read_events(*id, 0, 1000).await?, log);
            assert_eq!(&cold.read_events(*id, 10, 3).await?, &log[10..13]);
        }

        sqlx::query(
            "UPDATE event_blocks SET body = set_byte(body, length(body) / 2,
                get_byte(body, length(body) / 2) # 1) WHERE match_id = $1::uuid",
        )
        .bind(ids[0].to_string())
        .execute(&mut db)
        .await?;
        for read in [
            cold.read_events(ids[0], 0, 1000).await,
            cold.read_events(ids[0], 5, 2).await,
            cold.load(ids[0], 1).await.map(|l| l.events),
        ] {
            assert!(matches!(read, Err(StoreError::Corrupt(_))), "{read:?}");
        }
        assert!(!matches!(
            cold.verify_chain(ids[0]).await,
            Ok(ChainCheck::Valid { .. })
        ));
        // Nor is a block moved to another place in the log.
        sqlx::query(
            "UPDATE event_blocks SET first_seq = first_seq + 1, last_seq = last_seq + 1
             WHERE match_id = $1::uuid",
        )
        .bind(ids[1].to_string())
        .execute(&mut db)
        .await?;
        let moved = cold.read_events(ids[1], 0, 1000).await;
        assert!(matches!(moved, Err(StoreError::Corrupt(_))), "{moved:?}");
        // The other matches read as before.
        assert_eq!(cold.read_events(ids[2], 0, 1000).await?, logs[2]);
        Ok(())
    })
    .await
}

/// The sessions of the harness's database, other than `admin`'s, in `state`.
async fn sessions_in(admin: &mut sqlx::PgConnection, name: &str, state: &str) -> Result<i64> {
    Ok(sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity
         WHERE datname = $1 AND state = $2 AND pid <> pg_backend_pid()",
    )
    .bind(name)
    .bind(state)
    .fetch_one(admin)
    .await?)
}

/// Fails if a session of the harness's database stays idle in a transaction. What cancelled
/// work left is rolled back as its connection goes back to the pool; this gives that a moment.
async fn no_session_left_in_a_transaction(
    admin: &mut sqlx::PgConnection,
    name: &str,
) -> Result<()> {
    let mut left = i64::MAX;
    for _ in 0..50 {
        left = sessions_in(admin, name, "idle in transaction").await?;
        if left == 0 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    anyhow::bail!("{left} sessions left idle in a transaction")
}

/// Reads held between uses (PostgreSQL keeps a few connections rather than hand each back to
/// the pool): a read cancelled part-way, inside its transaction or not, leaves no session
/// behind in a transaction, and the reads after it are answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_read_leaves_no_session_in_a_transaction() -> Result<()> {
    let h = Harness::postgres().await?;
    h.run(async |h| {
        let m = new_match(2);
        h.store.create_match(m.clone(), vec![created()]).await?;
        for n in 1..=12 {
            let ev = action(0, &format!("held-{n}"), 1);
            h.store
                .append(m.id, n, vec![ev], MatchUpdate::default())
                .await?;
        }
        let Cleanup::Postgres { admin_url, name } = &h.cleanup else {
            anyhow::bail!("a PostgreSQL harness");
        };
        let mut admin = sqlx::PgConnection::connect(admin_url).await?;
        // Cancelled after a few microseconds more each time: before, inside and after the
        // load's transaction (its `BEGIN` among them), and the plain reads' statements; five
        // sweeps, as the moments a cancellation lands at vary from run to run.
        let mut cancelled = 0;
        for step in 0..1500u64 {
            let wait = Duration::from_micros(step % 300 * 7);
            let read = async {
                match step % 3 {
                    0 => h.store.load(m.id, 1).await.map(drop),
                    1 => h.store.get_match(m.id).await.map(drop),
                    _ => h.store.read_events(m.id, 0, 100).await.map(drop),
                }
            };
            match tokio::time::timeout(wait, read).await {
                Err(_) => cancelled += 1,
                Ok(answer) => answer?,
            }
        }
        ensure!(cancelled > 0, "no read was cancelled");
        // Loads cancelled at their first wait, which is for the answer to their `BEGIN`: polled
        // once and dropped if waiting (`now_or_never`; a zero timeout would fire only at the
        // timer's next millisecond tick, by which a quick load is answered). Plain reads after
        // each, as a request that came next would make.
        let mut cut_loads = 0;
        for _ in 0..20 {
            match h.store.load(m.id, 1).now_or_never() {
                None => cut_loads += 1,
                Some(answer) => drop(answer?),
            }
            h.store.get_match(m.id).await?;
            h.store.read_events(m.id, 0, 100).await?;
        }
        ensure!(cut_loads > 0, "no load was cancelled at its first wait");
        no_session_left_in_a_transaction(&mut admin, name).await?;
        let loaded = h.store.load(m.id, 1).await?;
        ensure!(
            loaded.record.version == 13,
            "loaded {:?}",
            loaded.record.version
        );
        ensure!(h.store.read_events(m.id, 0, 100).await?.len() == 13);
        Ok(())
    })
    .await
}

/// The store's own transactions on the pool's connections (the deadline worker's claim, the
/// archiver's, the packer's, and a retry's read of a packed request) cancelled part-way, their
/// `BEGIN` among the moments: no session is left in a transaction for the pool to hand out,
/// and what comes after is written for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_transaction_leaves_no_session_in_a_transaction() -> Result<()> {
    let h = Harness::postgres().await?;
    h.run(async |h| {
        let m = new_match(2);
        h.store.create_match(m.clone(), vec![created()]).await?;
        act_through(&h.store, m.id, 2, 45).await?;
        ensure!(h.store.pack_live(None, 10).await?.packed == 1);
        let original = h.store.read_events(m.id, 20, 1).await?;
        let Cleanup::Postgres { admin_url, name } = &h.cleanup else {
            anyhow::bail!("a PostgreSQL harness");
        };
        let mut admin = sqlx::PgConnection::connect(admin_url).await?;
        // Cancelled a few microseconds later each time, five sweeps, as in the test of reads.
        let mut cancelled = 0;
        for step in 0..1200u64 {
            let wait = Duration::from_micros(step % 240 * 9);
            match tokio::time::timeout(wait, transaction_step(&h.store, m.id, step)).await {
                Err(_) => cancelled += 1,
                Ok(answer) => answer?,
            }
        }
        ensure!(cancelled > 0, "no transaction was cancelled");
        // Each cancelled at its first wait, then a write and a read on the pool's connections,
        // as other requests would make next.
        let mut cut = 0;
        for step in 0..80u64 {
            match transaction_step(&h.store, m.id, step).now_or_never() {
                None => cut += 1,
                Some(answer) => answer?,
            }
            let snapshot = Snapshot {
                seq: 45,
                rules_version: 1,
                state: json!({ "step": step }),
            };
            // A write on a session left in a transaction would hold the row's lock there, and
            // the next one, on another session, would wait for it for good.
            tokio::time::timeout(
                Duration::from_secs(10),
                h.store.put_snapshot(m.id, &snapshot),
            )
            .await
            .context("a snapshot waited 10 s for a lock")??;
            h.store.get_match(m.id).await?;
        }
        ensure!(cut > 0, "no transaction was cancelled at its first wait");
        no_session_left_in_a_transaction(&mut admin, name).await?;
        // The last snapshot was committed: a store of its own reads it.
        let cold = Store::connect(&h.url, options()).await?;
        let loaded = cold.load(m.id, 1).await?;
        ensure!(
            loaded.snapshot.as_ref().map(|s| &s.state) == Some(&json!({ "step": 79 })),
            "loaded {:?}",
            loaded.snapshot
        );
        let again = retry_of_a_packed_request(&h.store, m.id).await?;
        ensure!(again.duplicate && again.events == original);
        ensure!(h.store.read_events(m.id, 0, 100).await?.len() == 45);
        Ok(())
    })
    .await
}

/// One of the store's transactions on the pool's connections, by `step`; see
/// `a_cancelled_transaction_leaves_no_session_in_a_transaction`.
async fn transaction_step(store: &Store, id: MatchId, step: u64) -> Result<(), StoreError> {
    let now = Utc::now();
    match step % 4 {
        0 => store.claim_turns(now, now, 10).await.map(drop),
        1 => store.archive_finished(now, 10).await.map(drop),
        2 => store.pack_live(None, 10).await.map(drop),
        _ => retry_of_a_packed_request(store, id).await.map(drop),
    }
}

/// A retry of match `id`'s request "req-21", packed into a block by then.
async fn retry_of_a_packed_request(store: &Store, id: MatchId) -> Result<Appended, StoreError> {
    let retry = vec![action(1, "req-21", 21)];
    store.append(id, 20, retry, MatchUpdate::default()).await
}

/// Held connections the database cut (a restart, a failover) cost each at most one failed
/// read, answered UNAVAILABLE for the client to retry, and are then opened again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_connections_the_database_cut_are_opened_again() -> Result<()> {
    let h = Harness::postgres().await?;
    h.run(async |h| {
        let m = new_match(2);
        h.store.create_match(m.clone(), vec![created()]).await?;
        let Cleanup::Postgres { admin_url, name } = &h.cleanup else {
            anyhow::bail!("a PostgreSQL harness");
        };
        let mut admin = sqlx::PgConnection::connect(admin_url).await?;
        // Reads at once until both held connections are open: two reads started together may
        // still run one after the other on one connection.
        let mut rounds = 0;
        while sessions_in(&mut admin, name, "idle").await? < 2 {
            rounds += 1;
            ensure!(rounds <= 50, "the held connections never both opened");
            let (a, b, c) = tokio::join!(
                h.store.get_match(m.id),
                h.store.get_match(m.id),
                h.store.get_match(m.id)
            );
            a?;
            b?;
            c?;
        }
        let cut = sqlx::query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = $1 AND pid <> pg_backend_pid()",
        )
        .bind(name)
        .fetch_all(&mut admin)
        .await?
        .len();
        let mut failed = 0;
        for _ in 0..10 {
            match h.store.get_match(m.id).await {
                Ok(record) => ensure!(record.id == m.id),
                Err(StoreError::Unavailable(_)) => failed += 1,
                Err(other) => anyhow::bail!("a cut connection answered {other:?}"),
            }
        }
        // Each cut connection fails one read at most: the held ones and the pool's own.
        ensure!(
            failed <= cut,
            "{failed} reads failed, {cut} connections cut"
        );
        ensure!(
            h.store.get_match(m.id).await.is_ok(),
            "the last read failed"
        );
        Ok(())
    })
    .await
}

/// A pool configured smaller than the connections the group commit holds still serves every
/// other query: the store opens the few it needs beside them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_smaller_than_the_held_connections_still_serves_reads() -> Result<()> {
    let h = Harness::postgres_with(StoreOptions {
        max_connections: 2,
        acquire_timeout: Duration::from_secs(1),
        ..options()
    })
    .await?;
    h.run(async |h| {
        let mut matches = Vec::new();
        for _ in 0..16 {
            let m = new_match(2);
            h.store.create_match(m.clone(), vec![created()]).await?;
            matches.push(m);
        }
        // Single-event appends of many matches at once, so that the group commit writes on
        // every connection it holds.
        for round in 0..3 {
            let mut appends = tokio::task::JoinSet::new();
            for m in &matches {
                let (store, id) = (h.store.clone(), m.id);
                let event = action(0, &format!("{round}-{id}"), round as i64);
                appends.spawn(async move {
                    store
                        .append(id, round + 1, vec![event], MatchUpdate::default())
                        .await
                });
            }
            while let Some(appended) = appends.join_next().await {
                ensure!(!appended??.duplicate);
            }
        }
        for m in &matches {
            ensure!(h.store.get_match(m.id).await?.version == 4);
            ensure!(h.store.read_events(m.id, 0, 10).await?.len() == 4);
        }
        Ok(())
    })
    .await
}

/// A match whose second event, written by `h`'s store, is lost, and another store's written in
/// its place; with a connection to its database.
async fn lose_the_second_event(h: &Harness) -> Result<(NewMatch, sqlx::PgConnection)> {
    let m = new_match(2);
    h.store.create_match(m.clone(), vec![created()]).await?;
    h.store
        .append(m.id, 1, vec![action(0, "lost", 2)], MatchUpdate::default())
        .await?;
    let mut admin = sqlx::PgConnection::connect(&h.url).await?;
    sqlx::query("DELETE FROM events WHERE match_id = $1::uuid AND seq = 2")
        .bind(m.id.to_string())
        .execute(&mut admin)
        .await?;
    sqlx::query(
        "UPDATE matches SET version = 1,
            last_hash = (SELECT hash FROM events WHERE match_id = $1::uuid AND seq = 1)
         WHERE match_id = $1::uuid",
    )
    .bind(m.id.to_string())
    .execute(&mut admin)
    .await?;
    let other = Store::connect(&h.url, options()).await?;
    other
        .append(
            m.id,
            1,
            vec![action(1, "instead", 3)],
            MatchUpdate::default(),
        )
        .await?;
    Ok((m, admin))
}

/// A store remembers the head it last wrote and chains its next append from it without
/// reading. An append that changes the match (here, its pending turns) is one statement that
/// checks that head: when the database no longer holds it (the event was lost and another
/// writer appended in its place), the append is refused as a conflict at the version expected
/// and nothing is written; the caller decides again, and that append chains from the head the
/// database holds. The store itself never writes twice. (A head cached before a connection
/// failure is not trusted at all: see the next test.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_from_a_head_the_database_lost_is_a_conflict_and_the_next_goes_in() -> Result<()>
{
    let h = Harness::postgres().await?;
    h.run(async |h| {
        let (m, _) = lose_the_second_event(h).await?;

        let next = vec![action(0, "next", 4)];
        let turns = MatchUpdate {
            turns: Some(Vec::new()),
            ..MatchUpdate::default()
        };
        let appended = match h.store.append(m.id, 2, next.clone(), turns.clone()).await {
            Err(StoreError::Conflict {
                expected: 2,
                actual: 2,
            }) => {
                ensure!(
                    h.store.get_match(m.id).await?.version == 2,
                    "nothing is written"
                );
                h.store.append(m.id, 2, next, turns).await?
            }
            // A connection failure elsewhere in this process (another test cutting its own)
            // made the store read the head again first: then the append goes in at once.
            Ok(appended) if appended.events[0].seq == 3 => appended,
            other => anyhow::bail!("an append from a lost head answered {other:?}"),
        };
        ensure!(appended.events[0].seq == 3, "{appended:?}");
        let check = h.store.verify_chain(m.id).await?;
        ensure!(check == ChainCheck::Valid { events: 3 }, "{check:?}");
        Ok(())
    })
    .await
}

/// The group commit chains a single-event append from the head this process last wrote,
/// without checking it. After a connection to the database fails (a failover, which may have
/// lost the newest commits), no head cached before is trusted: here the event the store last
/// wrote is lost and another takes its seq while the store's connections are cut, and the
/// store's next append, once the cut is seen, chains from the head the database holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_connection_fails_no_cached_head_is_trusted() -> Result<()> {
    let h = Harness::postgres().await?;
    h.run(async |h| {
        let (m, mut admin) = lose_the_second_event(h).await?;
        let Cleanup::Postgres { name, .. } = &h.cleanup else {
            anyhow::bail!("a PostgreSQL harness");
        };
        sqlx::query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = $1 AND pid <> pg_backend_pid()",
        )
        .bind(name)
        .execute(&mut admin)
        .await?;
        let mut appended = None;
        for _ in 0..20 {
            let next = vec![action(0, "next", 4)];
            match h.store.append(m.id, 2, next, MatchUpdate::default()).await {
                // A connection the termination cut: the store sees it, and is asked again.
                Err(StoreError::Unavailable(_)) => continue,
                other => {
                    appended = Some(other?);
                    break;
                }
            }
        }
        let appended = appended.context("no append went through after the cut")?;
        ensure!(appended.events[0].seq == 3, "{appended:?}");
        let check = h.store.verify_chain(m.id).await?;
        ensure!(check == ChainCheck::Valid { events: 3 }, "{check:?}");
        Ok(())
    })
    .await
}
