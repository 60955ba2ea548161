//! Match rows: creation, seats and status, listings, counts, keys, and what the database
//! cannot hold.

use super::*;

pub(crate) async fn text_a_database_cannot_hold_is_refused_and_nothing_is_written(
    h: &Harness,
) -> Result<()> {
    let m = new_match(2);
    h.store.create_match(m.clone(), vec![created()]).await?;
    let mut bad_request = action(0, "r-\0", 1);
    let mut bad_payload = action(0, "r-1", 1);
    bad_payload.payload = json!({"rule": "a\u{0}b"});
    let mut bad_key = action(0, "r-1", 1);
    bad_key.payload = json!({"a\u{0}": 1});
    for ev in [bad_request.clone(), bad_payload, bad_key] {
        let refused = h
            .store
            .append(m.id, 1, vec![ev], MatchUpdate::default())
            .await;
        assert!(
            matches!(refused, Err(StoreError::Invalid(_))),
            "{refused:?}"
        );
    }
    bad_request.request_id = Some("r-1".into());
    let player = MatchUpdate {
        seats: vec![SeatRecord {
            seat: 0,
            player: Some("ann\0".into()),
            ..SeatRecord::default()
        }],
        ..MatchUpdate::default()
    };
    let refused = h
        .store
        .append(m.id, 1, vec![bad_request.clone()], player)
        .await;
    assert!(
        matches!(refused, Err(StoreError::Invalid(_))),
        "{refused:?}"
    );
    assert_eq!(
        h.store.get_match(m.id).await?.version,
        1,
        "nothing was written"
    );
    // The same append, clean, goes in.
    h.store
        .append(m.id, 1, vec![bad_request], MatchUpdate::default())
        .await?;
    Ok(())
}

pub(crate) async fn a_timeout_beyond_what_both_backends_store_is_refused(
    h: &Harness,
) -> Result<()> {
    for secs in [1u32 << 31, u32::MAX] {
        let m = NewMatch {
            turn_timeout_secs: Some(secs),
            ..new_match(2)
        };
        let refused = h.store.create_match(m.clone(), vec![created()]).await;
        assert!(
            matches!(refused, Err(StoreError::Invalid(_))),
            "{refused:?}"
        );
        assert!(matches!(
            h.store.get_match(m.id).await,
            Err(StoreError::NotFound(_))
        ));
    }
    let largest = NewMatch {
        turn_timeout_secs: Some(i32::MAX as u32),
        ..new_match(2)
    };
    h.store
        .create_match(largest.clone(), vec![created()])
        .await?;
    assert_eq!(
        h.store.get_match(largest.id).await?.turn_timeout_secs,
        Some(i32::MAX as u32)
    );
    // Listing reads every row back.
    h.store.list_matches(&MatchFilter::default()).await?;
    h.store.ping().await?;
    Ok(())
}

pub(crate) async fn the_server_key_is_stored_once_and_shared(h: &Harness) -> Result<()> {
    let first = h.store.server_key("k", [1; 32]).await?;
    assert_eq!(first, [1; 32]);
    assert_eq!(
        h.store.server_key("k", [2; 32]).await?,
        [1; 32],
        "the first one stays"
    );
    assert_eq!(h.store.server_key("other", [3; 32]).await?, [3; 32]);
    // Servers racing to store theirs all get one and the same.
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..8u8 {
        let store = h.store.clone();
        tasks.spawn(async move { store.server_key("raced", [n; 32]).await });
    }
    let mut keys = Vec::new();
    while let Some(key) = tasks.join_next().await {
        keys.push(key??);
    }
    keys.dedup();
    assert_eq!(keys.len(), 1, "{keys:?}");
    Ok(())
}

