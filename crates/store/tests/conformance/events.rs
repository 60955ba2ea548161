//! Events: appends and their races, retries by request id, reads, loads from snapshots, the
//! hash chain, and work cancelled midway.

use super::*;

pub(crate) async fn a_load_from_a_snapshot_lists_the_request_ids_before_it(
    h: &Harness,
) -> Result<()> {
    let m = new_match(2);
    h.store.create_match(m.clone(), vec![created()]).await?;
    for n in 1..=6 {
        h.store
            .append(
                m.id,
                n as u64,
                vec![action(0, &format!("r-{n}"), n)],
                MatchUpdate::default(),
            )
            .await?;
    }
    h.store
        .put_snapshot(
            m.id,
            &Snapshot {
                seq: 5,
                rules_version: 1,
                state: json!({"at": 5}),
            },
        )
        .await?;
    let loaded = h.store.load(m.id, 1).await?;
    ensure!(loaded.snapshot.as_ref().map(|s| s.seq) == Some(5));
    let mut before = loaded.requests.clone();
    before.sort();
    // Events 2..=5 carried r-1..=r-4; event 6 and 7 come as events after the snapshot.
    assert_eq!(
        before,
        (1..=4)
            .map(|n| (format!("r-{n}"), n + 1))
            .collect::<Vec<_>>()
    );
    let after: Vec<_> = loaded
        .events
        .iter()
        .filter_map(|e| e.request_id.clone())
        .collect();
    assert_eq!(after, vec!["r-5".to_owned(), "r-6".to_owned()]);
    // Without a snapshot, every request id is in the events themselves.
    let other = new_match(2);
    h.store.create_match(other.clone(), vec![created()]).await?;
    h.store
        .append(
            other.id,
            1,
            vec![action(0, "x-1", 1)],
            MatchUpdate::default(),
        )
        .await?;
    assert!(h.store.load(other.id, 1).await?.requests.is_empty());
    Ok(())
}

