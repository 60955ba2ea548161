//! End-to-end tests: the real `missive` binary on free ports, driven over gRPC and HTTP/JSON.

mod amori;
mod grpc;
mod helpers;
mod http;
mod lopti;
mod replicas;
mod turns;
mod webhooks;
