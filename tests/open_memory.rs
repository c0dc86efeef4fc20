//! Opening a file allocates a small multiple of its manifest size, whatever the manifest
//! holds: the manifest is parsed straight into the model, attributes stay as bytes.
//! A counting allocator measures the peak while opening.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use ztensor::cbor::Value;
use ztensor::{DType, Reader, WriteOptions, Writer};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Tests in this binary run one at a time so that their counts don't mix.
static SERIAL: Mutex<()> = Mutex::new(());

// SAFETY: forwards to the system allocator, only counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
        PEAK.fetch_max(now, Ordering::SeqCst);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Peak bytes allocated (above what was live before) while opening `bytes`.
fn peak_while_opening(bytes: &[u8]) -> (usize, usize) {
    let base = CURRENT.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let r = Reader::from_slice(bytes).unwrap();
    let peak = PEAK.load(Ordering::SeqCst) - base;
    let manifest =
        u64::from_le_bytes(bytes[bytes.len() - 16..bytes.len() - 8].try_into().unwrap()) as usize;
    drop(r);
    (peak, manifest)
}

#[test]
fn huge_attribute_trees_cost_their_bytes_only() {
    let _serial = SERIAL.lock().unwrap();
    // One million one-byte CBOR items: a decoded tree would be ~32 MB.
    let items = Value::Array(vec![Value::Unsigned(0); 1_000_000]);
    let mut w = Writer::new_with(Vec::new(), &v12()).unwrap();
    w.add("x", DType::U8, &[1], &[1], &WriteOptions::default())
        .unwrap();
    w.set_object_attributes(
        "x",
        Value::Map(vec![(Value::Text("zeros".into()), items.clone())]),
    )
    .unwrap();
    w.set_file_attributes(Value::Map(vec![(Value::Text("zeros".into()), items)]))
        .unwrap();
    let file = w.finish().unwrap();
    let (peak, manifest) = peak_while_opening(&file);
    println!("attributes: manifest {manifest} bytes, peak while opening {peak} bytes");
    assert!(manifest > 2_000_000);
    assert!(
        peak <= 2 * manifest + (1 << 20),
        "peak {peak} for a {manifest}-byte manifest"
    );
}

#[test]
fn many_small_objects_cost_a_small_multiple() {
    let _serial = SERIAL.lock().unwrap();
    let mut w = Writer::new_with(Vec::new(), &v12()).unwrap();
    for i in 0..20_000 {
        w.add(
            &format!("t{i}"),
            DType::U8,
            &[0, 1, 2, 3, 4, 5, 6, 7],
            &[],
            &WriteOptions::default(),
        )
        .unwrap();
    }
    let file = w.finish().unwrap();
    let (peak, manifest) = peak_while_opening(&file);
    println!(
        "objects: manifest {manifest} bytes, peak while opening {peak} bytes ({:.1}x)",
        peak as f64 / manifest as f64
    );
    assert!(
        peak <= 3 * manifest + (1 << 20),
        "peak {peak} for a {manifest}-byte manifest"
    );
}

/// zTensor v1.2.0 (the default is v2): these tests' files list their objects in the order
/// written, as v1.2 keeps them (v2 lists them by name).
fn v12() -> ztensor::CreateOptions {
    ztensor::CreateOptions {
        version: ztensor::FileVersion::V1_2,
        ..ztensor::CreateOptions::default()
    }
}
