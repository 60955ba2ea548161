//! The HTTP/JSON transport (filled in below).
use crate::{Config, service::Service};
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Serves HTTP until `shutdown`.
pub async fn serve(
    _config: Config,
    _service: Arc<Service>,
    _listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    shutdown.await;
    Ok(())
}
