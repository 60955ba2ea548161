//! The Missive server: gRPC and HTTP/JSON over the rules engines and the event store.
//!
//! [`run`] starts both transports on already-bound listeners, and the turn worker
//! ([`turns`]), and serves until the shutdown future resolves; `main` only parses the
//! configuration, sets up logging and binds.
//!
//! Its modules stand on three floors, each importing only its own and the ones beneath: the
//! transports (this file, [`grpc`], [`http`], [`web`], [`routes`], [`openapi`], [`cli`]); the
//! transport-free core, [`domain`]; and what every floor uses, [`common`].
//!
//! **Architecture invariant:** protobuf types stay at the edge. The service core speaks the
//! API's messages; rules types are mapped to and from them only in [`games`].

pub mod cli;
pub mod common;
pub mod domain;
pub mod grpc;
pub mod routes;

// Each module of the core and of the common parts keeps its short path (`crate::service`).
pub use common::{auth, clock, config, error, identity, limits, metrics, ratelimit, telemetry};
pub use domain::{
    archiver, audit, bots, deal, events, expiry, fanout, games, service, table, turns, webhooks,
};

use std::future::Future;
use std::sync::Arc;

use anyhow::Context;
use missive_store::Store;
use tokio::net::TcpListener;

pub use crate::config::Config;
use crate::service::{Service, Settings};

/// Connects the store (running its migrations) and builds the service.
pub async fn build_service(config: &Config) -> anyhow::Result<Arc<Service>> {
    if config.store.embedded() {
        let dir = &config.store.data_dir;
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the data directory {}", dir.display()))?;
    }
    let store = Store::connect(&config.store.url(), config.store.options())
        .await
        .context("connecting to the store")?;
    Ok(Arc::new(Service::new(
        store,
        Settings {
            allow_fixed_deck: config.requests.allow_fixed_deck,
            cache_capacity: config.store.cache_capacity,
            watch_recheck: config.watch.recheck(),
            webhook_allow_private: config.webhooks.webhook_allow_private,
            clock: clock::Clock::system(),
            identity: identity::Verifier::from_config(&config.identity)
                .context("configuring player tokens")?
                .map(Arc::new),
            open_match_expiry: config.turns.open_match_expiry(),
        },
    )))
}

/// Serves gRPC on `grpc` and HTTP on `http` until `shutdown` resolves, then drains.
pub async fn run(
    config: Config,
    service: Arc<Service>,
    grpc: TcpListener,
    http: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    metrics::install();
    let grace = config.shutdown.grace();
    // Other replicas' appends wake this server's watchers.
    let fanout = fanout::spawn(&service);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    // The webhook delivery worker stops with the servers; a delivery cut short stays leased
    // and is attempted again (here or by another replica) once its lease runs out.
    let webhook_worker = tokio::spawn(webhooks::run(
        service.store().clone(),
        webhooks::Settings::from(&config.webhooks),
        service.webhook_wake(),
        stop_rx.clone(),
    ));
    let draining = service.clone();
    tokio::spawn(async move {
        shutdown.await;
        // Health checks answer "not serving" and watch streams end first; then the listeners
        // stop taking connections and the calls in flight finish.
        draining.drain();
        let _ = stop_tx.send(true);
    });
    // One limiter for both transports: a client's requests count the same over either.
    let limiter = ratelimit::Limiter::new(ratelimit::Settings::from(&config.limits));
    let housekeeping = tokio::spawn(ratelimit::housekeeping(
        limiter.clone(),
        std::time::Duration::from_secs(60),
    ));
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|stop| *stop).await;
        }
    };
    let grpc_task = tokio::spawn(grpc_server(
        config.clone(),
        service.clone(),
        limiter.clone(),
        grpc,
        stopped(),
    ));
    let turns_task = tokio::spawn(turns::run(
        service.clone(),
        config.turns.poll(),
        config.turns.lease(),
        stopped(),
    ));
    let archiver = config.store.archiver_poll().map(|poll| {
        let work = archiver::Work {
            poll,
            archive_after: config.store.archive_after(),
            pack_live: config.store.pack_live,
        };
        tokio::spawn(archiver::run(service.clone(), work, stopped()))
    });
    // Open matches nobody joins are closed by whichever replica finds them first.
    let expirer = service
        .open_match_expiry()
        .map(|after| tokio::spawn(expiry::run(service.clone(), after, stopped())));
    let http_task = tokio::spawn(http::serve(config, service, limiter, http, stopped()));
    let servers = async {
        let (g, h, t) = tokio::join!(grpc_task, http_task, turns_task);
        g.context("gRPC task")??;
        h.context("HTTP task")??;
        t.context("turn worker")?;
        anyhow::Ok(())
    };
    // Give the calls in flight the grace period after the signal, then stop regardless: an
    // answer cut short was either committed or is retried by its client with its request id.
    let deadline = async {
        stopped().await;
        tokio::time::sleep(grace).await;
    };
    let result = tokio::select! {
        result = servers => result,
        () = deadline => {
            tracing::warn!("connections still open after the grace period; stopping anyway");
            Ok(())
        }
    };
    webhook_worker.abort();
    housekeeping.abort();
    if let Some(archiver) = archiver {
        archiver.abort();
    }
    if let Some(expirer) = expirer {
        expirer.abort();
    }
    if let Some(fanout) = fanout {
        fanout.abort();
    }
    result
}

