//! Pending turns: written with their events, claimed under a lease, and their reminders.

use super::*;

fn turn(seat: u8, due: i64, bot: Option<&str>) -> PendingTurn {
    PendingTurn {
        seat,
        due_at: at(due),
        remind_at: None,
        bot: bot.map(str::to_owned),
    }
}

/// `(seat, version, due second, bot)` of each pending turn of the match.
async fn pending(h: &Harness, id: MatchId) -> Result<Vec<(u8, u64, i64, Option<String>)>> {
    Ok(h.store
        .turns(id)
        .await?
        .into_iter()
        .map(|t| {
            assert_eq!(t.match_id, id);
            (
                t.seat,
                t.version,
                t.due_at.timestamp() - 1_700_000_000,
                t.bot,
            )
        })
        .collect())
}

pub(crate) async fn pending_turns_are_written_with_their_event_and_replaced_by_the_next(
    h: &Harness,
) -> Result<()> {
    let bot = SeatRecord {
        seat: 1,
        player: Some("bot:random".to_owned()),
        token_hash: None,
        bot: Some("random".to_owned()),
        account: None,
        invited: false,
    };
    let mut m = new_match(3);
    m.start = MatchUpdate {
        status: Some(MatchStatus::Active),
        seats: vec![bot.clone()],
        turns: Some(vec![turn(0, 100, None), turn(1, 1, Some("random"))]),
        notify: Vec::new(),
    };
    let (record, _) = h.store.create_match(m.clone(), vec![created()]).await?;
    assert_eq!(record.status, MatchStatus::Active);
    assert_eq!(record.seats[1], bot);
    assert_eq!(
        record.seats[0],
        SeatRecord {
            seat: 0,
            ..SeatRecord::default()
        }
    );
    assert_eq!(
        pending(h, m.id).await?,
        vec![(0, 1, 100, None), (1, 1, 1, Some("random".to_owned()))]
    );

    // Seat 1 acts; seat 0 stays awaited (the server keeps its deadline), seat 2 becomes
    // awaited: the turns are written as given.
    let update = |turns| MatchUpdate {
        turns,
        ..MatchUpdate::default()
    };
    let next = Some(vec![turn(0, 100, None), turn(2, 300, None)]);
    h.store
        .append(m.id, 1, vec![action(1, "b1", 2)], update(next.clone()))
        .await?;
    assert_eq!(
        pending(h, m.id).await?,
        vec![(0, 2, 100, None), (2, 2, 300, None)]
    );

    // A conflicting append writes no turns; an append without turns leaves them alone.
    let stale = h
        .store
        .append(
            m.id,
            1,
            vec![action(0, "late", 3)],
            update(Some(Vec::new())),
        )
        .await;
    assert!(
        matches!(stale, Err(StoreError::Conflict { .. })),
        "{stale:?}"
    );
    h.store
        .append(m.id, 2, vec![action(0, "a1", 3)], update(None))
        .await?;
    assert_eq!(
        pending(h, m.id).await?,
        vec![(0, 2, 100, None), (2, 2, 300, None)]
    );

    // A seat out of range is refused and changes nothing.
    let bad = h
        .store
        .append(
            m.id,
            3,
            vec![action(0, "a2", 4)],
            update(Some(vec![turn(3, 1, None)])),
        )
        .await;
    assert!(matches!(bad, Err(StoreError::Internal(_))), "{bad:?}");
    assert_eq!(h.store.get_match(m.id).await?.version, 3);

    // `Some(empty)`: the match awaits nobody the server acts for.
    h.store
        .append(m.id, 3, vec![action(0, "a2", 4)], update(Some(Vec::new())))
        .await?;
    assert_eq!(pending(h, m.id).await?, vec![]);
    Ok(())
}

