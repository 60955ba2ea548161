//! On Citus, everything the store does about one match runs on that match's worker alone.
//!
//! Each step below is a store call made as the server makes it; Citus's own counters
//! (`citus_stat_counters`, Citus 13.1 and later) say how many distributed executions it took,
//! and how many of them went to more than one shard. A step must take no multi-shard execution
//! and no more single-shard ones than the statements it is written with (a statement Citus
//! splits into subplans counts one per subplan), so the counts are the statements Citus really
//! ran, not copies of them. Skipped, saying why, unless `MISSIVE_CITUS_URL` names a coordinator.

#[path = "support/citus.rs"]
mod citus_cluster;

use anyhow::{Result, ensure};
use chrono::{TimeZone, Utc};
use missive_store::{
    MatchId, MatchStatus, MatchUpdate, NewEvent, NewMatch, Notification, PendingTurn, SeatRecord,
    Store, StoreOptions,
};
use serde_json::json;
use sqlx::{Connection, PgConnection};

fn at(second: i64) -> chrono::DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + second, 0).unwrap()
}

fn event(kind: &str, actor: Option<u8>, request: Option<&str>, n: i64) -> NewEvent {
    NewEvent {
        kind: kind.to_owned(),
        actor,
        request_id: request.map(str::to_owned),
        payload: json!({"n": n}),
        at: at(n),
    }
}

fn turn(seat: u8) -> PendingTurn {
    PendingTurn {
        seat,
        due_at: at(86_400),
        remind_at: Some(at(3_600)),
        bot: None,
    }
}

fn notify(seat: u8) -> Vec<Notification> {
    vec![Notification {
        seat,
        body: format!("{{\"your turn\":{seat}}}"),
    }]
}

fn seat(seat: u8, player: &str) -> SeatRecord {
    SeatRecord {
        seat,
        player: Some(player.to_owned()),
        token_hash: Some([seat; 32]),
        bot: None,
        account: None,
        invited: false,
    }
}

/// Citus's execution counters of one database, read before and after each step.
struct Meter {
    probe: PgConnection,
    before: (i64, i64),
    /// Each step checked: what, single-shard executions, statements it is written with.
    steps: Vec<(&'static str, i64, i64)>,
}

impl Meter {
    async fn new(url: &str) -> Result<Meter> {
        let probe = PgConnection::connect(url).await?;
        Ok(Meter {
            probe,
            before: (0, 0),
            steps: Vec::new(),
        })
    }

    /// `(single-shard, multi-shard)` executions in the database so far.
    async fn counters(&mut self) -> Result<(i64, i64)> {
        Ok(sqlx::query_as(
            "SELECT query_execution_single_shard, query_execution_multi_shard
             FROM citus_stat_counters WHERE name = current_database()",
        )
        .fetch_one(&mut self.probe)
        .await?)
    }

    async fn start(&mut self) -> Result<()> {
        self.before = self.counters().await?;
        Ok(())
    }

