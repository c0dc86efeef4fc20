//! `Reader::load_batch`: many reads at once, equal to one read at a time, each request
//! with its own result.

use ztensor::load::{Request, Slice};
use ztensor::{DType, ErrorKind, Reader, WriteOptions, Writer};

#[test]
fn a_batch_equals_single_reads_whatever_the_threads() {
    let mut w = Writer::new_with(Vec::new(), &v12()).unwrap();
    let mut expected = Vec::new();
    for i in 0..200u32 {
        // 1.6 MiB in all: past the size a batch runs in parallel from.
        let values: Vec<u8> = (0..8192u32).map(|k| (k * 7 + i) as u8).collect();
        let opts = if i % 3 == 0 {
            WriteOptions::zstd(1)
        } else {
            WriteOptions::default()
        };
        w.add(&format!("t{i}"), DType::U8, &[8192], &values, &opts)
            .unwrap();
        expected.push(values);
    }
    let file = w.finish().unwrap();
    let r = Reader::from_slice(&file).unwrap();
    for threads in [0, 1, 2, 7] {
        let mut bufs: Vec<Vec<u8>> = (0..200).map(|_| vec![0u8; 8192]).collect();
        let mut wide = vec![0u8; 8192 * 2];
        let mut nothing = vec![0u8; 8192];
        let mut piece = vec![0u8; 100];
        let mut requests: Vec<Request<'_>> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, dst)| Request::host(i, 0, dst))
            .collect();
        requests.push(Request::host(3, 0, &mut wide).convert(DType::U16));
        // Bytes 8100.. of a component of 8192: a range past its end.
        requests.push(Request::host(6, 0, &mut piece).slice(Slice::Range {
            first: 8100,
            count: 100,
        }));
        // A request for an object that doesn't exist, among the others.
        requests.insert(100, Request::host(999, 0, &mut nothing));
        let results = r.load_batch(&mut requests, threads);
        assert_eq!(results.len(), 203);
        // The missing object and a range past the end fail alone, where they were asked.
        assert_eq!(
            results[100].as_ref().unwrap_err().kind(),
            ErrorKind::NotFound
        );
        assert_eq!(
            results[202].as_ref().unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        let ok = |r: &[ztensor::Result<()>]| r.iter().all(|r| r.is_ok());
        assert!(ok(&results[..100]) && ok(&results[101..202]), "{threads}");
        drop(requests);
        assert_eq!(bufs, expected);
        let widened: Vec<u8> = expected[3]
            .iter()
            .flat_map(|&b| u16::from(b).to_le_bytes())
            .collect();
        assert_eq!(wide, widened);
    }
}

/// zTensor v1.2.0 (the default is v2): these tests' files list their objects in the order
/// written, as v1.2 keeps them (v2 lists them by name).
fn v12() -> ztensor::CreateOptions {
    ztensor::CreateOptions {
        version: ztensor::FileVersion::V1_2,
        ..ztensor::CreateOptions::default()
    }
}
