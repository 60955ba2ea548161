//! What every floor uses and which knows no match: the settings, the errors and their codes,
//! logs, spans and metrics, seat and player tokens, the limits on input and on clients, and
//! the clock. Nothing here imports the core or a transport.

pub mod auth;
pub mod clock;
pub mod config;
pub mod error;
pub mod identity;
pub mod limits;
pub mod metrics;
pub mod ratelimit;
pub mod telemetry;
