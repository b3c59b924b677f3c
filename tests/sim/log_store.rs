//! The log store read by index and cut at runtime, directly: across
//! segment rolls, with entries that span several logs (stubs), and through
//! a crash and a boot after the cut.

use super::node::SimNode;
use super::storage::{Crash, SimStorage};
use queen::seams::message::Message;
use queen::seams::planner::Entry;
use queen::seams::planner::{Command, ConfigureQueue, PushItem};
use queen::seams::replicate::log_store::LogReadError;
use queen::seams::store::{Member, Membership};
use std::path::Path;

/// Small files, so that a few entries roll several.
const SEGMENT_BYTES: u64 = 512;

/// One push to two queues (so its entry has a stub), named by `n`.
fn push(n: u64) -> Command {
    let item = |queue: &str| {
        let m = Message::new(format!("{queue}-{n}"), format!("value {n} of {queue}").into_bytes());
        PushItem::new(queue.into(), "p".into(), &m, 1)
    };
    Command::Push(vec![item("a"), item("b")])
}

fn segments(storage: &SimStorage) -> usize {
    storage.snapshot().keys().filter(|p| p.extension().is_some_and(|e| e == "qlog")).count()
}

fn boot(storage: &SimStorage, checkpoint: &Path) -> SimNode {
    SimNode::boot(storage, checkpoint, SEGMENT_BYTES).unwrap()
}

#[test]
fn every_entry_reads_back_by_index_across_segment_rolls_and_a_purged_one_says_so() {
    let storage = SimStorage::new(7, &[Path::new("/sim")]);
    let checkpoint = tempfile::tempdir().unwrap();
    let mut node = boot(&storage, checkpoint.path());
    let mut written: Vec<Entry> = Vec::new();
    for n in 0..30 {
        let (entries, answered) = node.commit(vec![push(n)], 1_000 + n as i64);
        answered.unwrap();
        written.extend(entries);
    }
    assert!(segments(&storage) > 6, "the logs rolled: {} files", segments(&storage));
    assert_eq!(node.last_index(), 30);
    assert_eq!(node.entries(1..=30).unwrap(), written, "each entry reads back as it was appended");

    node.purge_through(10);
    assert!(matches!(node.entries(10..=10), Err(LogReadError::Purged { index: 10, purged: 10 })));
    assert!(matches!(node.entries(31..=31), Err(LogReadError::PastEnd { index: 31, last: 30 })));
    assert_eq!(node.entries(11..=30).unwrap(), written[10..]);

    // A boot indexes what recovery replays: the entries after the checkpoint.
    node.checkpoint();
    for n in 30..35 {
        written.extend(node.commit(vec![push(n)], 2_000 + n as i64).0);
    }
    node.die();
    storage.crash(Crash::PowerCut);
    let node = boot(&storage, checkpoint.path());
    assert!(matches!(node.entries(30..=30), Err(LogReadError::Purged { .. })));
    assert_eq!(node.entries(31..=35).unwrap(), written[30..]);
}

#[test]
fn a_cut_across_a_roll_removes_the_later_entries_and_the_log_goes_on_after_it_through_a_boot() {
    let storage = SimStorage::new(8, &[Path::new("/sim")]);
    let checkpoint = tempfile::tempdir().unwrap();
    let mut node = boot(&storage, checkpoint.path());
    for n in 0..10 {
        node.commit(vec![push(n)], 1_000 + n as i64).1.unwrap();
    }
    // Twenty entries appended and never applied, as a leader that then lost its term.
    let before = segments(&storage);
    let appended: Vec<Entry> = (10..30).flat_map(|n| node.append(vec![push(n)], 2_000 + n as i64)).collect();
    assert!(segments(&storage) >= before + 4, "the appended entries rolled files");
    assert_eq!(node.entries(11..=30).unwrap(), appended);

    // Cut after entry 15: fifteen entries go, over several files.
    let grown = segments(&storage);
    assert_eq!(node.truncate_after(15), 15);
    assert!(segments(&storage) < grown, "the files past the cut were removed");
    assert_eq!(node.last_index(), 15);
    assert!(matches!(node.entries(16..=16), Err(LogReadError::PastEnd { index: 16, last: 15 })));
    assert_eq!(node.entries(11..=15).unwrap(), appended[..5], "what the cut keeps still reads back");

    // Commit what was kept, and go on writing after the cut.
    node.apply_through(15);
    let mut after = Vec::new();
    for n in 100..110 {
        let (entries, answered) = node.commit(vec![push(n)], 3_000 + n as i64);
        answered.unwrap();
        after.extend(entries);
    }
    assert_eq!(after.first().unwrap().id.index, 16, "the log continues at the index after the cut");
    assert_eq!(node.entries(16..=25).unwrap(), after);
    let offsets = |node: &SimNode| {
        let a = node.store.queue_id("a").unwrap();
        node.store.partition(a, node.store.partition_id(a, "p").unwrap()).unwrap().next_offset
    };
    assert_eq!(offsets(&node), 25, "15 pushes kept and 10 after the cut, none of the 15 cut");

    // A boot finds the log as the cut left it.
    node.die();
    storage.crash(Crash::PowerCut);
    let node = boot(&storage, checkpoint.path());
    assert_eq!(node.store.applied.index, 25);
    assert_eq!(offsets(&node), 25);
    assert_eq!(node.entries(16..=25).unwrap(), after);
}

fn push_to(queue: &str, partition: &str, txn: &str) -> Command {
    let m = Message::new(txn.into(), format!("value of {txn}").into_bytes());
    Command::Push(vec![PushItem::new(queue.into(), partition.into(), &m, 1)])
}

