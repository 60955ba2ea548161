//! The transport-free core: the commands and reads of the service, a match's table and the
//! one place its events reach the rules, the typed event log, the games' adapters, the deal,
//! the bots, the audit, and the background work (turns, webhooks, fan-out, archiving, expiry).
//! It knows no transport: the gRPC and HTTP layers above it call the service.

pub mod archiver;
pub mod audit;
pub mod bots;
pub mod deal;
pub mod events;
pub mod expiry;
pub mod fanout;
pub mod games;
pub mod service;
pub mod table;
pub mod turns;
pub mod webhooks;