pub(crate) async fn a_creators_open_matches_are_counted_up_to_the_limit(h: &Harness) -> Result<()> {
    let by = |creator: Option<&str>| NewMatch {
        creator: creator.map(str::to_owned),
        ..new_match(2)
    };
    let mut mine = Vec::new();
    for _ in 0..3 {
        let m = by(Some("addr:192.0.2.1"));
        h.store.create_match(m.clone(), vec![created()]).await?;
        mine.push(m.id);
    }
    h.store
        .create_match(by(Some("player:someone-else")), vec![created()])
        .await?;
    h.store.create_match(by(None), vec![created()]).await?;
    let count = |creator: &'static str, limit| h.store.open_by_creator(creator, limit);
    assert_eq!(count("addr:192.0.2.1", 10).await?, 3);
    assert_eq!(
        count("addr:192.0.2.1", 2).await?,
        2,
        "counted up to the limit"
    );
    assert_eq!(count("player:someone-else", 10).await?, 1);
    assert_eq!(count("addr:192.0.2.9", 10).await?, 0);
    // A match that starts no longer counts, nor does one that ends.
    for (id, status) in [
        (mine[0], MatchStatus::Active),
        (mine[1], MatchStatus::Finished),
    ] {
        h.store
            .append(
                id,
                1,
                vec![action(0, &format!("end-{id}"), 1)],
                MatchUpdate {
                    status: Some(status),
                    ..MatchUpdate::default()
                },
            )
            .await?;
    }
    assert_eq!(count("addr:192.0.2.1", 10).await?, 1);
    assert_eq!(
        h.store.creator(mine[2]).await?.as_deref(),
        Some("addr:192.0.2.1")
    );
    Ok(())
}

pub(crate) async fn open_matches_idle_since_a_time_are_found_longest_idle_first(
    h: &Harness,
) -> Result<()> {
    let at = |secs: i64| chrono::Utc::now() - chrono::Duration::seconds(secs);
    let made = |secs| NewMatch {
        created_at: at(secs),
        ..new_match(2)
    };
    let (oldest, older, recent, started) = (made(300), made(200), made(10), made(400));
    for m in [&oldest, &older, &recent, &started] {
        let first = NewEvent {
            at: m.created_at,
            ..created()
        };
        h.store.create_match(m.clone(), vec![first]).await?;
    }
    h.store
        .append(
            started.id,
            1,
            vec![action(0, "start", 1)],
            MatchUpdate {
                status: Some(MatchStatus::Active),
                ..MatchUpdate::default()
            },
        )
        .await?;
    let found = h.store.open_idle_since(at(100), 10).await?;
    let ours: Vec<_> = found
        .iter()
        .filter(|id| [oldest.id, older.id, recent.id, started.id].contains(id))
        .copied()
        .collect();
    assert_eq!(
        ours,
        vec![oldest.id, older.id],
        "idle 100 s or more, oldest first"
    );
    assert_eq!(h.store.open_idle_since(at(100), 1).await?.len(), 1);
    assert!(h.store.creator(oldest.id).await?.is_none());
    Ok(())
}

pub(crate) async fn a_new_match_starts_open_with_empty_seats_and_its_first_events(
    h: &Harness,
) -> Result<()> {
    let m = new_match(3);
    let (record, events) = h.store.create_match(m.clone(), vec![created()]).await?;
    assert_eq!(record.id, m.id);
    assert_eq!(record.kind, "love-letter");
    assert_eq!(record.config, m.config);
    assert_eq!(record.status, MatchStatus::Open);
    assert_eq!(record.version, 1);
    assert_eq!(record.seed_hash, [9; 32]);
    assert_eq!(record.turn_timeout_secs, Some(86_400));
    assert_eq!(record.turn_reminder_secs, Some(3_600));
    assert_eq!(record.created_at, at(0) - Duration::from_nanos(789));
    assert_eq!(
        record.seats,
        (0..3)
            .map(|seat| SeatRecord {
                seat,
                ..SeatRecord::default()
            })
            .collect::<Vec<_>>()
    );
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].seq, 1);
    assert_eq!(events[0].prev_hash, GENESIS_HASH);
    assert_eq!(h.store.get_match(m.id).await?, record);
    assert_eq!(h.store.seed(m.id).await?, [7; 32]);
    let again = h.store.create_match(m.clone(), vec![]).await;
    assert!(
        matches!(again, Err(StoreError::AlreadyExists(id)) if id == m.id),
        "{again:?}"
    );
    Ok(())
}