#[test]
fn entries_above_the_checkpoint_read_back_and_are_cut_after_reclaim_rewrote_an_older_file() {
    let storage = SimStorage::new(9, &[Path::new("/sim")]);
    let checkpoint = tempfile::tempdir().unwrap();
    // Files large enough that one holds old and new messages side by side.
    let mut node = SimNode::boot(&storage, checkpoint.path(), 4096).unwrap();
    let t0 = 1_700_000_000_000_000i64;
    let options = serde_json::json!({"retentionSeconds": 1}).as_object().unwrap().clone();
    let configure = ConfigureQueue { queue: "r".into(), namespace: None, task: None, options };
    node.commit(vec![Command::Configure(configure)], t0).1.unwrap();
    for n in 0..6 {
        node.commit(vec![push_to("r", "old", &format!("old-{n}"))], t0 + n).1.unwrap();
    }
    // Later (within the seal age, so the file is sealed by size and not by
    // age), newer messages into another partition of the same log, until
    // the file holding both is sealed.
    let t1 = t0 + 5_000_000;
    let mut n = 0;
    while segments(&storage) < 3 {
        node.commit(vec![push_to("r", "new", &format!("new-{n}"))], t1 + n).1.unwrap();
        n += 1;
    }
    // Retention drops the old partition's messages; the checkpoint passes them.
    let r = node.store.queue_id("r").unwrap();
    let old = node.store.partition_id(r, "old").unwrap();
    let retain = Command::Retain { partitions: vec![(r, old)], txn_window_min_s: 0 };
    node.commit(vec![retain], t1 + 10_000_000).1.unwrap();
    assert_eq!(node.store.partition(r, old).unwrap().txns_start, 6, "the old messages are dead");
    node.checkpoint();
    let checkpointed = node.store.applied.index;

    // Entries above the checkpoint, appended and not yet applied.
    let appended: Vec<Entry> =
        (0..6).flat_map(|i| node.append(vec![push_to("s", "p", &format!("s-{i}"))], t1 + 20_000_000 + i)).collect();

    let freed = node.reclaim();
    assert_eq!(freed.rewritten, 1, "the file with dead and live messages was rewritten: {freed:?}");
    assert_eq!(node.entries(checkpointed + 1..=checkpointed + 6).unwrap(), appended);
    for i in 0..n as u64 {
        assert_eq!(
            node.transaction_at("r", "new", i),
            Some(format!("new-{i}")),
            "a live message moved with the rewrite"
        );
    }

    assert_eq!(node.truncate_after(checkpointed + 2), 4);
    assert_eq!(node.entries(checkpointed + 1..=checkpointed + 2).unwrap(), appended[..2]);
    node.apply_through(checkpointed + 2);
    node.commit(vec![push_to("s", "p", "s-after")], t1 + 30_000_000).1.unwrap();
    assert_eq!(node.transaction_at("s", "p", 2).as_deref(), Some("s-after"), "the log goes on after the cut");

    node.die();
    storage.crash(Crash::PowerCut);
    let node = SimNode::boot(&storage, checkpoint.path(), 4096).unwrap();
    assert_eq!(node.store.applied.index, checkpointed + 3);
    assert_eq!(node.transaction_at("s", "p", 2).as_deref(), Some("s-after"));
    assert_eq!(node.transaction_at("r", "new", 0).as_deref(), Some("new-0"));
}

#[test]
fn a_boot_replays_through_the_committed_index_and_keeps_the_durable_entries_after_it() {
    let storage = SimStorage::new(9, &[Path::new("/sim")]);
    let checkpoint = tempfile::tempdir().unwrap();
    let mut node = boot(&storage, checkpoint.path());
    let mut written = Vec::new();
    for n in 0..10 {
        let (entries, answered) = node.commit(vec![push(n)], 1_000 + n as i64);
        answered.unwrap();
        written.extend(entries);
    }
    node.save_committed(written[5].id).unwrap();
    // Durable and not committed: a follower's entries past the commit point.
    written.extend((10..15).flat_map(|n| node.append(vec![push(n)], 2_000 + n as i64)));
    let last = written.last().unwrap().id.index;

    node.die();
    storage.crash(Crash::PowerCut);
    let mut node = boot(&storage, checkpoint.path());
    assert_eq!(node.store.applied, written[5].id, "the replay stops at the committed index");
    assert_eq!(node.last_index(), last, "and the durable entries after it stay in the log");
    assert_eq!(node.entries(written[6].id.index..=last).unwrap(), written[6..], "readable by index");

    // The next term commits them: its blank entry follows them, and
    // committing it applies them, read back from the log.
    let membership =
        Membership { configs: vec![vec![1]], members: vec![(1, Member::default()), (2, Member::default())] };
    let opened = node.lead_new_term(3_000, Some(membership.clone())).unwrap();
    assert_eq!(opened[0].id.index, last + 1);
    assert!(opened[0].id.term > written[0].id.term, "a later term");
    assert!(opened[0].body.effects.is_empty(), "a blank entry");
    assert_eq!(node.store.applied, opened[1].id);
    let a = node.store.queue_id("a").unwrap();
    let p = node.store.partition_id(a, "p").unwrap();
    assert_eq!(node.store.partition(a, p).unwrap().next_offset, 15, "every push applied once");
    let row = node.store.membership.iter().next().map(|(_, row)| row.clone()).unwrap();
    assert_eq!((row.log_id, row.membership), (opened[1].id, membership));
}
