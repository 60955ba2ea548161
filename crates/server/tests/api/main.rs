//! End-to-end tests: the real `missive` binary on free ports, driven over gRPC and HTTP/JSON
//! (and, where a test must hold the clock, the service itself in this process).

mod amori;
mod authz;
mod browser;
mod cli;
mod clock;
mod corpus;
mod deal;
mod decoding;
mod deploy;
mod golden;
mod grpc;
mod helpers;
mod http;
mod invites;
mod limits;
mod lopti;
mod play;
mod players;
mod replicas;
mod retries;
mod telemetry;
mod turns;
mod watch;
mod web;
mod webhook_pool;
mod webhooks;
