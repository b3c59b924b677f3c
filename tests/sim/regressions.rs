//! The bugs the simulator found, each replayed step by step, so that each
//! stays fixed however the random workload changes.

use super::node::SimNode;
use super::storage::{Crash, Faults, SimStorage};
use queen::seams::message::Message;
use queen::seams::planner::{Answer, Command, PushItem};
use std::path::Path;

fn push(queue: &str, txn: &str) -> Command {
    Command::Push(vec![PushItem::new(queue.into(), "p".into(), &Message::new(txn.into(), b"v".to_vec()), 1)])
}

/// Seed 20: a killed process leaves its last write unsynced in the page
/// cache; the boot reads and replays it, and the node answers the next
/// write after it, into another queue's log. A power cut then lost the
/// unsynced entry, and recovery cut the answered one after it with it.
/// Recovery now syncs what it resumes.
#[test]
fn a_write_answered_after_a_boot_survives_a_power_cut_that_takes_the_page_cache() {
    let storage = SimStorage::new(1, &[Path::new("/sim")]);
    let checkpoint = tempfile::tempdir().unwrap();
    let mut node = SimNode::boot(&storage, checkpoint.path(), 1 << 20).unwrap();
    assert!(node.commit(vec![push("a", "first")], 1).1.is_ok());

    // The second write lands in the page cache, and its fdatasync fails: the node dies.
    storage.arm(Faults { sync_fails_ppm: 1_000_000, ..Faults::default() });
    assert!(node.commit(vec![push("a", "unsynced")], 2).1.is_err());
    node.die();
    storage.crash(Crash::Kill);

    let mut node = SimNode::boot(&storage, checkpoint.path(), 1 << 20).unwrap();
    let (_, answered) = node.commit(vec![push("b", "answered")], 3);
    let Ok(answers) = answered else { panic!("the write after the boot was not answered") };
    let Answer::Pushed(outcomes) = &answers[0] else { panic!("{answers:?}") };
    assert_eq!(outcomes[0].offset, 0);
    node.die();

    storage.crash(Crash::PowerCut);
    let node = SimNode::boot(&storage, checkpoint.path(), 1 << 20).unwrap();
    let b = node.store.queue_id("b").expect("the answered write's queue is there");
    let p = node.store.partition_id(b, "p").unwrap();
    assert_eq!(node.store.partition(b, p).unwrap().next_offset, 1, "the answered write is there");
    let a = node.store.queue_id("a").unwrap();
    let p = node.store.partition_id(a, "p").unwrap();
    assert_eq!(node.store.partition(a, p).unwrap().next_offset, 2, "and the replayed one it follows");
}

/// Seed 0, once boots read through a path that flips bits: a record whose
/// read failed its checksum refused the boot (or, in an active file, would
/// have been cut as a torn tail with everything answered after it). Reads
/// are now taken again before a failed checksum counts as damage.
#[test]
fn a_boot_whose_first_read_of_everything_is_flipped_recovers_everything() {
    let storage = SimStorage::new(2, &[Path::new("/sim")]);
    let checkpoint = tempfile::tempdir().unwrap();
    let mut node = SimNode::boot(&storage, checkpoint.path(), 1024).unwrap();
    for n in 0..40 {
        let queue = ["a", "b", "c"][n % 3];
        assert!(node.commit(vec![push(queue, &format!("t{n}"))], n as i64).1.is_ok());
        if n == 20 {
            node.checkpoint();
        }
    }
    node.die();
    storage.crash(Crash::Kill);

    storage.flip_first_reads();
    let node = SimNode::boot(&storage, checkpoint.path(), 1024).expect("the boot sees through flipped reads");
    assert_eq!(node.store.applied.index, 40, "every entry replays");
    for queue in ["a", "b", "c"] {
        let q = node.store.queue_id(queue).unwrap();
        let p = node.store.partition_id(q, "p").unwrap();
        assert!(node.store.partition(q, p).unwrap().next_offset >= 13, "{queue} keeps its messages");
    }
}

/// Seed 8094: a layout file (no checksum of its own) was read until two
/// reads agreed, at most three, and a third read was taken as it came: a
/// good first read followed by two flipped ones made `REPLICATOR` read
/// `loccl`, and the boot refused the directory as another replicator's.
/// Now the content that comes back twice is taken.
#[test]
fn a_layout_file_read_right_once_and_flipped_twice_still_reads_right() {
    let storage = SimStorage::new(3, &[Path::new("/sim")]);
    let checkpoint = tempfile::tempdir().unwrap();
    let mut node = SimNode::boot(&storage, checkpoint.path(), 1024).unwrap();
    assert!(node.commit(vec![push("a", "t1")], 1).1.is_ok());
    node.die();
    storage.crash(Crash::Kill);

    // The boot's first reads are of LANES: right, flipped, flipped.
    storage.script_read_flips(&[false, true, true]);
    let node = SimNode::boot(&storage, checkpoint.path(), 1024).expect("the layout reads right");
    assert_eq!(node.store.applied.index, 1, "the push replays");
}
