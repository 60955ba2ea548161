//! The black-box suite: the real `missive` binary, started as an operator starts it, driven
//! only through its public gRPC and HTTP/JSON APIs, as a third-party client would. Nothing
//! here imports the server's code: the HTTP bodies are JSON written by hand, gRPC goes through
//! the client generated from the published `.proto` files, and signals are sent with `kill`.
//!
//! - `tour`: the README's curl tour, run as written.
//! - `api_doc`: docs/API.md's curl transcript, compared line by line with what the server
//!   prints, and its Python client example.
//! - `games`: a full match of every game, over both transports, on both stores.
//! - `resilience`: retries after a crash, reconnects, a watch resumed after a dropped stream,
//!   and a finished match's audit export verified offline (and a tampered one refused).
//! - `drain`: SIGTERM under load: readiness off at once, calls in flight finish, watch streams
//!   end with a status to resume from, exit 0, nothing acknowledged lost.
//! - `balanced`: two replicas behind a real HAProxy; one is killed mid-match and every client
//!   carries on through the other.

mod api_doc;
mod balanced;
mod drain;
mod games;
mod harness;
mod resilience;
mod tour;
