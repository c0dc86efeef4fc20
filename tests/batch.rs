//! `Reader::load_batch`: many reads at once, equal to one read at a time, each request
//! with its own result.

use ztensor::{DType, ErrorKind, LoadRequest, Reader, WriteOptions, Writer};

#[test]
fn a_batch_equals_single_reads_whatever_the_threads() {
    let mut w = Writer::new(Vec::new()).unwrap();
    let mut expected = Vec::new();
    for i in 0..200u32 {
        let values: Vec<u8> = (0..4096u32).map(|k| (k * 7 + i) as u8).collect();
        let opts = if i % 3 == 0 {
            WriteOptions::zstd(1)
        } else {
            WriteOptions::default()
        };
        w.add(&format!("t{i}"), DType::U8, &[4096], &values, &opts)
            .unwrap();
        expected.push(values);
    }
    let file = w.finish().unwrap();
    let r = Reader::from_slice(&file).unwrap();
    for threads in [0, 1, 2, 7] {
        let mut bufs: Vec<Vec<u8>> = (0..200).map(|_| vec![0u8; 4096]).collect();
        let mut wide = vec![0u8; 4096 * 2];
        let mut piece = vec![0u8; 100];
        let mut requests: Vec<LoadRequest<'_>> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, dst)| LoadRequest {
                object: i,
                component: 0,
                dst,
                offset: None,
                convert: None,
            })
            .collect();
        requests.push(LoadRequest {
            object: 3,
            component: 0,
            dst: &mut wide,
            offset: None,
            convert: Some(DType::U16),
        });
        requests.push(LoadRequest {
            object: 6,
            component: 0,
            dst: &mut piece,
            offset: Some(4000),
            convert: None,
        });
        let results = r.load_batch(&mut requests, threads);
        assert_eq!(results.len(), 202);
        // A range past the end fails alone.
        assert_eq!(
            results[201].as_ref().unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        assert!(results[..201].iter().all(|r| r.is_ok()), "{threads}");
        drop(requests);
        assert_eq!(bufs, expected);
        let widened: Vec<u8> = expected[3]
            .iter()
            .flat_map(|&b| u16::from(b).to_le_bytes())
            .collect();
        assert_eq!(wide, widened);
    }
}