/// The record a creation answers with is the one a read gives, for a match that starts
/// with seats filled, a status of its own and events later than its creation.
pub(crate) async fn a_creation_answers_the_record_a_read_gives(h: &Harness) -> Result<()> {
    let mut m = new_match(3);
    m.start = MatchUpdate {
        status: Some(MatchStatus::Active),
        seats: vec![
            SeatRecord {
                seat: 0,
                player: Some("bot-0".into()),
                bot: Some("random".into()),
                ..SeatRecord::default()
            },
            SeatRecord {
                seat: 2,
                player: Some("ann".into()),
                token_hash: Some([3; 32]),
                account: Some("player:ann".into()),
                invited: true,
                ..SeatRecord::default()
            },
        ],
        ..MatchUpdate::default()
    };
    let later = NewEvent {
        at: at(5),
        ..action(0, "dealt", 5)
    };
    let (record, events) = h
        .store
        .create_match(m.clone(), vec![created(), later])
        .await?;
    assert_eq!(events.len(), 2);
    assert_eq!(record.version, 2);
    assert_eq!(record.status, MatchStatus::Active);
    assert_eq!(record.updated_at, truncate_to_micros(at(5)));
    assert_eq!(h.store.get_match(m.id).await?, record);
    Ok(())
}

pub(crate) async fn seat_and_status_updates_apply_with_the_events(h: &Harness) -> Result<()> {
    let m = new_match(2);
    h.store.create_match(m.clone(), vec![created()]).await?;
    let bob = SeatRecord {
        seat: 1,
        player: Some("bob".into()),
        token_hash: Some([3; 32]),
        bot: None,
        account: None,
        invited: false,
    };
    let joined = NewEvent {
        kind: "joined".into(),
        actor: Some(1),
        request_id: Some("join-bob".into()),
        payload: json!({"player": "bob"}),
        at: at(1),
    };
    h.store
        .append(
            m.id,
            1,
            vec![joined],
            MatchUpdate {
                status: Some(MatchStatus::Active),
                seats: vec![bob.clone()],
                turns: None,
                notify: Vec::new(),
            },
        )
        .await?;
    let record = h.store.get_match(m.id).await?;
    assert_eq!(record.status, MatchStatus::Active);
    assert_eq!(record.seats[1], bob);
    assert_eq!(
        record.seats[0],
        SeatRecord {
            seat: 0,
            ..SeatRecord::default()
        }
    );
    // The row's last change is the event's own time, so a writer that folds its events
    // knows the row without reading it back.
    assert_eq!(record.updated_at, missive_store::truncate_to_micros(at(1)));
    // A refused append changes neither the seats nor the status.
    let carol = SeatRecord {
        seat: 0,
        player: Some("carol".into()),
        token_hash: Some([4; 32]),
        bot: None,
        account: None,
        invited: false,
    };
    let refused = h
        .store
        .append(
            m.id,
            1,
            vec![action(0, "join-carol", 2)],
            MatchUpdate {
                status: Some(MatchStatus::Finished),
                seats: vec![carol],
                turns: None,
                notify: Vec::new(),
            },
        )
        .await;
    assert!(matches!(refused, Err(StoreError::Conflict { .. })));
    let after = h.store.get_match(m.id).await?;
    assert_eq!(after.status, MatchStatus::Active);
    assert_eq!(after.seats[0].player, None);
    let no_seat = SeatRecord {
        seat: 2,
        ..SeatRecord::default()
    };
    let bad = h
        .store
        .append(
            m.id,
            2,
            vec![],
            MatchUpdate {
                status: None,
                seats: vec![no_seat],
                turns: None,
                notify: Vec::new(),
            },
        )
        .await;
    assert!(matches!(bad, Err(StoreError::Internal(_))), "{bad:?}");
    Ok(())
}

