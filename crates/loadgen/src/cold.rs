//! Cold start: how long a server takes from its process starting to being ready, and to
//! answering an act on a long match it has never loaded.
//!
//! Plays one match (random legal actions for every seat, as the views list them) until its log
//! holds `events` events, then, `restarts` times: kills the server as a crash would, starts it
//! again on the same database and times the new process: to its gRPC address printed (store
//! connected, migrations checked), to its health check answering SERVING, and to the answer of
//! an act on the long match, sent as soon as the server is ready with the action and version the
//! awaited seat's view held before the kill. The act after it, on the now-cached match, is timed
//! too, and so are the last acts before the first kill, for comparison.
//!
//! While the match grows, every [`BUCKET`] acts are summed up: their latency, the server's CPU
//! and the WAL PostgreSQL wrote, per act, to show whether an act costs more as its log grows.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use missive_proto::v1 as pb;
use sqlx::Connection;
use tonic::transport::Endpoint;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use crate::acts::{Client, Lcg, authed, connect, get_view, is_over};
use crate::server::Server;
use crate::stats::Step;

/// The gRPC service whose health says the server is ready.
const SERVICE: &str = "missive.v1.Missive";
/// Longest wait for a restarted server to be ready.
const READY_WITHIN: Duration = Duration::from_secs(60);
/// Acts timed before the first kill, for the warm figure.
const WARM: usize = 50;
/// Acts per bucket while the match grows.
pub(crate) const BUCKET: usize = 100;

/// [`BUCKET`] consecutive acts while the match grew.
#[derive(Debug)]
pub(crate) struct Bucket {
    /// The match's version before the bucket's first act.
    pub(crate) from: u64,
    pub(crate) acts: Step,
    /// The server's CPU over the bucket, per act (the players' two `GetView`s before each act
    /// included; read in ticks of 10 ms, so ±100 µs in a bucket of 100 acts).
    pub(crate) cpu_per_act: Option<Duration>,
    /// Bytes of WAL the whole cluster wrote over the bucket, per act.
    pub(crate) wal_per_act: f64,
}

/// One restart.
#[derive(Debug)]
pub(crate) struct Restart {
    /// Process start to its gRPC address printed.
    pub(crate) listening: Duration,
    /// Process start to the health check answering SERVING.
    pub(crate) ready: Duration,
    /// Process start to the first act's answer.
    pub(crate) first_act_at: Duration,
    /// The first act's own latency (the match loaded from the store).
    pub(crate) first_act: Duration,
    /// The next act's latency (the match cached).
    pub(crate) next_act: Duration,
    /// The match's version when the first act was sent.
    pub(crate) events: u64,
    /// The newest snapshot's version then.
    pub(crate) snapshot: Option<u64>,
}

/// What a run measured.
#[derive(Debug, Default)]
pub(crate) struct Measured {
    pub(crate) restarts: Vec<Restart>,
    /// The last acts before the first kill.
    pub(crate) warm: Step,
    /// Time spent playing the match up to its length.
    pub(crate) filling: Duration,
    /// The acts that made the match, [`BUCKET`] at a time.
    pub(crate) buckets: Vec<Bucket>,
}

/// A seat of the match: its number and token.
type Seat = (u32, String);

pub(crate) async fn run(
    server: &mut Server,
    options: pb::GameOptions,
    seat_count: u32,
    events: u64,
    restarts: usize,
    (seed, stall): (u64, u32),
) -> Result<Measured> {
    let mut client = connect(&server.grpc).await?;
    let created = client
        .create_match(pb::CreateMatchRequest {
            options: Some(options),
            seat_count,
            ..Default::default()
        })
        .await?
        .into_inner();
    let id = created.r#match.context("no match")?.match_id;
    let mut seats: Vec<Seat> = Vec::new();
    for n in 0..seat_count {
        let joined = client
            .join_match(pb::JoinMatchRequest {
                match_id: id.clone(),
                player: format!("cold-{n}"),
                ..Default::default()
            })
            .await?
            .into_inner();
        seats.push((joined.seat, joined.seat_token));
    }
    let database = server
        .database_url
        .clone()
        .context("the server's database is not known")?;
    let mut wal = sqlx::PgConnection::connect(&database).await?;
    let mut rng = Lcg(seed);
    let mut measured = Measured::default();
    let started = Instant::now();
    let mut latencies = Vec::new();
    let mut bucket = (
        0,
        server.cpu_time(),
        wal_lsn(&mut wal).await?,
        Step::default(),
    );
    let mut next = loop {
        let (seat, view) = awaited(&mut client, &id, &seats).await?;
        if view.version >= events {
            break (seat, view);
        }
        if bucket.3.ops == 0 {
            bucket.0 = view.version;
        }
        let latency = act(&mut client, &id, &seats[seat], &view, (&mut rng, stall))
            .await?
            .0;
        latencies.push(latency);
        bucket.3.record(latency);
        if bucket.3.ops as usize == BUCKET {
            let (cpu, lsn) = (server.cpu_time(), wal_lsn(&mut wal).await?);
            let (from, cpu_before, lsn_before, acts) =
                std::mem::replace(&mut bucket, (0, cpu, lsn, Step::default()));
            measured.buckets.push(Bucket {
                from,
                cpu_per_act: cpu
                    .zip(cpu_before)
                    .map(|(after, before)| after.saturating_sub(before) / BUCKET as u32),
                wal_per_act: (lsn - lsn_before) as f64 / BUCKET as f64,
                acts,
            });
        }
    };
    measured.filling = started.elapsed();
    wal.close().await.ok();
    for latency in latencies.iter().rev().take(WARM) {
        measured.warm.record(*latency);
    }
    for _ in 0..restarts.max(1) {
        let snapshot = newest_snapshot(&database, &id).await?;
        let process = server.restart().await?;
        let listening = process.elapsed();
        wait_ready(&server.grpc).await?;
        let ready = process.elapsed();
        let mut client = connect(&server.grpc).await?;
        let (seat, view) = &next;
        let (first_act, _) = act(&mut client, &id, &seats[*seat], view, (&mut rng, 0)).await?;
        let first_act_at = process.elapsed();
        let (seat, view) = awaited(&mut client, &id, &seats).await?;
        let (next_act, after) = act(&mut client, &id, &seats[seat], &view, (&mut rng, 0)).await?;
        measured.restarts.push(Restart {
            listening,
            ready,
            first_act_at,
            first_act,
            next_act,
            events: next.1.version,
            snapshot,
        });
        if is_over(&after) {
            bail!("the match ended during the restarts; ask for fewer events");
        }
        next = awaited(&mut client, &id, &seats).await?;
    }
    Ok(measured)
}