/// Work cancelled part-way (a request dropped, a deadline) at every point of its way, its
/// transactions' `BEGIN` among them: the store goes on writing at once, every append
/// acknowledged is in the log once, and an append cancelled is there at most once.
pub(crate) async fn cancelled_work_leaves_the_store_writable(h: &Harness) -> Result<()> {
    const STEPS: u64 = 1000;
    let m = new_match(2);
    h.store.create_match(m.clone(), vec![created()]).await?;
    let version = async || Ok::<_, StoreError>(h.store.get_match(m.id).await?.version);
    for step in 0..STEPS {
        let now = Utc::now();
        let at_version = version().await?;
        let work = async {
            match step % 4 {
                0 => h.store.load(m.id, 1).await.map(drop),
                1 => h.store.claim_turns(now, now, 10).await.map(drop),
                2 => {
                    let remind = |_: &Reminder| String::new();
                    h.store.queue_reminders(now, 10, remind).await.map(drop)
                }
                _ => {
                    let cut = action(0, &format!("cut-{step}"), 1);
                    let update = MatchUpdate::default();
                    h.store
                        .append(m.id, at_version, vec![cut], update)
                        .await
                        .map(drop)
                }
            }
        };
        let wait = Duration::from_micros(step % 250 * 4);
        match tokio::time::timeout(wait, work).await {
            Err(_) | Ok(Ok(())) | Ok(Err(StoreError::Conflict { .. })) => {}
            Ok(Err(other)) => anyhow::bail!("step {step}: {other:?}"),
        }
        // An append right after, as the next request would make: on a store left inside
        // a transaction it would wait on that transaction's lock.
        let next = async {
            loop {
                let event = action(1, &format!("next-{step}"), 2);
                let update = MatchUpdate::default();
                match h
                    .store
                    .append(m.id, version().await?, vec![event], update)
                    .await
                {
                    // A cancelled append the store was still writing took the version.
                    Err(StoreError::Conflict { .. }) => continue,
                    done => return done,
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(10), next)
            .await
            .with_context(|| format!("step {step}: an append waited 10 s"))??;
    }
    let log = h.store.read_events(m.id, 0, 10_000).await?;
    let mut requests = HashMap::new();
    for event in &log {
        if let Some(request) = &event.request_id {
            *requests.entry(request.as_str()).or_insert(0) += 1;
        }
    }
    for step in 0..STEPS {
        ensure!(requests.get(format!("next-{step}").as_str()) == Some(&1));
        ensure!(
            requests
                .get(format!("cut-{step}").as_str())
                .is_none_or(|n| *n == 1)
        );
    }
    ensure!(log.len() as u64 == version().await?);
    Ok(())
}

pub(crate) async fn an_append_the_database_refuses_fails_alone_in_its_batch(
    h: &Harness,
) -> Result<()> {
    // A request id longer than an index row may be (PostgreSQL refuses it; SQLite takes
    // it): among concurrent appends of other matches, only that one may fail.
    const MATCHES: usize = 24;
    let mut ids = Vec::new();
    for _ in 0..MATCHES {
        let m = new_match(2);
        h.store.create_match(m.clone(), vec![created()]).await?;
        ids.push(m.id);
    }
    for round in 0..3 {
        let mut tasks = tokio::task::JoinSet::new();
        for (n, id) in ids.iter().enumerate() {
            let store = h.store.clone();
            let id = *id;
            let request = if n == 5 {
                // Random, so that no compression brings it under the limit.
                let noise: String = (0..600)
                    .map(|_| uuid::Uuid::new_v4().simple().to_string())
                    .collect();
                format!("huge-{round}-{noise}")
            } else {
                format!("r-{round}")
            };
            let version = if n == 5 { 1 } else { 1 + round as u64 };
            tasks.spawn(async move {
                let ev = action(0, &request, round + 1);
                (
                    n,
                    store
                        .append(id, version, vec![ev], MatchUpdate::default())
                        .await,
                )
            });
        }
        while let Some(joined) = tasks.join_next().await {
            let (n, result) = joined?;
            if n != 5 {
                ensure!(result.is_ok(), "match {n}, round {round}: {result:?}");
            }
        }
    }
    Ok(())
}

pub(crate) async fn appended_events_read_back_exactly_as_returned(h: &Harness) -> Result<()> {
    let m = new_match(2);
    h.store.create_match(m.clone(), vec![created()]).await?;
    let first = h
        .store
        .append(
            m.id,
            1,
            vec![action(0, "r1", 1), action(0, "r1b", 2)],
            MatchUpdate::default(),
        )
        .await?;
    assert!(!first.duplicate);
    assert_eq!(
        first.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [2, 3]
    );
    let second = h
        .store
        .append(m.id, 3, vec![action(1, "r2", 3)], MatchUpdate::default())
        .await?;
    let all = h.store.read_events(m.id, 0, 100).await?;
    assert_eq!(all.len(), 4);
    assert_eq!(&all[1..3], first.events.as_slice());
    assert_eq!(all[3], second.events[0]);
    assert_eq!(all[3].prev_hash, all[2].hash);
    // The time is stored to the microsecond, the payload whatever its key order.
    assert_eq!(all[3].at, at(3) - Duration::from_nanos(789));
    assert_eq!(
        all[3].payload,
        json!({"n": 3, "play": {"target": 1, "card": "C3"}})
    );
    assert_eq!(h.store.read_events(m.id, 1, 2).await?, first.events);
    assert!(h.store.read_events(m.id, 4, 10).await?.is_empty());
    assert_eq!(h.store.get_match(m.id).await?.version, 4);
    let missing = uuid::Uuid::new_v4();
    assert!(
        matches!(h.store.read_events(missing, 0, 10).await, Err(StoreError::NotFound(id)) if id == missing)
    );
    assert!(matches!(
        h.store.get_match(missing).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        h.store
            .append(missing, 0, vec![action(0, "x", 1)], MatchUpdate::default())
            .await,
        Err(StoreError::NotFound(_))
    ));
    Ok(())
}

pub(crate) async fn appending_at_a_stale_version_is_a_typed_conflict(h: &Harness) -> Result<()> {
    let m = new_match(2);
    h.store.create_match(m.clone(), vec![created()]).await?;
    h.store
        .append(m.id, 1, vec![action(0, "a", 1)], MatchUpdate::default())
        .await?;
    let stale = h
        .store
        .append(m.id, 1, vec![action(1, "b", 2)], MatchUpdate::default())
        .await;
    assert!(
        matches!(
            stale,
            Err(StoreError::Conflict {
                expected: 1,
                actual: 2
            })
        ),
        "{stale:?}"
    );
    let ahead = h
        .store
        .append(m.id, 5, vec![action(1, "c", 2)], MatchUpdate::default())
        .await;
    assert!(
        matches!(
            ahead,
            Err(StoreError::Conflict {
                expected: 5,
                actual: 2
            })
        ),
        "{ahead:?}"
    );
    assert_eq!(h.store.read_events(m.id, 0, 100).await?.len(), 2);
    Ok(())
}

pub(crate) async fn a_retried_request_returns_the_original_events_not_new_ones(
    h: &Harness,
) -> Result<()> {
    let m = new_match(2);
    h.store.create_match(m.clone(), vec![created()]).await?;
    let mut batch = vec![action(0, "req-1", 1)];
    batch.push(NewEvent {
        kind: "turn".into(),
        actor: None,
        request_id: None,
        payload: json!({"next": 1}),
        at: at(1),
    });
    let original = h
        .store
        .append(m.id, 1, batch.clone(), MatchUpdate::default())
        .await?;
    h.store
        .append(m.id, 3, vec![action(1, "req-2", 2)], MatchUpdate::default())
        .await?;
    // Same request again, at the old version and at the current one: no new event, no error.
    for expected in [1, 4] {
        let retry = h
            .store
            .append(m.id, expected, batch.clone(), MatchUpdate::default())
            .await?;
        assert!(retry.duplicate);
        assert_eq!(retry.events, original.events);
    }
    assert_eq!(h.store.get_match(m.id).await?.version, 4);
    assert_eq!(h.store.read_events(m.id, 0, 100).await?.len(), 4);
    Ok(())
}

pub(crate) async fn concurrent_retries_of_one_request_store_it_once(h: &Harness) -> Result<()> {
    let m = new_match(2);
    h.store.create_match(m.clone(), vec![created()]).await?;
    let second_server = Store::connect(&h.url, options()).await?;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..8 {
        let store = if i % 2 == 0 {
            h.store.clone()
        } else {
            second_server.clone()
        };
        let id = m.id;
        tasks.spawn(async move {
            store
                .append(
                    id,
                    1,
                    vec![action(0, "only-once", 1)],
                    MatchUpdate::default(),
                )
                .await
        });
    }
    let mut outcomes = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        outcomes.push(joined??);
    }
    assert_eq!(outcomes.iter().filter(|a| !a.duplicate).count(), 1);
    let first = &outcomes
        .iter()
        .find(|a| !a.duplicate)
        .context("no winner")?
        .events;
    assert!(outcomes.iter().all(|a| &a.events == first));
    assert_eq!(h.store.get_match(m.id).await?.version, 2);
    Ok(())
}

pub(crate) async fn loading_uses_the_newest_snapshot_of_the_same_rules_version(
    h: &Harness,
) -> Result<()> {
    let m = new_match(2);
    h.store.create_match(m.clone(), vec![created()]).await?;
    assert_eq!(h.store.snapshot_every(), SNAPSHOT_EVERY);
    let mut version = 1;
    for n in 1..=12 {
        version = h
            .store
            .append(
                m.id,
                version,
                vec![action(0, &format!("r{n}"), n)],
                MatchUpdate::default(),
            )
            .await?
            .events[0]
            .seq;
        if version % h.store.snapshot_every() == 0 {
            h.store
                .put_snapshot(
                    m.id,
                    &Snapshot {
                        seq: version,
                        rules_version: 1,
                        state: json!({"folded": version}),
                    },
                )
                .await?;
        }
    }
    let loaded = h.store.load(m.id, 1).await?;
    assert_eq!(loaded.record.version, 13);
    assert_eq!(
        loaded.snapshot,
        Some(Snapshot {
            seq: 10,
            rules_version: 1,
            state: json!({"folded": 10})
        })
    );
    assert_eq!(
        loaded.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [11, 12, 13]
    );
    let snapshot_beyond_the_log = h
        .store
        .put_snapshot(
            m.id,
            &Snapshot {
                seq: 99,
                rules_version: 1,
                state: json!({}),
            },
        )
        .await;
    assert!(snapshot_beyond_the_log.is_err());
    Ok(())
}

pub(crate) async fn a_snapshot_of_another_rules_version_is_ignored_and_rebuilt_from_events(
    h: &Harness,
) -> Result<()> {
    let m = new_match(2);
    h.store.create_match(m.clone(), vec![created()]).await?;
    append_actions(&h.store, m.id, 1, 1, 1..=6).await?;
    h.store
        .put_snapshot(
            m.id,
            &Snapshot {
                seq: 5,
                rules_version: 1,
                state: json!({"old": true}),
            },
        )
        .await?;
    let loaded = h.store.load(m.id, 2).await?;
    assert_eq!(loaded.snapshot, None);
    assert_eq!(
        loaded.events.len(),
        7,
        "a version-2 server replays every event"
    );
    // The version-2 server rebuilds and writes its own snapshot; both versions now find theirs.
    h.store
        .put_snapshot(
            m.id,
            &Snapshot {
                seq: 7,
                rules_version: 2,
                state: json!({"new": true}),
            },
        )
        .await?;
    let v2 = h.store.load(m.id, 2).await?;
    assert_eq!(
        v2.snapshot.map(|s| (s.seq, s.state)),
        Some((7, json!({"new": true})))
    );
    assert!(v2.events.is_empty());
    let v1 = h.store.load(m.id, 1).await?;
    assert_eq!(v1.snapshot.map(|s| s.seq), Some(5));
    assert_eq!(v1.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [6, 7]);
    Ok(())
}

pub(crate) async fn a_valid_log_verifies_and_its_hashes_recompute_from_the_columns(
    h: &Harness,
) -> Result<()> {
    let m = new_match(2);
    h.store.create_match(m.clone(), vec![created()]).await?;
    assert_eq!(
        h.store.verify_chain(m.id).await?,
        ChainCheck::Valid { events: 1 }
    );
    h.store
        .append(
            m.id,
            1,
            vec![action(0, "a", 1), action(0, "b", 2)],
            MatchUpdate::default(),
        )
        .await?;
    assert_eq!(
        h.store.verify_chain(m.id).await?,
        ChainCheck::Valid { events: 3 }
    );
    // An auditor's recomputation, from the documented encoding only.
    let mut prev = GENESIS_HASH;
    for ev in h.store.read_events(m.id, 0, 100).await? {
        let hash = event_hash(&prev, &canonical_bytes(m.id, ev.seq, &ev.to_new()));
        assert_eq!(hash, ev.hash, "seq {}", ev.seq);
        prev = hash;
    }
    Ok(())
}

pub(crate) async fn an_out_of_band_update_of_one_event_is_named_by_verification(
    h: &Harness,
) -> Result<()> {
    let m = new_match(2);
    h.store.create_match(m.clone(), vec![created()]).await?;
    append_actions(&h.store, m.id, 1, 0, 1..=5).await?;
    ensure!(
        h.tamper(m.id, 4).await? == 1,
        "the tampering UPDATE touched no row"
    );
    match h.store.verify_chain(m.id).await? {
        ChainCheck::Broken { seq, reason } => {
            assert_eq!(seq, 4, "{reason}");
            assert!(reason.contains("hash"), "{reason}");
        }
        valid => panic!("tampered log verified: {valid:?}"),
    }
    Ok(())
}

pub(crate) async fn racing_writers_get_one_event_per_seq_and_a_valid_chain(
    h: &Harness,
) -> Result<()> {
    const WRITERS: usize = 32;
    let m = new_match(2);
    h.store.create_match(m.clone(), vec![created()]).await?;
    // Half the writers go through a second store with its own pool: two servers, one database.
    let second_server = Store::connect(&h.url, options()).await?;
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(WRITERS));
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..WRITERS {
        let store = if w % 2 == 0 {
            h.store.clone()
        } else {
            second_server.clone()
        };
        let (start, id) = (start.clone(), m.id);
        tasks.spawn(async move {
            start.wait().await;
            let mut conflicts = 0u32;
            // All writers first try the same seq; losers re-read and try again.
            let mut version = 1;
            loop {
                match store
                    .append(
                        id,
                        version,
                        vec![action(0, &format!("w{w}"), w as i64)],
                        MatchUpdate::default(),
                    )
                    .await
                {
                    Ok(done) => {
                        assert!(!done.duplicate);
                        return Ok::<_, StoreError>((done.events[0].seq, conflicts));
                    }
                    Err(StoreError::Conflict { actual, .. }) => {
                        conflicts += 1;
                        version = actual;
                    }
                    Err(e) => return Err(e),
                }
            }
        });
    }
    let mut seqs = Vec::new();
    let mut conflicts = 0;
    while let Some(joined) = tasks.join_next().await {
        let (seq, c) = joined??;
        seqs.push(seq);
        conflicts += c;
    }
    seqs.sort();
    assert_eq!(seqs, (2..2 + WRITERS as u64).collect::<Vec<_>>());
    assert!(conflicts > 0, "the writers never actually raced");
    let events = h.store.read_events(m.id, 0, 1000).await?;
    assert_eq!(
        events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=1 + WRITERS as u64).collect::<Vec<_>>()
    );
    assert_eq!(
        h.store.verify_chain(m.id).await?,
        ChainCheck::Valid {
            events: 1 + WRITERS as u64
        }
    );
    Ok(())
}

