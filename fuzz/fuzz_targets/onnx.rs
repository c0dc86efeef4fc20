//! Fuzz target: ONNX models as they are: the protobuf wire reader, the ModelProto and
//! GraphProto fields, initializers (raw_data, typed fields, packed and unpacked) and
//! external data references (refused from memory, as the target opens them).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ztensor_fuzz::open_and_walk(data));
