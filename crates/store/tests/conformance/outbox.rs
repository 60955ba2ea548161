//! The webhook outbox: notifications queued with their events, claimed, deferred, recorded,
//! and redirected or cancelled with their webhook.

use super::*;

pub(crate) async fn an_append_queues_notifications_for_the_awaited_seats_with_webhooks(
    h: &Harness,
) -> Result<()> {
    let id = match_with_webhooks(h).await?;
    let hook = h.store.webhook(id, 0).await?.context("seat 0's webhook")?;
    assert_eq!(hook.url, "http://a.example/hook");
    assert_eq!(hook.secret, [1; 32]);
    assert_eq!(h.store.webhook(id, 2).await?, None);
    let before = Utc::now() - Duration::from_secs(1);
    let appended = h
        .store
        .append(id, 1, vec![action(1, "r1", 1)], notify(&[0, 2]))
        .await?;
    assert!(appended.webhooks_queued, "seat 0 has a webhook");
    let event = &appended.events[0];
    let rows = h.store.deliveries(id, None, 100).await?;
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!(
        row.key,
        DeliveryKey {
            match_id: id,
            seq: 2,
            seat: 0,
            kind: NotificationKind::YourTurn,
        }
    );
    assert_eq!(row.url, "http://a.example/hook");
    assert_eq!(row.body, note(0));
    assert_eq!(row.key.seq, event.seq, "about the appended event");
    assert_eq!(row.attempts, 0);
    assert!(row.next_attempt_at.is_some_and(|t| t >= before));
    assert_eq!((row.delivered_at, row.last_status), (None, None));
    // A refused append queues nothing.
    let stale = h
        .store
        .append(id, 1, vec![action(0, "r2", 2)], notify(&[1]))
        .await;
    assert!(
        matches!(stale, Err(StoreError::Conflict { .. })),
        "{stale:?}"
    );
    // Neither does an append that makes nobody awaited.
    let quiet = h
        .store
        .append(id, 2, vec![action(0, "r3", 3)], MatchUpdate::default())
        .await?;
    assert!(!quiet.webhooks_queued);
    assert_eq!(h.store.deliveries(id, None, 100).await?.len(), 1);
    // With a status change, and two events: the notification names the last one.
    h.store
        .append(
            id,
            3,
            vec![action(0, "r4", 4), action(0, "r5", 5)],
            MatchUpdate {
                status: Some(MatchStatus::Active),
                notify: notes(&[1, 0, 1]),
                ..MatchUpdate::default()
            },
        )
        .await?;
    assert_eq!(h.store.get_match(id).await?.status, MatchStatus::Active);
    let rows = h.store.deliveries(id, None, 100).await?;
    let keys: Vec<_> = rows.iter().map(|r| (r.key.seq, r.key.seat)).collect();
    assert_eq!(keys, vec![(5, 0), (5, 1), (2, 0)]);
    assert_eq!(h.store.deliveries(id, Some(1), 100).await?.len(), 1);
    // A retried request returns the original events and queues nothing more.
    let again = h
        .store
        .append(id, 5, vec![action(0, "r4", 4)], notify(&[0]))
        .await?;
    assert!(again.duplicate);
    assert_eq!(h.store.deliveries(id, None, 100).await?.len(), 3);
    // Awaiting only a seat without a webhook queues nothing, and says so, also in the
    // statement that writes several events.
    let unhooked = h
        .store
        .append(
            id,
            5,
            vec![action(0, "r6", 6), action(0, "r7", 7)],
            notify(&[2]),
        )
        .await?;
    assert!(!unhooked.duplicate);
    assert!(!unhooked.webhooks_queued, "seat 2 has no webhook");
    assert_eq!(h.store.deliveries(id, None, 100).await?.len(), 3);
    Ok(())
}