pub(crate) async fn a_players_matches_list_newest_activity_first_and_page_by_it(
    h: &Harness,
) -> Result<()> {
    // Ann takes a seat in three matches (at creation in one, by joining in two), Bob in one.
    let seat = |seat: u8, account: &str| SeatRecord {
        seat,
        player: Some(account.to_uppercase()),
        token_hash: Some([seat; 32]),
        bot: None,
        account: Some(account.to_owned()),
        invited: false,
    };
    let mut created_with_ann = new_match(2);
    created_with_ann.start.seats = vec![seat(0, "ann")];
    h.store
        .create_match(created_with_ann.clone(), vec![created()])
        .await?;
    let joined = |n: i64, account: &str| NewEvent {
        kind: "joined".into(),
        actor: Some(1),
        request_id: Some(format!("join-{account}-{n}")),
        payload: json!({"player": account}),
        at: at(n),
    };
    let mut ids = vec![created_with_ann.id];
    for (n, account) in [(5, "ann"), (3, "ann"), (4, "bob")] {
        let m = new_match(2);
        h.store.create_match(m.clone(), vec![created()]).await?;
        h.store
            .append(
                m.id,
                1,
                vec![joined(n, account)],
                MatchUpdate {
                    seats: vec![seat(1, account)],
                    status: (account == "bob").then_some(MatchStatus::Active),
                    ..MatchUpdate::default()
                },
            )
            .await?;
        ids.push(m.id);
    }
    let record = h.store.get_match(ids[1]).await?;
    assert_eq!(record.seats[1].account.as_deref(), Some("ann"));
    let list = |status, limit, after| async move {
        h.store
            .player_matches(&missive_store::PlayerFilter {
                account: "ann".into(),
                status,
                limit,
                after,
            })
            .await
    };
    let all: Vec<MatchId> = list(None, 0, None).await?.iter().map(|r| r.id).collect();
    // Newest activity first: the join at 5, the join at 3, the creation at 0.
    assert_eq!(all, [ids[1], ids[2], ids[0]]);
    // Paging by the last one's (activity, id) gives each once, in the same order.
    let mut paged = Vec::new();
    let mut after = None;
    loop {
        let page = list(None, 1, after).await?;
        let Some(last) = page.last() else { break };
        after = Some((last.updated_at, last.id));
        paged.extend(page.iter().map(|r| r.id));
    }
    assert_eq!(paged, all);
    // Seats come with the records; the status filter keeps what it names.
    let open = list(Some(MatchStatus::Open), 0, None).await?;
    assert_eq!(open.len(), 3);
    assert!(open.iter().all(|r| r.seats.len() == 2));
    assert!(list(Some(MatchStatus::Active), 0, None).await?.is_empty());
    let bobs = h
        .store
        .player_matches(&missive_store::PlayerFilter {
            account: "bob".into(),
            status: Some(MatchStatus::Active),
            limit: 0,
            after: None,
        })
        .await?;
    assert_eq!(bobs.iter().map(|r| r.id).collect::<Vec<_>>(), [ids[3]]);
    // A seat given up loses its account with it.
    h.store
        .append(
            ids[1],
            2,
            vec![NewEvent {
                kind: "left".into(),
                actor: Some(1),
                request_id: None,
                payload: json!({"seat": 1}),
                at: at(6),
            }],
            MatchUpdate {
                seats: vec![SeatRecord {
                    seat: 1,
                    ..SeatRecord::default()
                }],
                ..MatchUpdate::default()
            },
        )
        .await?;
    let left: Vec<MatchId> = list(None, 0, None).await?.iter().map(|r| r.id).collect();
    assert_eq!(left, [ids[2], ids[0]]);
    Ok(())
}

pub(crate) async fn invited_seats_are_kept_and_their_match_is_never_listed(
    h: &Harness,
) -> Result<()> {
    let listed = |status| async move {
        let filter = MatchFilter {
            status: Some(status),
            ..MatchFilter::default()
        };
        h.store
            .list_matches(&filter)
            .await
            .map(|l| l.iter().map(|r| r.id).collect::<Vec<_>>())
    };
    let public = new_match(2);
    h.store
        .create_match(public.clone(), vec![created()])
        .await?;
    let mut private = new_match(3);
    private.start.seats = vec![SeatRecord {
        seat: 2,
        invited: true,
        ..SeatRecord::default()
    }];
    h.store
        .create_match(private.clone(), vec![created()])
        .await?;
    assert_eq!(listed(MatchStatus::Open).await?, [public.id]);
    let record = h.store.get_match(private.id).await?;
    let invited: Vec<bool> = record.seats.iter().map(|s| s.invited).collect();
    assert_eq!(invited, [false, false, true]);
    // The invited seat is taken: it stays invited, and the match unlisted.
    h.store
        .append(
            private.id,
            1,
            vec![NewEvent {
                kind: "joined".into(),
                actor: Some(2),
                request_id: None,
                payload: json!({"player": "friend"}),
                at: at(1),
            }],
            MatchUpdate {
                seats: vec![SeatRecord {
                    seat: 2,
                    player: Some("friend".into()),
                    token_hash: Some([2; 32]),
                    ..SeatRecord::default()
                }],
                ..MatchUpdate::default()
            },
        )
        .await?;
    let record = h.store.get_match(private.id).await?;
    assert!(record.seats[2].invited);
    assert_eq!(record.seats[2].player.as_deref(), Some("friend"));
    assert_eq!(listed(MatchStatus::Open).await?, [public.id]);
    Ok(())
}

