//! The `missive` binary. `missive` (or `missive serve`): parse the configuration, set up
//! logging, bind both listeners, print where they are, and serve until Ctrl-C or SIGTERM.
//! `missive verify`, `history` and `watch` are clients, `missive migrate` sets up the store
//! (`cli.rs`).

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use missive_server::Config;
use missive_server::cli::{self, Cli, Command};
use tokio::net::TcpListener;

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> anyhow::Result<ExitCode> {
    let command = Cli::parse().into_command();
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.enable_all();
    if let Command::Serve(config) = &command
        && let Some(threads) = config.runtime.worker_threads
    {
        runtime.worker_threads(threads.get());
    }
    let runtime = runtime.build().context("starting the async runtime")?;
    runtime.block_on(async move {
        Ok(match command {
            Command::Serve(config) => {
                serve(*config).await?;
                ExitCode::SUCCESS
            }
            Command::Verify(args) => cli::verify(&args),
            Command::History(args) => cli::history(&args).await,
            Command::Watch(args) => cli::watch(&args).await,
            Command::Migrate(args) => cli::migrate(&args).await,
            Command::Play(args) => cli::play(&args).await,
        })
    })
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let _telemetry = missive_server::telemetry::init(&config.logs)?;
    tracing::debug!(?config, "configuration");

    let service = missive_server::build_service(&config).await?;
    let grpc = TcpListener::bind(config.listen.grpc_addr)
        .await
        .with_context(|| format!("binding gRPC to {}", config.listen.grpc_addr))?;
    let http = TcpListener::bind(config.listen.http_addr)
        .await
        .with_context(|| format!("binding HTTP to {}", config.listen.http_addr))?;
    // Printed on stdout, one line each, so scripts and tests can read the bound ports.
    println!("missive gRPC listening on {}", grpc.local_addr()?);
    println!("missive HTTP listening on http://{}", http.local_addr()?);
    println!("missive store: {}", service.store().backend_name());

    missive_server::run(config, service, grpc, http, shutdown_signal()).await?;
    tracing::info!("stopped");
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM; in-flight requests then drain.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
    tracing::info!("shutting down");
}
