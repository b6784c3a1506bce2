//! Damaged traces: every cut and every flipped byte must be reported as the
//! right error for the right chunk, never accepted and never a panic.

mod common;

use common::*;
use proptest::prelude::*;
use reprise_trace::*;

/// What reading `bytes[..cut]` must report.
fn check_cut(
    bytes: &[u8],
    starts: &[usize],
    cut: usize,
    r: Result<(Header, Vec<Chunk>, Footer), TraceError>,
) {
    let first = starts[0];
    let n_frames = starts.len() - 1; // data chunks + footer
    match r {
        Ok(_) => assert_eq!(
            cut,
            bytes.len(),
            "cut at {cut} of {} read as complete",
            bytes.len()
        ),
        Err(e) if cut < first => {
            let ok = matches!(e, TraceError::BadHeader(_))
                || (cut == 0 && matches!(e, TraceError::NotATrace));
            assert!(ok, "cut at {cut} inside the prologue gave {e:?}");
        }
        Err(e) => {
            let i = frame_of(starts, cut);
            assert!(i < n_frames, "cut {cut}");
            if starts[i] == cut {
                assert!(
                    matches!(e, TraceError::MissingFooter { chunks } if chunks == i as u64),
                    "cut at {cut}: {e:?}"
                );
            } else {
                assert!(
                    matches!(e, TraceError::Truncated { chunk, offset } if chunk == i as u64 && offset == starts[i] as u64),
                    "cut at {cut} in frame {i} (from {}): {e:?}",
                    starts[i]
                );
                assert!(
                    e.to_string()
                        .contains(&format!("chunk {i} at byte {}", starts[i])),
                    "{e}"
                );
            }
        }
    }
}

/// What reading `bytes` with byte `at` xor-ed must report.
fn check_flip(starts: &[usize], at: usize, r: Result<(Header, Vec<Chunk>, Footer), TraceError>) {
    match r {
        Ok(_) => panic!("flip at {at} went unnoticed"),
        Err(e) if at < starts[0] => {
            assert!(
                matches!(
                    e,
                    TraceError::NotATrace
                        | TraceError::UnsupportedVersion { .. }
                        | TraceError::BadHeader(_)
                ),
                "flip at {at} in the prologue gave {e:?}"
            );
        }
        Err(e) => {
            let i = frame_of(starts, at);
            assert!(
                matches!(e, TraceError::Checksum { chunk, offset } if chunk == i as u64 && offset == starts[i] as u64),
                "flip at {at} in frame {i} (from {}): {e:?}",
                starts[i]
            );
            assert!(
                e.to_string()
                    .contains(&format!("chunk {i} at byte {}", starts[i])),
                "{e}"
            );
        }
    }
}

#[test]
fn every_cut_is_an_error_naming_the_right_chunk() {
    let bytes = to_bytes(&chunks());
    let starts = frame_starts(&bytes);
    for cut in 0..=bytes.len() {
        check_cut(&bytes, &starts, cut, read_bytes(&bytes[..cut]));
    }
}

#[test]
fn every_flipped_byte_is_caught_in_the_right_chunk() {
    let bytes = to_bytes(&chunks());
    let starts = frame_starts(&bytes);
    for at in 0..bytes.len() {
        for mask in [0x01u8, 0x80, 0xFF] {
            let mut b = bytes.clone();
            b[at] ^= mask;
            check_flip(&starts, at, read_bytes(&b));
        }
    }
}

#[test]
fn reader_keeps_failing_after_an_error() {
    let bytes = to_bytes(&chunks());
    let starts = frame_starts(&bytes);
    let mut b = bytes.clone();
    b[starts[2] + 20] ^= 1;
    let mut r = TraceReader::from_reader(std::io::Cursor::new(b)).unwrap();
    assert!(r.next_chunk().unwrap().is_some());
    assert!(r.next_chunk().unwrap().is_some());
    assert!(matches!(
        r.next_chunk(),
        Err(TraceError::Checksum { chunk: 2, .. })
    ));
    assert!(r.next_chunk().is_err());
    assert!(r.footer().is_none());
}

fn arb_chunks() -> impl Strategy<Value = Vec<(ChunkKind, Vec<u8>)>> {
    let kind = prop_oneof![
        Just(ChunkKind::Events),
        Just(ChunkKind::Stdout),
        Just(ChunkKind::Stderr)
    ];
    let data = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..300),
        (any::<u8>(), 0usize..5000).prop_map(|(b, n)| vec![b; n]),
    ];
    prop::collection::vec((kind, data), 0..8)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_traces_round_trip(input in arb_chunks()) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        write_trace(&p, &input);
        let (_, got, f) = read_path(&p).unwrap();
        let got: Vec<_> = got.into_iter().map(|c| (c.kind, c.data)).collect();
        prop_assert_eq!(&got, &input);
        prop_assert_eq!(f.chunks, input.len() as u64);
    }

    #[test]
    fn cut_files_in_the_last_chunks_are_never_ok(input in arb_chunks(), back in 1usize..400) {
        let dir = tempfile::tempdir().unwrap();
        let bytes = to_bytes(&input);
        let starts = frame_starts(&bytes);
        let cut = bytes.len().saturating_sub(back);
        let p = tmpfile(&dir, "cut", &bytes[..cut]);
        check_cut(&bytes, &starts, cut, read_path(&p));
        if cut >= starts[0] {
            let s = summarize(&p).unwrap();
            prop_assert!(s.error.is_some() && s.footer.is_none());
            prop_assert_eq!(s.chunks_ok as usize, frame_of(&starts, cut).min(input.len()));
        }
    }

    #[test]
    fn flipped_bytes_anywhere_are_caught(input in arb_chunks(), pos in any::<prop::sample::Index>(), mask in 1u8..=255) {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = to_bytes(&input);
        let starts = frame_starts(&bytes);
        let at = pos.index(bytes.len());
        bytes[at] ^= mask;
        let p = tmpfile(&dir, "flip", &bytes);
        check_flip(&starts, at, read_path(&p));
        if at >= starts[0] {
            let s = summarize(&p).unwrap();
            prop_assert_eq!(s.chunks_ok as usize, frame_of(&starts, at));
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(mut junk in prop::collection::vec(any::<u8>(), 0..600), keep in 0usize..40) {
        // Start with a plausible prefix so the fuzzing reaches past the magic.
        let good = to_bytes(&[(ChunkKind::Events, b"abc".to_vec())]);
        let keep = keep.min(good.len());
        let mut bytes = good[..keep].to_vec();
        bytes.append(&mut junk);
        let _ = read_bytes(&bytes);
    }
}
