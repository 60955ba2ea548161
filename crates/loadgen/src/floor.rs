//! A floor for the acts: the same concurrency of gRPC health checks (`grpc.health.v1.Health/
//! Check`) against the same server. A check is one unary call through the server's whole gRPC
//! stack that touches no database and no match, so an action (one unary call, a stream message
//! to each player, a durable append) cannot be cheaper than one; checks/raw bounds acts/raw on
//! the machine the three share.

use std::time::{Duration, Instant};

use anyhow::Result;
use tonic::transport::Endpoint;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

use crate::stats::Step;

/// `clients` callers, one HTTP/2 connection each, checking health for `window`.
pub(crate) async fn checks(grpc: &str, clients: usize, window: Duration) -> Result<Step> {
    let mut callers = Vec::with_capacity(clients);
    for _ in 0..clients {
        let channel = Endpoint::from_shared(grpc.to_owned())?.connect().await?;
        callers.push(HealthClient::new(channel));
    }
    let deadline = Instant::now() + window;
    let mut tasks = tokio::task::JoinSet::new();
    for mut client in callers {
        tasks.spawn(async move {
            let mut step = Step::default();
            while Instant::now() < deadline {
                let sent = Instant::now();
                let result = client.check(HealthCheckRequest::default()).await;
                let done = Instant::now();
                match result {
                    Ok(_) if done <= deadline => step.record(done - sent),
                    Ok(_) => {}
                    Err(status) => step.error(format!("Check {:?}", status.code())),
                }
            }
            step
        });
    }
    let mut step = Step::default();
    while let Some(one) = tasks.join_next().await {
        step.merge(one?);
    }
    step.window = window;
    Ok(step)
}
