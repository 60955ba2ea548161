//! Generates the Rust types, the tonic services and the proto3 JSON mapping from
//! every `.proto` file of `proto/missive/v1`, with the vendored `protoc` so a build needs no system install.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    // The service first, then every game's file: a new game's `.proto` is found by its folder.
    let mut games = Vec::new();
    for entry in std::fs::read_dir(root.join("missive/v1"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "proto") && !path.ends_with("missive.proto") {
            games.push(path);
        }
    }
    games.sort();
    let protos: Vec<PathBuf> = std::iter::once(root.join("missive/v1/missive.proto"))
        .chain(games)
        .collect();
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let descriptors = out.join("missive_descriptor.bin");

    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    let well_known = protoc_bin_vendored::include_path()?;

    tonic_prost_build::configure()
        .file_descriptor_set_path(&descriptors)
        .compile_well_known_types(true)
        .extern_path(".google.protobuf", "::pbjson_types")
        // A request that does not decode is the caller's error, not the server's (lib.rs).
        .codec_path("crate::codec::Codec")
        .compile_with_config(config, &protos, &[root.clone(), well_known])?;

    let set = std::fs::read(&descriptors)?;
    // Responses carry fields at their default values too (seat 0, false, empty lists), so a
    // client that does not know proto3's defaults reads them; input accepts either form.
    pbjson_build::Builder::new()
        .register_descriptors(&set)?
        .emit_fields()
        .build(&[".missive.v1"])?;

    println!("cargo:rerun-if-changed={}", root.display());
    Ok(())
}