    /// The step since [`Meter::start`] ran on one shard at a time, in at most `most`
    /// executions; starts the next step.
    async fn check(&mut self, what: &'static str, most: i64) -> Result<()> {
        let after = self.counters().await?;
        let (single, multi) = (after.0 - self.before.0, after.1 - self.before.1);
        ensure!(multi == 0, "{what}: {multi} multi-shard executions");
        ensure!(
            (1..=most).contains(&single),
            "{what}: {single} single-shard executions, written as {most} statements"
        );
        self.steps.push((what, single, most));
        self.before = after;
        Ok(())
    }
}

fn options() -> StoreOptions {
    StoreOptions::default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_step_of_a_match_runs_on_its_worker_alone() -> Result<()> {
    let Some(admin) = citus_cluster::coordinator_url() else {
        return Ok(());
    };
    let db = citus_cluster::create(&admin, options()).await?;
    let result = steps(&db.url).await;
    citus_cluster::drop_database(&db.nodes, &db.name).await?;
    result
}

async fn steps(url: &str) -> Result<()> {
    let store = Store::connect(url, options()).await?;
    let mut meter = Meter::new(url).await?;
    let id: MatchId = uuid::Uuid::new_v4();
    let m = NewMatch {
        id,
        kind: "love-letter".to_owned(),
        config: json!({}),
        rules_version: 1,
        seat_count: 2,
        seed: [7; 32],
        seed_hash: [9; 32],
        turn_timeout_secs: Some(86_400),
        turn_reminder_secs: Some(3_600),
        created_at: at(0),
        creator: Some("creator".to_owned()),
        start: MatchUpdate::default(),
    };

    // The match row, its seats and its first events: one transaction.
    meter.start().await?;
    store
        .create_match(m, vec![event("created", None, None, 0)])
        .await?;
    meter.check("create a match", 3).await?;

    store
        .set_webhook(id, 0, "http://a.example/hook", [1; 32], at(1))
        .await?;
    meter.check("set a webhook", 1).await?;

    // A join that starts the match: the deal's events, the status, the seats, the turns
    // (deleted, then written) and a notification.
    let update = MatchUpdate {
        status: Some(MatchStatus::Active),
        seats: vec![seat(0, "ann"), seat(1, "bob")],
        turns: Some(vec![turn(0)]),
        notify: notify(0),
    };
    let events = vec![
        event("joined", Some(1), Some("join-bob"), 1),
        event("started", None, None, 2),
        event("dealt", None, None, 3),
    ];
    store.append(id, 1, events, update).await?;
    meter.check("a join that starts the match", 6).await?;

    // An act that passes the turn: its event, the turns, a notification.
    let update = MatchUpdate {
        turns: Some(vec![turn(1)]),
        notify: notify(1),
        ..MatchUpdate::default()
    };
    store
        .append(
            id,
            4,
            vec![event("action", Some(0), Some("act-1"), 4)],
            update,
        )
        .await?;
    meter.check("an act that passes the turn", 5).await?;

    // An act of a match without deadlines: its event and a notification.
    let update = MatchUpdate {
        notify: notify(0),
        ..MatchUpdate::default()
    };
    store
        .append(
            id,
            5,
            vec![event("action", Some(1), Some("act-2"), 5)],
            update,
        )
        .await?;
    meter.check("an act with a notification", 2).await?;

    let plain = || vec![event("action", Some(0), Some("act-3"), 6)];
    store.append(id, 6, plain(), MatchUpdate::default()).await?;
    meter.check("a plain act", 1).await?;

    let again = store.append(id, 6, plain(), MatchUpdate::default()).await?;
    ensure!(again.duplicate, "a retried act is a duplicate");
    // The head (the cached one is newer than the retry's version), then the original events.
    meter.check("a retried act", 2).await?;

    // A leave that ends the match: its events, the status, the seat, no more turns.
    let update = MatchUpdate {
        status: Some(MatchStatus::Finished),
        seats: vec![SeatRecord {
            seat: 1,
            player: None,
            token_hash: None,
            bot: None,
            account: None,
            invited: false,
        }],
        turns: Some(Vec::new()),
        notify: Vec::new(),
    };
    let events = vec![
        event("left", Some(1), Some("leave-bob"), 7),
        event("ended", None, None, 8),
    ];
    store.append(id, 7, events, update).await?;
    meter.check("a leave that ends the match", 4).await?;

    store.get_match(id).await?;
    meter.check("read the match", 1).await?;
    store.read_events(id, 0, 100).await?;
    meter.check("read its events", 1).await?;
    // A finished match: its row, its archive (none yet), its newest snapshot, its events.
    store.load(id, 1).await?;
    meter.check("load it", 4).await?;

    for (what, single, most) in &meter.steps {
        eprintln!("{what}: {single} single-shard executions (written as {most} at most)");
    }
    Ok(())
}