pub(crate) async fn due_turns_are_claimed_once_until_their_lease_expires(
    h: &Harness,
) -> Result<()> {
    let mut ids = Vec::new();
    for due in [10, 20, 1000] {
        let mut m = new_match(2);
        m.start.turns = Some(vec![turn(0, due, None)]);
        h.store.create_match(m.clone(), vec![created()]).await?;
        ids.push(m.id);
    }
    let claim = |now: i64, lease: i64| h.store.claim_turns(at(now), at(lease), 10);
    let first = claim(15, 45).await?;
    assert_eq!(first.len(), 1);
    assert_eq!(
        (first[0].match_id, first[0].seat, first[0].version),
        (ids[0], 0, 1)
    );
    assert_eq!(first[0].lease_until, Some(truncate_to_micros(at(45))));
    assert!(
        claim(16, 46).await?.is_empty(),
        "a leased turn is not claimed again"
    );
    let second = claim(30, 60).await?;
    assert_eq!(
        second.iter().map(|t| t.match_id).collect::<Vec<_>>(),
        vec![ids[1]]
    );
    // The first lease has expired, the second has not; the third turn is not due.
    let again = claim(50, 80).await?;
    assert_eq!(
        again.iter().map(|t| t.match_id).collect::<Vec<_>>(),
        vec![ids[0]]
    );

    // Dropping needs the version the turn is awaited after.
    assert!(!h.store.drop_turn(ids[0], 0, 7).await?);
    assert!(h.store.drop_turn(ids[0], 0, 1).await?);
    assert_eq!(pending(h, ids[0]).await?, vec![]);

    // A new version of a leased turn frees it at once.
    h.store
        .append(
            ids[1],
            1,
            vec![action(1, "x", 2)],
            MatchUpdate {
                turns: Some(vec![turn(0, 20, None)]),
                ..MatchUpdate::default()
            },
        )
        .await?;
    let freed = claim(55, 90).await?;
    assert_eq!(
        freed
            .iter()
            .map(|t| (t.match_id, t.version))
            .collect::<Vec<_>>(),
        vec![(ids[1], 2)]
    );
    assert_eq!(freed[0].due_at, truncate_to_micros(at(20)));
    Ok(())
}

/// Seat `seat`'s deadline at second `due`, reminded at second `remind`.
fn reminded(seat: u8, due: i64, remind: i64) -> PendingTurn {
    PendingTurn {
        remind_at: Some(at(remind)),
        ..turn(seat, due, None)
    }
}

/// An update that makes the match's pending turns exactly `turns`.
/// A reminder's payload, as the test renders it: every field the store hands over.
fn remind(r: &Reminder) -> String {
    json!({
        "match": r.match_id.to_string(),
        "seq": r.seq,
        "seat": r.seat,
        "due": r.due_at.to_rfc3339(),
        "at": r.remind_at.to_rfc3339(),
    })
    .to_string()
}

fn turns(turns: Vec<PendingTurn>) -> MatchUpdate {
    MatchUpdate {
        turns: Some(turns),
        ..MatchUpdate::default()
    }
}

pub(crate) async fn a_due_reminder_is_queued_once_for_a_seat_with_a_webhook(
    h: &Harness,
) -> Result<()> {
    let id = match_with_webhooks(h).await?;
    // Seats 0 and 1 have webhooks, seat 2 has none; seat 1's deadline is already past when
    // its reminder is looked at, so it is not worth sending.
    h.store
        .append(
            id,
            1,
            vec![action(1, "r1", 1)],
            turns(vec![
                reminded(0, 100, 50),
                reminded(1, 60, 40),
                reminded(2, 100, 50),
            ]),
        )
        .await?;
    let stored = h.store.turns(id).await?;
    assert_eq!(
        stored.iter().map(|t| t.remind_at).collect::<Vec<_>>(),
        [50, 40, 50].map(|t| Some(truncate_to_micros(at(t)))),
    );
    assert_eq!(
        h.store.queue_reminders(at(39), 10, remind).await?,
        0,
        "none due yet"
    );
    assert!(h.store.deliveries(id, None, 10).await?.is_empty());
    assert_eq!(h.store.queue_reminders(at(70), 10, remind).await?, 1);
    let rows = h.store.deliveries(id, None, 10).await?;
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!(
        row.key,
        DeliveryKey {
            match_id: id,
            seq: 2,
            seat: 0,
            kind: NotificationKind::TurnReminder,
        }
    );
    assert_eq!(row.url, "http://a.example/hook");
    assert_eq!(
        row.body,
        remind(&Reminder {
            match_id: id,
            seq: 2,
            seat: 0,
            due_at: truncate_to_micros(at(100)),
            remind_at: truncate_to_micros(at(50)),
        })
    );
    assert_eq!(row.next_attempt_at, Some(truncate_to_micros(at(50))));
    // Every due reminder was cleared, sent or not; none is queued again.
    assert!(
        h.store
            .turns(id)
            .await?
            .iter()
            .all(|t| t.remind_at.is_none())
    );
    assert_eq!(h.store.queue_reminders(at(80), 10, remind).await?, 0);
    assert_eq!(h.store.deliveries(id, None, 10).await?.len(), 1);
    // The reminder is claimed and recorded apart from a "your turn" of the same event.
    h.store
        .append(id, 2, vec![action(1, "r2", 2)], notify(&[0]))
        .await?;
    let claimed = h.store.claim_deliveries(at(90), at(95), 10).await?;
    assert_eq!(claimed.len(), 1, "only the reminder is due by then");
    h.store
        .record_delivery(claimed[0].key, &Attempt::Delivered { status: 204 }, at(91))
        .await?;
    let kinds: Vec<_> = h
        .store
        .deliveries(id, None, 10)
        .await?
        .iter()
        .map(|r| (r.key.seq, r.key.kind, r.delivered_at.is_some()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (3, NotificationKind::YourTurn, false),
            (2, NotificationKind::TurnReminder, true)
        ]
    );
    Ok(())
}

