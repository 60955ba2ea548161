//! End-to-end tests: the real `missive` binary on free ports, driven over gRPC and HTTP/JSON
//! (and, where a test must hold the clock, the service itself in this process).

mod amori;
mod audit;
mod authz;
mod browser;
mod cancel;
mod cli;
mod clock;
mod corpus;
mod deal;
mod decoding;
mod deploy;
mod games;
mod golden;
mod grpc;
mod helpers;
mod http;
mod invites;
mod limits;
mod lopti;
mod openapi;
mod play;
mod players;
mod replicas;
mod retries;
mod telemetry;
mod terminal;
mod tidy;
mod turns;
mod watch;
mod web;
mod webhook_pool;
mod webhooks;
