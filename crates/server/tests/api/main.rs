//! End-to-end tests: the real `missive` binary on free ports, driven over gRPC and HTTP/JSON.

mod grpc;
mod helpers;
mod http;
mod replicas;
