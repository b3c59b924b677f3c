//! The CI-sized version of the fuzz target (protocol/fuzz): random bytes,
//! and captured requests with random bytes flipped, never panic the decoder;
//! every frame ends as a request or a named error.

use bytes::Bytes;
use proptest::prelude::*;

#[path = "support/feed.rs"]
mod support;
use support::feed;

fn captured() -> Vec<Bytes> {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/captured");
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files.into_iter().map(|p| Bytes::from(std::fs::read(p).unwrap())).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        feed(&data);
    }

    #[test]
    fn mutated_captures(pick in any::<prop::sample::Index>(), flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
        let all = captured();
        let mut data = all[pick.index(all.len())].to_vec();
        // Keep the size prefix honest so the decoder, not the framer, meets the damage.
        for (at, byte) in flips {
            let i = 4 + at.index(data.len() - 4);
            data[i] = byte;
        }
        feed(&data);
    }
}

/// The first findings of protocol/fuzz: a few bytes declaring a huge array
/// used to abort the process on allocation. They are refused now.
#[test]
fn huge_declared_lengths() {
    // Metadata v1 declaring 0x7fffffff topics; JoinGroup v6 (flexible) declaring a huge compact array.
    let metadata = [0, 0, 0, 14, 0, 3, 0, 1, 0, 0, 0, 1, 0, 0, 0x7f, 0xff, 0xff, 0xff];
    feed(&metadata);
    let mut buf = bytes::BytesMut::from(&metadata[..]);
    let frame = protocol::frame::split_frame(&mut buf, 1 << 20).unwrap().unwrap();
    assert!(matches!(protocol::request::decode(frame), Err(protocol::request::DecodeError::Malformed { .. })));
    for crash in
        std::fs::read_dir(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-findings")).unwrap()
    {
        feed(&std::fs::read(crash.unwrap().path()).unwrap());
    }
}