pub(crate) async fn claimed_deliveries_are_leased_retried_and_recorded(h: &Harness) -> Result<()> {
    let id = match_with_webhooks(h).await?;
    h.store
        .append(id, 1, vec![action(1, "r1", 1)], notify(&[0]))
        .await?;
    let now = Utc::now() + Duration::from_secs(1);
    let lease = now + Duration::from_secs(30);
    let claimed = h.store.claim_deliveries(now, lease, 10).await?;
    assert_eq!(claimed.len(), 1);
    let d = &claimed[0];
    assert_eq!((d.key.seq, d.key.seat, d.attempts), (2, 0, 0));
    assert_eq!(d.secret, Some([1; 32]));
    assert_eq!(d.url, "http://a.example/hook");
    // Leased: nobody else gets it until the lease runs out.
    assert!(h.store.claim_deliveries(now, lease, 10).await?.is_empty());
    let after_lease = lease + Duration::from_secs(1);
    let reclaimed = h
        .store
        .claim_deliveries(after_lease, after_lease, 10)
        .await?;
    assert_eq!(reclaimed.len(), 1, "an expired lease frees the row");
    // A failed attempt is retried when due, not before.
    let retry_at = after_lease + Duration::from_secs(60);
    h.store
        .record_delivery(
            d.key,
            &Attempt::Failed {
                status: Some(500),
                error: "HTTP 500".into(),
                retry_at: Some(retry_at),
            },
            after_lease,
        )
        .await?;
    let row = h.store.deliveries(id, Some(0), 10).await?.remove(0);
    assert_eq!(row.attempts, 1);
    assert_eq!(row.last_status, Some(500));
    assert_eq!(row.last_error.as_deref(), Some("HTTP 500"));
    assert_eq!(row.next_attempt_at, Some(truncate_to_micros(retry_at)));
    assert_eq!(row.delivered_at, None);
    let early = retry_at - Duration::from_secs(1);
    assert!(h.store.claim_deliveries(early, early, 10).await?.is_empty());
    let again = h
        .store
        .claim_deliveries(retry_at, lease_of(retry_at), 10)
        .await?;
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].attempts, 1);
    h.store
        .record_delivery(d.key, &Attempt::Delivered { status: 204 }, retry_at)
        .await?;
    let row = h.store.deliveries(id, Some(0), 10).await?.remove(0);
    assert_eq!(row.attempts, 2);
    assert_eq!(row.last_status, Some(204));
    assert_eq!(row.last_error, None);
    assert_eq!(row.delivered_at, Some(truncate_to_micros(retry_at)));
    assert_eq!(row.next_attempt_at, None);
    let later = retry_at + Duration::from_secs(3600);
    assert!(h.store.claim_deliveries(later, later, 10).await?.is_empty());
    // A late report from a worker whose lease ran out does not undo the delivery.
    h.store
        .record_delivery(
            d.key,
            &Attempt::Failed {
                status: None,
                error: "timed out".into(),
                retry_at: Some(later),
            },
            later,
        )
        .await?;
    assert_eq!(h.store.deliveries(id, Some(0), 10).await?.remove(0), row);
    // Giving up leaves the record and never claims the row again.
    h.store
        .append(id, 2, vec![action(0, "r2", 2)], notify(&[1]))
        .await?;
    let t = Utc::now() + Duration::from_secs(1);
    let claimed = h.store.claim_deliveries(t, t, 10).await?;
    assert_eq!(claimed.len(), 1);
    h.store
        .record_delivery(
            claimed[0].key,
            &Attempt::Failed {
                status: None,
                error: "connection refused".into(),
                retry_at: None,
            },
            t,
        )
        .await?;
    let row = h.store.deliveries(id, Some(1), 10).await?.remove(0);
    assert_eq!((row.attempts, row.next_attempt_at), (1, None));
    assert_eq!(row.last_error.as_deref(), Some("connection refused"));
    assert!(h.store.claim_deliveries(later, later, 10).await?.is_empty());
    Ok(())
}