/// Many appends at once, as a busy server makes them (on PostgreSQL they share statements):
/// each is answered for itself. Appends to distinct matches all land; of eight racing for
/// one seq exactly one wins and the rest get conflicts; a retried request id is a duplicate;
/// only the append whose seat has a webhook says it queued a notification.
pub(crate) async fn appends_made_together_each_get_their_own_outcome(h: &Harness) -> Result<()> {
    const DISTINCT: usize = 24;
    const RACERS: usize = 8;
    let mut distinct = Vec::new();
    for _ in 0..DISTINCT {
        let m = new_match(2);
        h.store.create_match(m.clone(), vec![created()]).await?;
        distinct.push(m.id);
    }
    let contested = new_match(2);
    h.store
        .create_match(contested.clone(), vec![created()])
        .await?;
    let retried = new_match(2);
    h.store
        .create_match(retried.clone(), vec![created()])
        .await?;
    let original = h
        .store
        .append(
            retried.id,
            1,
            vec![action(0, "again", 1)],
            MatchUpdate::default(),
        )
        .await?;
    let hooked = match_with_webhooks(h).await?;
    let before = h.store.group_commit();

    let start = std::sync::Arc::new(tokio::sync::Barrier::new(DISTINCT + RACERS + 2));
    let mut tasks = tokio::task::JoinSet::new();
    let spawn = |tasks: &mut tokio::task::JoinSet<_>,
                 name: String,
                 id: MatchId,
                 version: u64,
                 event: NewEvent,
                 update: MatchUpdate| {
        let (store, start) = (h.store.clone(), start.clone());
        tasks.spawn(async move {
            start.wait().await;
            (name, store.append(id, version, vec![event], update).await)
        });
    };
    for (i, &id) in distinct.iter().enumerate() {
        // Seat 1 of these matches has no webhook: nothing to queue.
        let update = notify(&[1]);
        spawn(
            &mut tasks,
            format!("distinct {i}"),
            id,
            1,
            action(0, "d", i as i64),
            update,
        );
    }
    for r in 0..RACERS {
        let event = action(0, &format!("racer {r}"), r as i64);
        let update = MatchUpdate::default();
        spawn(
            &mut tasks,
            format!("racer {r}"),
            contested.id,
            1,
            event,
            update,
        );
    }
    let event = action(0, "again", 1);
    spawn(
        &mut tasks,
        "retry".into(),
        retried.id,
        2,
        event,
        MatchUpdate::default(),
    );
    spawn(
        &mut tasks,
        "hooked".into(),
        hooked,
        1,
        action(1, "h", 1),
        notify(&[0, 2]),
    );

    let (mut winners, mut losers) = (0, 0);
    while let Some(joined) = tasks.join_next().await {
        let (name, outcome) = joined?;
        match (name.as_str(), outcome) {
            (n, Ok(done)) if n.starts_with("distinct") => {
                ensure!(!done.duplicate && done.events[0].seq == 2, "{n}: {done:?}");
                ensure!(!done.webhooks_queued, "{n}: no webhook, nothing queued");
            }
            (n, Ok(done)) if n.starts_with("racer") => {
                ensure!(!done.duplicate && done.events[0].seq == 2, "{n}: {done:?}");
                winners += 1;
            }
            (
                n,
                Err(StoreError::Conflict {
                    expected: 1,
                    actual: 2,
                }),
            ) if n.starts_with("racer") => {
                losers += 1;
            }
            ("retry", Ok(done)) => {
                ensure!(done.duplicate, "a retried request is not stored twice");
                ensure!(done.events == original.events, "{done:?}");
            }
            ("hooked", Ok(done)) => ensure!(done.webhooks_queued, "seat 0 has a webhook"),
            (n, other) => anyhow::bail!("{n}: unexpected {other:?}"),
        }
    }
    assert_eq!((winners, losers), (1, RACERS - 1));
    if let (Some(before), Some(after)) = (before, h.store.group_commit()) {
        // PostgreSQL (not Citus): the burst's 34 appends shared statements.
        let (statements, rows) = (
            after.statements - before.statements,
            after.rows - before.rows,
        );
        ensure!(
            rows >= 34 && statements < rows,
            "{rows} appends in {statements} statements"
        );
    }
    for id in distinct.iter().chain([&contested.id, &hooked]) {
        assert_eq!(
            h.store.verify_chain(*id).await?,
            ChainCheck::Valid { events: 2 }
        );
    }
    assert_eq!(
        h.store.verify_chain(retried.id).await?,
        ChainCheck::Valid { events: 2 }
    );
    assert_eq!(h.store.deliveries(hooked, None, 10).await?.len(), 1);
    Ok(())
}
