//! End-to-end tests: the real `missive` binary on free ports, driven over gRPC and HTTP/JSON
//! (and, where a test must hold the clock, the service itself in this process).

mod amori;
mod browser;
mod cli;
mod clock;
mod corpus;
mod deal;
mod deploy;
mod golden;
mod grpc;
mod helpers;
mod http;
mod limits;
mod lopti;
mod replicas;
mod retries;
mod telemetry;
mod turns;
mod web;
mod webhooks;