pub(crate) async fn a_seat_that_stays_awaited_keeps_its_reminder_or_its_absence(
    h: &Harness,
) -> Result<()> {
    let id = match_with_webhooks(h).await?;
    h.store
        .append(
            id,
            1,
            vec![action(1, "r1", 1)],
            turns(vec![reminded(0, 100, 50)]),
        )
        .await?;
    // Seat 0 stays awaited while seat 1 acts, with the same deadline: the stored reminder
    // stands.
    h.store
        .append(
            id,
            2,
            vec![action(1, "r2", 2)],
            turns(vec![reminded(0, 100, 50)]),
        )
        .await?;
    let stored = h.store.turns(id).await?;
    assert_eq!(stored[0].remind_at, Some(truncate_to_micros(at(50))));
    assert_eq!(h.store.queue_reminders(at(60), 10, remind).await?, 1);
    // Once sent, it is not rearmed by the next append that keeps the deadline...
    h.store
        .append(
            id,
            3,
            vec![action(1, "r3", 3)],
            turns(vec![reminded(0, 100, 50)]),
        )
        .await?;
    assert_eq!(h.store.turns(id).await?[0].remind_at, None);
    // ...but a new turn of the seat has a reminder of its own.
    h.store
        .append(
            id,
            4,
            vec![action(0, "r4", 4)],
            turns(vec![reminded(0, 400, 350)]),
        )
        .await?;
    assert_eq!(
        h.store.turns(id).await?[0].remind_at,
        Some(truncate_to_micros(at(350)))
    );
    assert_eq!(h.store.queue_reminders(at(360), 10, remind).await?, 1);
    let seqs: Vec<_> = h
        .store
        .deliveries(id, None, 10)
        .await?
        .iter()
        .map(|r| r.key.seq)
        .collect();
    // Each names the version the seat was awaited after when it fell due (act with it).
    assert_eq!(seqs, vec![5, 3]);
    Ok(())
}

pub(crate) async fn concurrent_reminder_queuers_queue_each_reminder_once(
    h: &Harness,
) -> Result<()> {
    const MATCHES: usize = 12;
    let mut ids = Vec::new();
    for _ in 0..MATCHES {
        let id = match_with_webhooks(h).await?;
        h.store
            .append(
                id,
                1,
                vec![action(1, "r1", 1)],
                turns(vec![reminded(0, 100, 50), reminded(1, 100, 50)]),
            )
            .await?;
        ids.push(id);
    }
    let second_server = Store::connect(&h.url, options()).await?;
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..8 {
        let store = if w % 2 == 0 {
            h.store.clone()
        } else {
            second_server.clone()
        };
        tasks.spawn(async move {
            let mut queued = 0;
            loop {
                match store.queue_reminders(at(60), 3, remind).await? {
                    0 => return anyhow::Ok(queued),
                    n => queued += n,
                }
            }
        });
    }
    let mut queued = 0;
    while let Some(joined) = tasks.join_next().await {
        queued += joined??;
    }
    assert_eq!(queued as usize, 2 * MATCHES, "every reminder queued once");
    for id in ids {
        assert_eq!(h.store.deliveries(id, None, 10).await?.len(), 2);
    }
    Ok(())
}

pub(crate) async fn concurrent_claimers_never_share_a_turn(h: &Harness) -> Result<()> {
    const TURNS: usize = 24;
    let mut ids = std::collections::BTreeSet::new();
    for i in 0..TURNS {
        let mut m = new_match(2);
        m.start.turns = Some(vec![turn(1, i as i64, None)]);
        h.store.create_match(m.clone(), vec![created()]).await?;
        ids.insert(m.id);
    }
    let second_server = Store::connect(&h.url, options()).await?;
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..8 {
        let store = if c % 2 == 0 {
            h.store.clone()
        } else {
            second_server.clone()
        };
        tasks.spawn(async move {
            let mut mine = Vec::new();
            loop {
                let claimed = store.claim_turns(at(100), at(1000), 2).await?;
                if claimed.is_empty() {
                    return anyhow::Ok(mine);
                }
                mine.extend(claimed.into_iter().map(|t| t.match_id));
            }
        });
    }
    let mut claimed = Vec::new();
    while let Some(result) = tasks.join_next().await {
        claimed.extend(result??);
    }
    claimed.sort();
    assert_eq!(
        claimed,
        ids.into_iter().collect::<Vec<_>>(),
        "each turn claimed exactly once"
    );
    Ok(())
}