pub(crate) async fn deferred_deliveries_come_back_later_unattempted(h: &Harness) -> Result<()> {
    let id = match_with_webhooks(h).await?;
    h.store
        .append(id, 1, vec![action(1, "r1", 1)], notify(&[0, 1]))
        .await?;
    let now = Utc::now() + Duration::from_secs(1);
    let lease = lease_of(now);
    let claimed = h.store.claim_deliveries(now, lease, 10).await?;
    assert_eq!(claimed.len(), 2);
    let keys: Vec<_> = claimed.iter().map(|d| d.key).collect();
    // Only a claim still held is handed back: not under another lease's end.
    let later = now + Duration::from_secs(5);
    let other_lease = lease + Duration::from_secs(1);
    assert_eq!(
        h.store.defer_deliveries(&keys, other_lease, later).await?,
        0
    );
    assert_eq!(h.store.defer_deliveries(&keys, lease, later).await?, 2);
    let rows = h.store.deliveries(id, None, 10).await?;
    for row in &rows {
        assert_eq!(row.attempts, 0, "a deferral is not an attempt");
        assert_eq!(row.next_attempt_at, Some(truncate_to_micros(later)));
        assert_eq!(row.last_error, None);
    }
    // Due again at the new time, not before, and not by the old lease.
    let early = later - Duration::from_secs(1);
    assert!(h.store.claim_deliveries(early, early, 10).await?.is_empty());
    let again = h.store.claim_deliveries(later, lease_of(later), 10).await?;
    assert_eq!(again.len(), 2);
    assert!(again.iter().all(|d| d.attempts == 0));
    // A row delivered, or cancelled by the webhook's removal, is not brought back.
    h.store
        .record_delivery(again[0].key, &Attempt::Delivered { status: 204 }, later)
        .await?;
    assert!(h.store.remove_webhook(id, again[1].key.seat).await?);
    let keys: Vec<_> = again.iter().map(|d| d.key).collect();
    assert_eq!(
        h.store
            .defer_deliveries(&keys, lease_of(later), later)
            .await?,
        0
    );
    let far = later + Duration::from_secs(3600);
    assert!(h.store.claim_deliveries(far, far, 10).await?.is_empty());
    assert_eq!(h.store.defer_deliveries(&[], lease, later).await?, 0);
    Ok(())
}

fn lease_of(t: chrono::DateTime<Utc>) -> chrono::DateTime<Utc> {
    t + Duration::from_secs(30)
}

pub(crate) async fn a_replaced_or_removed_webhook_redirects_or_cancels_its_queue(
    h: &Harness,
) -> Result<()> {
    let id = match_with_webhooks(h).await?;
    h.store
        .append(id, 1, vec![action(1, "r1", 1)], notify(&[0, 1]))
        .await?;
    h.store
        .set_webhook(id, 0, "https://new.example/hook", [3; 32], Utc::now())
        .await?;
    assert!(h.store.remove_webhook(id, 1).await?);
    assert!(!h.store.remove_webhook(id, 1).await?);
    assert_eq!(h.store.webhook(id, 1).await?, None);
    let cancelled = h.store.deliveries(id, Some(1), 10).await?.remove(0);
    assert_eq!(cancelled.next_attempt_at, None);
    assert_eq!(cancelled.last_error.as_deref(), Some(REMOVED));
    let t = Utc::now() + Duration::from_secs(1);
    let claimed = h.store.claim_deliveries(t, lease_of(t), 10).await?;
    assert_eq!(claimed.len(), 1, "{claimed:?}");
    assert_eq!(claimed[0].key.seat, 0);
    assert_eq!(claimed[0].url, "https://new.example/hook");
    assert_eq!(claimed[0].secret, Some([3; 32]));
    // Nothing is queued for a seat without a webhook.
    h.store
        .append(id, 2, vec![action(0, "r2", 2)], notify(&[1]))
        .await?;
    assert_eq!(h.store.deliveries(id, Some(1), 10).await?.len(), 1);
    Ok(())
}

pub(crate) async fn two_workers_never_claim_the_same_notification(h: &Harness) -> Result<()> {
    const MATCHES: usize = 12;
    for _ in 0..MATCHES {
        let id = match_with_webhooks(h).await?;
        h.store
            .append(id, 1, vec![action(1, "r1", 1)], notify(&[0, 1]))
            .await?;
    }
    let second_server = Store::connect(&h.url, options()).await?;
    let t = Utc::now() + Duration::from_secs(1);
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..8 {
        let store = if w % 2 == 0 {
            h.store.clone()
        } else {
            second_server.clone()
        };
        tasks.spawn(async move { store.claim_deliveries(t, lease_of(t), 5).await });
    }
    let mut keys = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        keys.extend(joined??.into_iter().map(|d| d.key));
    }
    let total = keys.len();
    keys.sort_by_key(|k| (k.match_id, k.seq, k.seat));
    keys.dedup();
    assert_eq!(keys.len(), total, "a notification was claimed twice");
    assert_eq!(total, 2 * MATCHES, "every due notification was claimed");
    Ok(())
}
