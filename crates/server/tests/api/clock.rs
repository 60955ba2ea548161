//! Turn deadlines against a clock the test moves by hand: the service and its turn worker run
//! in this process, so nothing is due until the clock passes the deadline, and the check that
//! a deadline has *not* fired yet is exact, not a race against a sleep.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, SubsecRound, Utc};
use missive_proto::v1 as pb;
use missive_server::clock::Clock;
use missive_server::service::{Caller, Service, Settings};
use missive_store::{DeliveryRecord, MatchId, NotificationKind, Store, StoredEvent};
use tokio::sync::watch;

use crate::helpers::{Backend, ScratchDb, backend_tests, love_letter_options};

const TIMEOUT: u32 = 60;
/// How often the turn workers here look for due turns.
const POLL: Duration = Duration::from_millis(10);

/// A service of this process on `url`, on `clock`, with open matches expiring after `expiry`
/// (never with `None`).
pub(crate) async fn service(url: &str, clock: &Clock, expiry: Option<Duration>) -> Arc<Service> {
    let store = Store::connect(url, crate::helpers::patient_store())
        .await
        .expect("store");
    Arc::new(Service::new(
        store,
        Settings {
            allow_fixed_deck: false,
            cache_capacity: 1000,
            watch_recheck: Duration::from_secs(10),
            webhook_allow_private: false,
            clock: clock.clone(),
            identity: None,
            open_match_expiry: expiry,
        },
    ))
}

/// A service on `url` with its turn worker, both on `clock`; the worker stops with `stop`.
pub(crate) async fn server(url: &str, clock: &Clock, stop: &watch::Receiver<bool>) -> Arc<Service> {
    let service = service(url, clock, None).await;
    let mut stop = stop.clone();
    tokio::spawn(missive_server::turns::run(
        service.clone(),
        POLL,
        Duration::from_secs(30),
        async move {
            let _ = stop.wait_for(|stop| *stop).await;
        },
    ));
    service
}

/// A two-seat Love Letter match with a turn timeout (and a reminder that long before it, if
/// given), both seats joined; its id and tokens.
pub(crate) async fn start_match(
    service: &Service,
    reminder: Option<u32>,
) -> (MatchId, Vec<String>) {
    let created = service
        .create_match(pb::CreateMatchRequest {
            turn_timeout_secs: Some(TIMEOUT),
            turn_reminder_secs: reminder,
            ..love_letter_options(2)
        })
        .await
        .expect("create")
        .r#match
        .expect("match info");
    let mut tokens = Vec::new();
    for seat in 0..2 {
        let joined = service
            .join_match(
                &Caller::default(),
                pb::JoinMatchRequest {
                    match_id: created.match_id.clone(),
                    player: format!("player {seat}"),
                    seat: Some(seat),
                    ..Default::default()
                },
            )
            .await
            .expect("join");
        tokens.push(joined.seat_token);
    }
    (created.match_id.parse().expect("uuid"), tokens)
}

async fn events(service: &Service, id: MatchId) -> Vec<StoredEvent> {
    service
        .store()
        .read_events(id, 0, u32::MAX)
        .await
        .expect("events")
}

/// The log once it has `count` events (waiting in real time, at most a few seconds).
async fn wait_for_events(service: &Service, id: MatchId, count: usize) -> Vec<StoredEvent> {
    let start = Instant::now();
    loop {
        let log = events(service, id).await;
        if log.len() >= count || start.elapsed() > Duration::from_secs(5) {
            return log;
        }
        tokio::time::sleep(POLL).await;
    }
}

fn due(view: &pb::MatchView) -> Vec<(u32, DateTime<Utc>)> {
    view.deadlines
        .iter()
        .map(|d| {
            let at = d.due_at.expect("a due time");
            let at = DateTime::from_timestamp(at.seconds, at.nanos as u32).expect("a time");
            (d.seat, at)
        })
        .collect()
}

async fn view(service: &Service, id: MatchId, token: &str) -> pb::MatchView {
    service
        .get_view(
            &Caller::seat(token),
            pb::GetViewRequest {
                match_id: id.to_string(),
                seat: None,
            },
        )
        .await
        .expect("view")
        .view
        .expect("a view")
}

