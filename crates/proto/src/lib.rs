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

/// The gRPC codec of the generated services and clients: prost's, except that a message that
/// does not decode is `INVALID_ARGUMENT` (the caller sent it) rather than prost's `INTERNAL`,
/// which is kept for the server's own faults and is what operators alert on.
pub mod codec {
    use prost::Message;
    use tonic::Status;
    use tonic::codec::{BufferSettings, DecodeBuf, Decoder};
    use tonic_prost::{ProstCodec, ProstDecoder};

    /// The buffer a response's encoder starts with: a streaming response (a watch) holds
    /// its buffer as long as it is open, and tonic's default is 8 KiB. Larger messages grow it.
    pub const ENCODE_BUFFER: usize = 1024;

    /// How much a stream encodes before it yields: tonic's default.
    const YIELD_THRESHOLD: usize = 32 * 1024;

    /// [`ProstCodec`], with [`Invalid`] decoding and an [`ENCODE_BUFFER`] to encode into.
    #[derive(Debug, Clone)]
    pub struct Codec<T, U>(ProstCodec<T, U>);

    impl<T, U> Default for Codec<T, U> {
        fn default() -> Self {
            Codec(ProstCodec::default())
        }
    }

    impl<T, U> tonic::codec::Codec for Codec<T, U>
    where
        T: Message + Send + 'static,
        U: Message + Default + Send + 'static,
    {
        type Encode = T;
        type Decode = U;
        type Encoder = <ProstCodec<T, U> as tonic::codec::Codec>::Encoder;
        type Decoder = Invalid<U>;

        fn encoder(&mut self) -> Self::Encoder {
            ProstCodec::<T, U>::raw_encoder(BufferSettings::new(ENCODE_BUFFER, YIELD_THRESHOLD))
        }

        fn decoder(&mut self) -> Self::Decoder {
            Invalid(self.0.decoder())
        }
    }

    /// prost's decoder, its errors made `INVALID_ARGUMENT`.
    #[derive(Debug, Clone)]
    pub struct Invalid<U>(ProstDecoder<U>);

    impl<U: Message + Default> Decoder for Invalid<U> {
        type Item = U;
        type Error = Status;

        fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
            self.0.decode(buf).map_err(|status| {
                Status::invalid_argument(format!(
                    "the message is not valid protobuf: {}",
                    status.message()
                ))
            })
        }

        fn buffer_settings(&self) -> BufferSettings {
            self.0.buffer_settings()
        }
    }
}