/// The first seat the match awaits, and its view.
async fn awaited(client: &mut Client, id: &str, seats: &[Seat]) -> Result<(usize, pb::MatchView)> {
    let spectator = get_view(client, id, None).await?;
    if is_over(&spectator) {
        bail!(
            "the match ended after {} events; ask for fewer",
            spectator.version
        );
    }
    let seat = *spectator
        .awaiting
        .first()
        .context("an active match awaits nobody")?;
    let index = seats
        .iter()
        .position(|(s, _)| *s == seat)
        .context("an unknown seat is awaited")?;
    let view = get_view(client, id, Some(&seats[index].1)).await?;
    Ok((index, view))
}

/// Plays a random legal action of `view`, or, `stall` times in a hundred, picks up the Lopti
/// play pile when that is legal (a hand then lasts longer); returns its latency and the view
/// after it.
async fn act(
    client: &mut Client,
    id: &str,
    (seat, token): &Seat,
    view: &pb::MatchView,
    (rng, stall): (&mut Lcg, u32),
) -> Result<(Duration, pb::MatchView)> {
    if view.legal_actions.is_empty() {
        bail!(
            "seat {seat} awaited at version {} with no legal action",
            view.version
        );
    }
    let pick_up = view.legal_actions.iter().find(|a| is_pick_up(a));
    let action = match pick_up {
        Some(pick_up) if rng.below(100) < stall as usize => pick_up.clone(),
        _ => view.legal_actions[rng.below(view.legal_actions.len())].clone(),
    };
    let request = pb::ActRequest {
        match_id: id.to_owned(),
        action: Some(action),
        request_id: format!("cold-{seat}-{}", view.version),
        expected_version: Some(view.version),
        seat: None,
        ..Default::default()
    };
    let sent = Instant::now();
    let response = client.act(authed(request, token)?).await?;
    let latency = sent.elapsed();
    let after = response
        .into_inner()
        .view
        .context("ActResponse without a view")?;
    Ok((latency, after))
}

fn is_pick_up(action: &pb::GameAction) -> bool {
    use pb::game_action::Game;
    use pb::lopti_action::Action;
    matches!(
        &action.game,
        Some(Game::Lopti(pb::LoptiAction {
            action: Some(Action::PickUp(_))
        }))
    )
}

/// Polls the health check until the service answers SERVING.
async fn wait_ready(grpc: &str) -> Result<()> {
    let deadline = Instant::now() + READY_WITHIN;
    while Instant::now() < deadline {
        if let Ok(channel) = Endpoint::from_shared(grpc.to_owned())?.connect().await {
            let mut health = HealthClient::new(channel);
            let request = HealthCheckRequest {
                service: SERVICE.to_owned(),
            };
            if let Ok(answer) = health.check(request).await
                && answer.into_inner().status == ServingStatus::Serving as i32
            {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    bail!("the server was not ready within {READY_WITHIN:?}")
}

/// The cluster's current WAL position, in bytes.
async fn wal_lsn(conn: &mut sqlx::PgConnection) -> Result<i64> {
    let lsn: i64 =
        sqlx::query_scalar("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint")
            .fetch_one(conn)
            .await?;
    Ok(lsn)
}

async fn newest_snapshot(database_url: &str, id: &str) -> Result<Option<u64>> {
    let mut conn = sqlx::PgConnection::connect(database_url).await?;
    let seq: Option<i64> =
        sqlx::query_scalar("SELECT max(seq) FROM snapshots WHERE match_id = $1::uuid")
            .bind(id)
            .fetch_one(&mut conn)
            .await?;
    conn.close().await.ok();
    Ok(seq.map(|s| s as u64))
}
