//! Safety limits applied to every file a reader opens. Hostile files are normal input:
//! each limit turns a crafted file into a `Limit` error instead of a crash or a huge
//! allocation.

/// The hard ceiling of `Limits::max_cbor_depth`.
pub const MAX_CBOR_DEPTH: usize = 256;

/// Safety limits; `Limits::default()` gives the documented defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest manifest accepted, in bytes. Default 1 GiB (the spec's bound).
    pub max_manifest_size: u64,
    /// Largest decoded size of one component, in bytes. Default 64 GiB.
    pub max_decoded_size: u64,
    /// Largest total of decoded bytes a reader keeps cached for views of encoded
    /// components. Default: unlimited (`u64::MAX`).
    pub max_total_cached: u64,
    /// Largest number of dimensions of a shape. Default 64.
    pub max_rank: usize,
    /// Longest object or role name, in bytes. Default 65536.
    pub max_name_length: usize,
    /// Deepest nesting of CBOR containers in a manifest. Default 128; values above
    /// `MAX_CBOR_DEPTH` (256) act as 256, so the decoder's stack use stays bounded.
    pub max_cbor_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_manifest_size: 1 << 30,
            max_decoded_size: 64 << 30,
            max_total_cached: u64::MAX,
            max_rank: 64,
            max_name_length: 65536,
            max_cbor_depth: 128,
        }
    }
}