pub(crate) async fn listing_filters_by_status_and_kind_and_pages_by_id(h: &Harness) -> Result<()> {
    let mut ids = Vec::new();
    for i in 0..5 {
        let mut m = new_match(2);
        if i == 4 {
            m.kind = "lopti".into();
        }
        ids.push(m.id);
        h.store.create_match(m.clone(), vec![created()]).await?;
        if i % 2 == 0 {
            let seat = SeatRecord {
                seat: 1,
                player: Some(format!("player-{i}")),
                token_hash: Some([i; 32]),
                bot: None,
                account: None,
                invited: false,
            };
            h.store
                .append(
                    m.id,
                    1,
                    vec![],
                    MatchUpdate {
                        status: Some(MatchStatus::Active),
                        seats: vec![seat],
                        turns: None,
                        notify: Vec::new(),
                    },
                )
                .await?;
        }
    }
    ids.sort();
    let all = h.store.list_matches(&MatchFilter::default()).await?;
    assert_eq!(all.iter().map(|r| r.id).collect::<Vec<_>>(), ids);
    assert!(all.iter().all(|r| r.seats.len() == 2));
    // Each listed match carries its own seats, not a neighbour's.
    for record in &all {
        let get = h.store.get_match(record.id).await?;
        assert_eq!(record.seats, get.seats);
    }
    let taken = all.iter().filter(|r| r.seats[1].player.is_some()).count();
    assert_eq!(taken, 3);
    let active = h
        .store
        .list_matches(&MatchFilter {
            status: Some(MatchStatus::Active),
            ..MatchFilter::default()
        })
        .await?;
    assert_eq!(active.len(), 3);
    let active_ll = h
        .store
        .list_matches(&MatchFilter {
            status: Some(MatchStatus::Active),
            kind: Some("love-letter".into()),
            ..MatchFilter::default()
        })
        .await?;
    assert_eq!(active_ll.len(), 2);
    // Every filter at once, and a kind with a cursor alone.
    let rest = h
        .store
        .list_matches(&MatchFilter {
            status: Some(MatchStatus::Active),
            kind: Some("love-letter".into()),
            after: Some(active_ll[0].id),
            ..MatchFilter::default()
        })
        .await?;
    assert_eq!(
        rest.iter().map(|r| r.id).collect::<Vec<_>>(),
        [active_ll[1].id]
    );
    let by_kind = h
        .store
        .list_matches(&MatchFilter {
            kind: Some("love-letter".into()),
            after: Some(active_ll[0].id),
            ..MatchFilter::default()
        })
        .await?;
    assert!(by_kind.iter().any(|r| r.id == active_ll[1].id));
    assert!(
        by_kind
            .iter()
            .all(|r| r.id > active_ll[0].id && r.kind == "love-letter")
    );
    let page1 = h
        .store
        .list_matches(&MatchFilter {
            limit: 2,
            ..MatchFilter::default()
        })
        .await?;
    let page2 = h
        .store
        .list_matches(&MatchFilter {
            limit: 2,
            after: Some(page1[1].id),
            ..MatchFilter::default()
        })
        .await?;
    assert_eq!(
        page1.iter().chain(&page2).map(|r| r.id).collect::<Vec<_>>(),
        ids[..4]
    );
    Ok(())
}

/// A rolling deploy: a newer release migrated the database; this build's servers still
/// start on it (and serve what they know), while a strict start (`missive migrate`)
/// refuses a schema it does not fully know.
pub(crate) async fn a_database_a_newer_release_migrated_is_served_but_not_migrated_by_an_older_build(
    h: &Harness,
) -> Result<()> {
    h.record_unknown_migration().await?;
    let again = Store::connect(&h.url, options()).await;
    ensure!(again.is_ok(), "a server starts: {:?}", again.err());
    let strict = Store::connect(
        &h.url,
        StoreOptions {
            accept_newer_schema: false,
            ..options()
        },
    )
    .await;
    ensure!(
        strict.is_err(),
        "a strict start refuses a schema it does not know"
    );
    Ok(())
}
