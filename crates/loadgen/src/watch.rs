//! Idle watch streams: how many `WatchMatch` streams one server holds, and what each costs in
//! resident memory.
//!
//! Creates enough open (never joined, so idle) Love Letter matches first, then opens spectator
//! streams on them in steps, `per_match` streams per match and `per_connection` streams per
//! HTTP/2 connection, reading the server's VmRSS after each step. The baseline is taken after
//! the matches exist, so the figure is what the streams add. After each step one `GetMatch`
//! checks that the server still answers.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use futures::{StreamExt, TryStreamExt};
use missive_proto::v1 as pb;

use crate::acts::{connect, create_love_letter};
use crate::server::Server;

/// How many requests the generator keeps in flight while setting up.
const SETUP_CONCURRENCY: usize = 32;

/// One measured step.
#[derive(Debug)]
pub(crate) struct Row {
    pub(crate) streams: usize,
    pub(crate) rss: u64,
    pub(crate) per_stream: f64,
    pub(crate) fds: Option<usize>,
    pub(crate) probe: Duration,
}

pub(crate) async fn run(
    server: &Server,
    levels: &[usize],
    per_match: usize,
    per_connection: usize,
    mut report: impl FnMut(&Row),
) -> Result<u64> {
    let most = levels.iter().copied().max().unwrap_or(0);
    let per_match = per_match.max(1);
    let per_connection = per_connection.max(1);
    let matches = most.div_ceil(per_match);
    let mut setup = connect(&server.grpc).await?;
    let started = Instant::now();
    let ids: Vec<String> = futures::stream::iter(0..matches)
        .map(|_| {
            let mut client = setup.clone();
            async move { create_love_letter(&mut client).await }
        })
        .buffer_unordered(SETUP_CONCURRENCY)
        .try_collect()
        .await?;
    eprintln!(
        "created {matches} idle matches in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let baseline = server.rss_bytes()?;
    let mut connections = Vec::new();
    let mut streams = Vec::with_capacity(most);
    let mut sorted = levels.to_vec();
    sorted.sort_unstable();
    for level in sorted {
        while connections.len() < level.div_ceil(per_connection) {
            connections.push(connect(&server.grpc).await?);
        }
        let opening = Instant::now();
        let from = streams.len();
        let opened: Vec<_> = futures::stream::iter(from..level)
            .map(|i| {
                let mut client = connections[i / per_connection].clone();
                let id = ids[i / per_match].clone();
                async move {
                    let response = client
                        .watch_match(pb::WatchMatchRequest {
                            match_id: id,
                            // The match's creation is version 1: nothing to catch up on.
                            after_version: 1,
                            seat: None,
                        })
                        .await?;
                    anyhow::Ok(response.into_inner())
                }
            })
            .buffer_unordered(SETUP_CONCURRENCY * 4)
            .try_collect()
            .await?;
        streams.extend(opened);
        eprintln!(
            "opened {} streams in {:.1} s",
            level - from,
            opening.elapsed().as_secs_f64()
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        let rss = server.rss_bytes()?;
        let probe_started = Instant::now();
        setup
            .get_match(pb::GetMatchRequest {
                match_id: ids[0].clone(),
            })
            .await
            .context("the server stopped answering")?;
        let probe = probe_started.elapsed();
        report(&Row {
            streams: streams.len(),
            rss,
            per_stream: rss.saturating_sub(baseline) as f64 / streams.len().max(1) as f64,
            fds: server.open_fds().ok(),
            probe,
        });
    }
    drop(streams);
    Ok(baseline)
}
