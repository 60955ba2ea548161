//! The expiry of open matches: an open match nobody joins is closed (abandoned, with a
//! `closed` event of reason `expired`) once it has gone without an event for the configured
//! time, by whichever replica finds it first ([`Service::expire_open_matches`]).
//!
//! Every replica looks, through a bounded query on an index of open matches by their last
//! change; replicas that find the same match race for one append at its version, which one
//! wins: the others read the match again and find it closed. A replica that dies mid-sweep
//! leaves the rest to the next look, its own or another's.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::service::Service;

/// How often a server looks for expired open matches: a quarter of the expiry time, between a
/// tenth of a second and a minute (a match expires at most that late).
pub fn poll(after: Duration) -> Duration {
    (after / 4).clamp(Duration::from_millis(100), Duration::from_secs(60))
}

/// Runs until `stop` resolves, closing the open matches idle for `after` every [`poll`].
pub async fn run(service: Arc<Service>, after: Duration, stop: impl Future<Output = ()>) {
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return,
            () = tokio::time::sleep(poll(after)) => {}
        }
        match service.expire_open_matches(after).await {
            Ok(0) => {}
            Ok(closed) => tracing::debug!(closed, "closed expired open matches"),
            Err(e) => {
                tracing::warn!(error = %e, "looking for expired open matches failed; retrying later")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_look_is_a_quarter_of_the_expiry_within_bounds() {
        assert_eq!(poll(Duration::from_secs(2)), Duration::from_millis(500));
        assert_eq!(poll(Duration::from_millis(10)), Duration::from_millis(100));
        assert_eq!(
            poll(Duration::from_secs(7 * 86_400)),
            Duration::from_secs(60)
        );
    }
}
