//! The public API of Missive, generated from `proto/missive/v1`: the messages (with their
//! canonical proto3 JSON mapping, via pbjson), the gRPC client and server, and the file
//! descriptor set that the reflection service and the OpenAPI document are built from.
//!
//! Only types generated from the schema live here; mapping them to and from the rules
//! engines' types is the server's job, at its edge.

#![allow(
    missing_docs,
    unreachable_pub,
    missing_debug_implementations,
    clippy::all
)]

/// Package `missive.v1`.
pub mod v1 {
    include!(concat!(env!("OUT_DIR"), "/missive.v1.rs"));
    include!(concat!(env!("OUT_DIR"), "/missive.v1.serde.rs"));
}

/// The encoded `FileDescriptorSet` of the schema, for gRPC reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/missive_descriptor.bin"));
