//! The attribute data model and every CBOR and JSON byte the library reads or writes:
//! `cbor` (the value type, the one reader of CBOR items with the cursor schema parsers
//! walk, the encoders), `json` (attributes rendered and parsed, and the JSON the formats
//! read), `typed` (the typed attribute tree built from CBOR). The crate root re-exports
//! the three as `crate::cbor`, `crate::json` and `crate::typed`, their public paths.

pub mod cbor;
pub mod json;
pub mod typed;
