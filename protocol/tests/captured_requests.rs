//! Request frames captured from real clients (kcat 1.7 with librdkafka 1.x,
//! confluent-kafka with librdkafka 2.x, the Java client 4.x) by
//! `scripts/capture-kafka-requests.py`: each decodes at the version its
//! client chose, its produced records decode in the compression the client
//! used, and what decodes encodes back to the same body.

use bytes::BytesMut;
use protocol::frame::split_frame;
use protocol::messages::{ApiKey, RequestKind};
use protocol::request::{decode, encode, DecodeError};
use protocol::versions;
use std::path::PathBuf;

fn captured() -> Vec<(String, bytes::Bytes)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/captured");
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let mut buf = BytesMut::from(&std::fs::read(&p).unwrap()[..]);
            let frame = split_frame(&mut buf, usize::MAX >> 1).unwrap().expect("a whole frame");
            assert!(buf.is_empty(), "{name}: one frame per file");
            (name, frame)
        })
        .collect()
}

#[test]
fn every_captured_request_decodes_at_its_clients_version() {
    let all = captured();
    assert!(all.len() >= 40, "the captures are missing");
    for (name, frame) in all {
        let parts: Vec<&str> = name.rsplitn(3, '-').collect();
        let (key, version): (i16, i16) = (parts[1].parse().unwrap(), parts[0].trim_start_matches('v').parse().unwrap());
        let api_key = ApiKey::try_from(key).unwrap();
        match decode(frame.clone()) {
            Ok(req) => {
                assert_eq!((req.api_key, req.version), (api_key, version), "{name}");
                // What decodes encodes back to the same bytes after the client id.
                let again = encode(api_key, version, req.correlation_id(), &req.body).unwrap();
                let again = decode(again.slice(4..)).unwrap();
                assert_eq!(again.body, req.body, "{name}: the body survives a round trip");
                if let RequestKind::Produce(p) = &req.body {
                    for t in &p.topic_data {
                        for part in &t.partition_data {
                            let batches = protocol::records::decode_produced(
                                part.records.clone().unwrap(),
                                &protocol::decompress::Allowance::new(1 << 24),
                            )
                            .unwrap();
                            assert!(batches.iter().all(|b| !b.records.is_empty()), "{name}: records decode");
                        }
                    }
                }
            }
            Err(DecodeError::UnsupportedVersion { api_key: k, version: v, .. }) => {
                assert!(!versions::is_supported(k, v), "{name}: refused a served version");
                assert_eq!(k, ApiKey::ApiVersions, "{name}: only ApiVersions is sent before negotiation");
            }
            Err(e) => panic!("{name}: {e}"),
        }
    }
}
