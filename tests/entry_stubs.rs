//! An entry that touches 1,000 single-partition queues writes one whole entry
//! record, in the lowest touched log, and a 61-byte stub in each of the 999
//! others.

mod common;

use common::{push_body, qlog_files, Node};
use queen::seams::qlog::scan;
use queen::seams::qlog::RecordKind;
use queen::seams::qlog::{EntryRecord, Stub, STUB_FRAMED_BYTES};
use serde_json::json;

#[tokio::test]
async fn one_entry_over_1000_queues_writes_one_record_and_999_stubs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut node = Node::start(&dir, &[]).await;
    let items: Vec<_> =
        (0..1000).map(|i| (format!("fan-{i:04}"), "Default".to_string(), format!("t{i}"), json!({"i": i}))).collect();
    let (status, body) = node.post("/api/v1/push", &push_body(&items)).await;
    assert_eq!(status, 201, "{body}");
    node.terminate();

    // q0, the system log, holds the node's first entry (its effect catalogue).
    let mut files = qlog_files(&dir);
    files.remove("q0");
    assert_eq!(files.len(), 1000, "one log per queue");
    let mut entries = Vec::new();
    let mut stubs = Vec::new();
    for (log, paths) in &files {
        let buf = std::fs::read(&paths[0]).unwrap();
        for row in scan(&buf).unwrap().rows {
            let body = &buf[row.pos as usize + 12..(row.pos + row.frame_len as u64) as usize];
            match row.kind {
                RecordKind::Entry | RecordKind::EntryFormat3 => {
                    entries.push((log.clone(), EntryRecord::decode(body).unwrap()))
                }
                RecordKind::Stub => {
                    assert_eq!(row.frame_len as usize, STUB_FRAMED_BYTES);
                    assert_eq!(STUB_FRAMED_BYTES, 61);
                    stubs.push(Stub::decode(body).unwrap());
                }
                RecordKind::Message => {}
            }
        }
    }
    assert_eq!(entries.len(), 1, "one whole entry record");
    let (home_log, entry) = &entries[0];
    assert_eq!(entry.touched.len(), 1000);
    assert_eq!(*home_log, format!("q{}", entry.touched[0]), "the whole record sits in the lowest touched log");
    assert_eq!(stubs.len(), 999, "a stub in each other touched log");
    let mut ordinals: Vec<u32> = stubs.iter().map(|s| s.ordinal).collect();
    ordinals.sort_unstable();
    assert_eq!(ordinals, (1..1000).collect::<Vec<u32>>());
    assert!(stubs.iter().all(|s| s.id == entry.id && s.home == entry.touched[0] && s.copies == 1000));
}