/// The refusal of a gRPC call over a limit: RESOURCE_EXHAUSTED with its `RetryInfo`.
fn grpc_refusal(error: error::ApiError) -> axum::http::Response<tonic::body::Body> {
    tonic::Status::from(error).into_http()
}

async fn grpc_server(
    config: Config,
    service: Arc<Service>,
    limiter: Arc<ratelimit::Limiter>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    use missive_proto::v1::missive_server::MissiveServer;

    let (health_reporter, health) = tonic_health::server::health_reporter();
    health_reporter
        .set_serving::<MissiveServer<grpc::Grpc>>()
        .await;
    // Readiness turns false as soon as the drain starts, for the whole server ("") too.
    let mut stopping = service.stopping();
    tokio::spawn(async move {
        let _ = stopping.wait_for(|stop| *stop).await;
        health_reporter
            .set_not_serving::<MissiveServer<grpc::Grpc>>()
            .await;
        health_reporter
            .set_service_status("", tonic_health::ServingStatus::NotServing)
            .await;
    });
    // Reflection in both versions: v1, and v1alpha for the tools that still ask for it. Each
    // lists every service served, both reflection services included.
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(missive_proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(
                tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
            )
    };
    let reflection_v1 = reflection()
        .build_v1()
        .context("building the reflection service")?;
    let reflection_v1alpha = reflection()
        .build_v1alpha()
        .context("building the v1alpha reflection service")?;
    let identity = service.identity();
    let missive = tonic::service::interceptor::InterceptedService::new(
        MissiveServer::new(grpc::Grpc::new(service))
            .max_decoding_message_size(config.requests.max_body_bytes),
        grpc::authenticate,
    );
    let mut builder = tonic::transport::Server::builder();
    if let Some(age) = config.connections.max_connection_age() {
        builder = builder.max_connection_age(age);
    }
    builder
        // gRPC-Web: browsers speak it over HTTP/1.1 (and HTTP/2), translated to gRPC here.
        // (hyper closes an HTTP/1.1 connection whose headers take over 30 s.)
        .accept_http1(true)
        .timeout(config.requests.timeout())
        .concurrency_limit_per_connection(config.requests.concurrency_limit)
        // Pings find peers that went away or stopped reading, whose connections then close.
        .http2_keepalive_interval(config.connections.keepalive_interval())
        .http2_keepalive_timeout(config.connections.keepalive_timeout())
        // CORS outermost, so a preflight is answered before anything else sees it.
        .layer(tower::util::option_layer(http::cors(&config.browsers)))
        .layer(tonic_web::GrpcWebLayer::new())
        .layer(metrics::GrpcMetricsLayer)
        // The identity layer (a verified player) goes above the rate limit, which keys on it.
        .layer(identity::grpc_layer(identity))
        .layer(ratelimit::RateLimitLayer::new(
            limiter,
            ratelimit::Scope::Grpc,
            grpc_refusal,
        ))
        // One limit across all connections; the per-connection one alone would let many
        // clients together exceed it.
        .layer(tower::limit::GlobalConcurrencyLimitLayer::new(
            config.requests.concurrency_limit,
        ))
        .add_service(health)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(missive)
        .serve_with_incoming_shutdown(
            // Without TCP_NODELAY a response's trailers wait on the client's delayed ACK
            // (about 40 ms on Linux): every unary call would take at least that long.
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            shutdown,
        )
        .await
        .context("serving gRPC")?;
    Ok(())
}

pub mod http;
pub mod openapi;
pub mod web;