/// A store URL for `backend`: a scratch PostgreSQL database, or SQLite in a scratch directory.
pub(crate) async fn database(backend: Backend) -> (String, Option<ScratchDb>, tempdir::Dir) {
    let dir = tempdir::Dir::new();
    match ScratchDb::for_backend(backend).await {
        Some(db) => (db.url.clone(), Some(db), dir),
        None => (
            format!("sqlite://{}", dir.0.join("missive.db").display()),
            None,
            dir,
        ),
    }
}

pub(crate) mod tempdir {
    /// A directory removed on drop.
    pub(crate) struct Dir(pub(crate) std::path::PathBuf);

    impl Dir {
        pub(crate) fn new() -> Dir {
            let path = std::env::temp_dir().join(format!("missive-clock-{}", uuid::Uuid::new_v4()));
            std::fs::create_dir_all(&path).expect("a scratch directory");
            Dir(path)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn secs(n: u32) -> chrono::Duration {
    chrono::Duration::seconds(i64::from(n))
}

async fn a_deadline_fires_when_the_clock_reaches_it_and_not_before(backend: Backend) {
    let (url, _db, _dir) = database(backend).await;
    let start = Utc::now().trunc_subsecs(0);
    let clock = Clock::manual(start);
    let (stop_tx, stop) = watch::channel(false);
    let service = server(&url, &clock, &stop).await;
    let (id, tokens) = start_match(&service, None).await;
    let started = events(&service, id).await.len();
    let first = view(&service, id, &tokens[0]).await;
    let seat = first.awaiting[0];
    let deadline = start + secs(TIMEOUT);
    assert_eq!(due(&first), vec![(seat, deadline)]);

    // A microsecond short of the deadline: the worker looks many times and plays nothing.
    clock.advance(Duration::from_secs(TIMEOUT.into()) - Duration::from_micros(1));
    tokio::time::sleep(POLL * 20).await;
    assert_eq!(
        events(&service, id).await.len(),
        started,
        "nothing is due yet"
    );

    // At the deadline: the game's default action for that seat, once, at the deadline.
    clock.advance(Duration::from_micros(1));
    let log = wait_for_events(&service, id, started + 1).await;
    assert_eq!(log.len(), started + 1);
    let timeout = &log[started];
    assert_eq!(timeout.kind, "timeout");
    assert_eq!(timeout.payload["seat"], u64::from(seat));
    assert_eq!(timeout.at, deadline);
    tokio::time::sleep(POLL * 20).await;
    assert_eq!(events(&service, id).await.len(), started + 1, "played once");

    // The seat awaited next has its own time, from the timeout on.
    let next = view(&service, id, &tokens[0]).await;
    assert_eq!(
        due(&next),
        vec![(next.awaiting[0], deadline + secs(TIMEOUT))]
    );
    let _ = stop_tx.send(true);
}

backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    a_deadline_fires_when_the_clock_reaches_it_and_not_before:
    Postgres => a_deadline_fires_when_the_clock_reaches_it_and_not_before_on_postgres,
    Citus => a_deadline_fires_when_the_clock_reaches_it_and_not_before_on_citus,
    Sqlite => a_deadline_fires_when_the_clock_reaches_it_and_not_before_on_sqlite,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_one_clock_play_each_deadline_once() {
    let (url, _db, _dir) = database(Backend::Postgres).await;
    let start = Utc::now().trunc_subsecs(0);
    let clock = Clock::manual(start);
    let (stop_tx, stop) = watch::channel(false);
    let a = server(&url, &clock, &stop).await;
    let b = server(&url, &clock, &stop).await;
    let (id, tokens) = start_match(&a, None).await;
    let mut expected = events(&a, id).await.len();
    let mut played = 0;
    for _ in 0..6 {
        if view(&b, id, &tokens[0]).await.awaiting.is_empty() {
            break;
        }
        clock.advance(Duration::from_secs(TIMEOUT.into()));
        expected += 1;
        let log = wait_for_events(&b, id, expected).await;
        assert_eq!(log.len(), expected, "the deadline was played");
        // Both workers had many looks at it.
        tokio::time::sleep(POLL * 10).await;
        assert_eq!(events(&a, id).await.len(), expected, "and only once");
        played += 1;
    }
    assert!(played >= 2, "{played}");
    let log = events(&a, id).await;
    let timeouts: Vec<_> = log.iter().filter(|e| e.kind == "timeout").collect();
    assert_eq!(timeouts.len(), played);
    for (n, event) in timeouts.iter().enumerate() {
        assert_eq!(event.at, start + secs(TIMEOUT) * (n as i32 + 1));
    }
    let ids: std::collections::HashSet<_> = timeouts.iter().map(|e| &e.request_id).collect();
    assert_eq!(ids.len(), played);
    let _ = stop_tx.send(true);
}

/// The match's queued notifications, newest first.
async fn outbox(service: &Service, id: MatchId) -> Vec<DeliveryRecord> {
    service
        .store()
        .deliveries(id, None, 100)
        .await
        .expect("deliveries")
}

async fn a_reminder_is_queued_when_the_clock_reaches_it_and_not_before(backend: Backend) {
    const EARLY: u32 = 15;
    let (url, _db, _dir) = database(backend).await;
    let start = Utc::now().trunc_subsecs(0);
    let clock = Clock::manual(start);
    let (stop_tx, stop) = watch::channel(false);
    let service = server(&url, &clock, &stop).await;
    let (id, tokens) = start_match(&service, Some(EARLY)).await;
    let first = view(&service, id, &tokens[0]).await;
    let seat = first.awaiting[0];
    // Only the awaited seat has a webhook (no delivery worker runs here: the outbox is the
    // record of what would be posted).
    service
        .set_webhook(
            &Caller::seat(&tokens[seat as usize]),
            pb::SetWebhookRequest {
                match_id: id.to_string(),
                url: "https://hooks.example/turns".to_owned(),
                ..Default::default()
            },
        )
        .await
        .expect("set webhook");
    let deadline = start + secs(TIMEOUT);
    let remind_at = deadline - secs(EARLY);

    clock.advance((remind_at - start).to_std().expect("ahead") - Duration::from_micros(1));
    tokio::time::sleep(POLL * 20).await;
    assert!(outbox(&service, id).await.is_empty(), "no reminder yet");

    clock.advance(Duration::from_micros(1));
    let waited = Instant::now();
    while outbox(&service, id).await.is_empty() && waited.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(POLL).await;
    }
    tokio::time::sleep(POLL * 20).await;
    let queued = outbox(&service, id).await;
    assert_eq!(queued.len(), 1, "one reminder: {queued:?}");
    let reminder = &queued[0];
    assert_eq!(reminder.key.kind, NotificationKind::TurnReminder);
    assert_eq!(u32::from(reminder.key.seat), seat);
    assert_eq!(reminder.key.seq, first.version);
    let body: serde_json::Value = serde_json::from_str(&reminder.body).expect("json");
    assert_eq!(body["type"], "turn_reminder");
    assert_eq!(body["matchId"], id.to_string());
    assert_eq!(body["version"], first.version);
    let time = |field: &str| {
        DateTime::parse_from_rfc3339(body[field].as_str().expect("a time")).expect("rfc 3339")
    };
    assert_eq!(time("dueAt"), deadline);
    assert_eq!(time("at"), remind_at);

    // The deadline still fires. The turn after it is reminded only if it is the seat with the
    // webhook's again (a new round may start with it), under the new version.
    let before = events(&service, id).await.len();
    clock.advance((deadline - remind_at).to_std().expect("ahead"));
    wait_for_events(&service, id, before + 1).await;
    let next = view(&service, id, &tokens[0]).await;
    clock.advance(Duration::from_secs((TIMEOUT - EARLY).into()));
    tokio::time::sleep(POLL * 20).await;
    let reminders: Vec<_> = outbox(&service, id)
        .await
        .into_iter()
        .filter(|d| d.key.kind == NotificationKind::TurnReminder)
        .map(|d| d.key.seq)
        .collect();
    if next.awaiting.contains(&seat) {
        assert_eq!(reminders, [next.version, first.version]);
    } else {
        assert_eq!(reminders, [first.version], "no webhook, no reminder");
    }
    let _ = stop_tx.send(true);
}

backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    a_reminder_is_queued_when_the_clock_reaches_it_and_not_before:
    Postgres => a_reminder_is_queued_when_the_clock_reaches_it_and_not_before_on_postgres,
    Citus => a_reminder_is_queued_when_the_clock_reaches_it_and_not_before_on_citus,
    Sqlite => a_reminder_is_queued_when_the_clock_reaches_it_and_not_before_on_sqlite,
}
