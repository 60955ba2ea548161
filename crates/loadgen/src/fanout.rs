//! One match, many watchers: how long an act takes to reach every spectator of its match.
//!
//! For each of `matches` two-seat Love Letter matches in turn: create it, open `watchers`
//! spectator `WatchMatch` streams on it (`per_connection` to an HTTP/2 connection), let the two
//! players join, then play the match to its end, one act at a time with `think` between acts so
//! each act's updates are measured on their own rather than queued behind the last one's. Every
//! stream notes when each version reached it; an act's delay at one watcher is the time from the
//! act's request being sent to that watcher holding the act's last version.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{StreamExt, TryStreamExt};
use missive_proto::v1 as pb;

use crate::acts::{Client, Lcg, authed, connect, create_love_letter, get_view, is_over};
use crate::server::Server;
use crate::stats::Step;

/// Streams opened at once while setting up.
const SETUP_CONCURRENCY: usize = 128;
/// How long to wait for every stream to end after its match did.
const DRAIN: Duration = Duration::from_secs(30);

/// What a run measured, over all its matches.
#[derive(Debug, Default)]
pub(crate) struct Measured {
    /// Each act's own latency, request sent to response received.
    pub(crate) acts: Step,
    /// One sample per act and watcher: act sent to that watcher holding the act's version.
    pub(crate) delays: Step,
    /// One sample per act: first watcher to last watcher holding the act's version.
    pub(crate) spreads: Step,
    /// Updates of measured acts that some watcher never received.
    pub(crate) missed: u64,
    /// The server's CPU over the matches' play (not their setup), when it can be read.
    pub(crate) server_cpu: Option<Duration>,
}

/// What one stream saw: when each version reached it.
type Arrivals = Vec<(u64, Instant)>;

pub(crate) async fn run(
    server: &Server,
    watchers: usize,
    per_connection: usize,
    matches: usize,
    think: Duration,
    seed: u64,
) -> Result<Measured> {
    let per_connection = per_connection.max(1);
    let mut connections = Vec::with_capacity(watchers.div_ceil(per_connection));
    for _ in 0..watchers.div_ceil(per_connection) {
        connections.push(connect(&server.grpc).await?);
    }
    let mut setup = connect(&server.grpc).await?;
    let mut rng = Lcg(seed);
    let mut measured = Measured {
        server_cpu: Some(Duration::ZERO),
        ..Measured::default()
    };
    for _ in 0..matches {
        let id = create_love_letter(&mut setup).await?;
        let streams: Vec<_> = futures::stream::iter(0..watchers)
            .map(|i| {
                let mut client = connections[i / per_connection].clone();
                let id = id.clone();
                async move {
                    let response = client
                        .watch_match(pb::WatchMatchRequest {
                            match_id: id,
                            after_version: 1,
                            seat: None,
                        })
                        .await?;
                    anyhow::Ok(response.into_inner())
                }
            })
            .buffer_unordered(SETUP_CONCURRENCY)
            .try_collect()
            .await?;
        let mut listening = tokio::task::JoinSet::new();
        for mut stream in streams {
            listening.spawn(async move {
                let mut arrivals = Arrivals::with_capacity(64);
                while let Ok(Some(update)) = stream.message().await {
                    arrivals.push((update.version, Instant::now()));
                }
                arrivals
            });
        }
        let seats = [
            join(&mut setup, &id, "fan-0").await?,
            join(&mut setup, &id, "fan-1").await?,
        ];
        // The joins' updates reach the watchers before the first measured act.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let cpu_before = server.cpu_time();
        let sent = play(&mut setup, &id, &seats, think, &mut rng, &mut measured.acts).await?;
        measured.server_cpu = match (measured.server_cpu, cpu_before, server.cpu_time()) {
            (Some(sum), Some(before), Some(after)) => Some(sum + after.saturating_sub(before)),
            _ => None,
        };
        let mut per_act: HashMap<u64, (Instant, Vec<Instant>)> = sent
            .into_iter()
            .map(|(version, at)| (version, (at, Vec::with_capacity(watchers))))
            .collect();
        let drained = tokio::time::timeout(DRAIN, async {
            while let Some(arrivals) = listening.join_next().await {
                for (version, at) in arrivals? {
                    if let Some((_, seen)) = per_act.get_mut(&version) {
                        seen.push(at);
                    }
                }
            }
            anyhow::Ok(())
        })
        .await;
        match drained {
            Ok(result) => result?,
            Err(_) => bail!("watch streams of {id} still open {DRAIN:?} after the match ended"),
        }
        for (sent, seen) in per_act.into_values() {
            measured.missed += (watchers - seen.len()) as u64;
            for &at in &seen {
                measured.delays.record(at.saturating_duration_since(sent));
            }
            if let (Some(first), Some(last)) = (seen.iter().min(), seen.iter().max()) {
                measured.spreads.record(*last - *first);
            }
        }
    }
    Ok(measured)
}

/// Joins the match; returns the seat and its token.
async fn join(client: &mut Client, id: &str, player: &str) -> Result<(u32, String)> {
    let joined = client
        .join_match(pb::JoinMatchRequest {
            match_id: id.to_owned(),
            player: player.to_owned(),
            ..Default::default()
        })
        .await?
        .into_inner();
    Ok((joined.seat, joined.seat_token))
}

/// Plays the match to its end, one act at a time; returns each act's resulting version and
/// when its request was sent.
async fn play(
    client: &mut Client,
    id: &str,
    seats: &[(u32, String); 2],
    think: Duration,
    rng: &mut Lcg,
    acts: &mut Step,
) -> Result<Vec<(u64, Instant)>> {
    let mut sent = Vec::new();
    let mut view = get_view(client, id, Some(&seats[0].1)).await?;
    loop {
        if is_over(&view) {
            return Ok(sent);
        }
        let Some((seat, token)) = seats.iter().find(|(s, _)| view.awaiting.contains(s)) else {
            bail!("no seat awaited at version {} of {id}", view.version);
        };
        if view.seat != Some(*seat) {
            view = get_view(client, id, Some(token)).await?;
        }
        if view.legal_actions.is_empty() {
            bail!(
                "seat {seat} awaited at version {} with no legal action",
                view.version
            );
        }
        tokio::time::sleep(think).await;
        let action = view.legal_actions[rng.below(view.legal_actions.len())].clone();
        let request = pb::ActRequest {
            match_id: id.to_owned(),
            action: Some(action),
            request_id: format!("fan-{seat}-{}", view.version),
            expected_version: Some(view.version),
            seat: None,
            ..Default::default()
        };
        let at = Instant::now();
        let response = client.act(authed(request, token)?).await?;
        acts.record(at.elapsed());
        view = response
            .into_inner()
            .view
            .context("ActResponse without a view")?;
        sent.push((view.version, at));
    }
}
