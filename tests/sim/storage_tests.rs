//! The simulated storage itself: what each crash keeps, and the faults.

use super::storage::{Crash, Faults, SimStorage, SECTOR};
use queen::seams::storage::Storage;
use std::path::Path;

fn root() -> &'static Path {
    Path::new("/sim")
}

#[test]
fn a_kill_keeps_every_byte_and_a_power_cut_only_the_synced_ones() {
    let s = SimStorage::new(1, &[root()]);
    let dir = root().join("q1");
    s.create_dir_all(&dir).unwrap();
    s.sync_dir(root()).unwrap();
    let f = s.open(&dir.join("a"), true).unwrap();
    s.sync_dir(&dir).unwrap();
    f.write_all_at(b"synced", 0).unwrap();
    f.datasync().unwrap();
    f.write_all_at(b"+unsynced", 6).unwrap();

    s.crash(Crash::Kill);
    assert_eq!(s.read(&dir.join("a")).unwrap(), b"synced+unsynced");
    s.crash(Crash::PowerCut);
    assert_eq!(s.read(&dir.join("a")).unwrap(), b"synced");
}

#[test]
fn a_name_never_synced_into_its_directory_is_gone_after_a_power_cut() {
    let s = SimStorage::new(2, &[root()]);
    let f = s.open(&root().join("kept"), true).unwrap();
    f.write_all_at(b"x", 0).unwrap();
    f.datasync().unwrap();
    s.sync_dir(root()).unwrap();
    let g = s.open(&root().join("lost"), true).unwrap();
    g.write_all_at(b"y", 0).unwrap();
    g.datasync().unwrap();
    s.rename(&root().join("kept"), &root().join("renamed")).unwrap();

    s.crash(Crash::PowerCut);
    let mut names: Vec<String> = s.list(root()).unwrap().into_iter().map(|e| e.name).collect();
    names.sort();
    assert_eq!(names, vec!["kept".to_string()], "the unsynced rename and the unsynced new name are undone");
}

#[test]
fn a_torn_power_cut_lands_whole_sectors_of_the_unsynced_bytes_or_none() {
    let mut torn_seen = false;
    for seed in 0..32 {
        let s = SimStorage::new(seed, &[root()]);
        let f = s.open(&root().join("f"), true).unwrap();
        s.sync_dir(root()).unwrap();
        f.write_all_at(&vec![1u8; SECTOR * 2], 0).unwrap();
        f.datasync().unwrap();
        f.write_all_at(&vec![2u8; SECTOR * 4], SECTOR as u64).unwrap();
        s.crash(Crash::TornPowerCut);
        let after = s.read(&root().join("f")).unwrap();
        assert!(after.len() >= SECTOR * 2 && after.len() <= SECTOR * 5, "length {}", after.len());
        assert!(after.len().is_multiple_of(SECTOR));
        for sector in after.chunks(SECTOR) {
            let first = sector[0];
            assert!(sector.iter().all(|b| *b == first), "a sector is whole, old or new");
        }
        assert_eq!(&after[..SECTOR], &vec![1u8; SECTOR][..], "a synced sector nothing overwrote stays");
        torn_seen |= after.len() > SECTOR * 2 || after[SECTOR] == 2;
    }
    assert!(torn_seen, "some seed lands an unsynced sector");
}

#[test]
fn armed_faults_fail_writes_and_syncs_and_flip_read_bits_and_are_counted() {
    let s = SimStorage::new(3, &[root()]);
    s.arm(Faults { write_fails_ppm: 1_000_000, sync_fails_ppm: 1_000_000, read_flips_ppm: 1_000_000 });
    let f = s.open(&root().join("f"), true).unwrap();
    let e = f.write_all_at(b"abc", 0).unwrap_err();
    assert!(matches!(e.raw_os_error(), Some(libc::EIO | libc::ENOSPC)), "{e}");
    assert_eq!(f.datasync().unwrap_err().raw_os_error(), Some(libc::EIO));
    s.arm(Faults { read_flips_ppm: 1_000_000, ..Faults::default() });
    f.write_all_at(&[0u8; 64], 0).unwrap();
    let mut buf = [0u8; 64];
    f.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(buf.iter().map(|b| b.count_ones()).sum::<u32>(), 1, "one bit flipped in what the read returned");
    let c = s.counts();
    assert_eq!(c.write_eio + c.write_enospc, 1);
    assert_eq!(c.sync_eio, 1);
    assert_eq!(c.read_flips, 1);
}

#[test]
fn the_same_seed_makes_the_same_crash() {
    let run = |seed| {
        let s = SimStorage::new(seed, &[root()]);
        let f = s.open(&root().join("f"), true).unwrap();
        s.sync_dir(root()).unwrap();
        for i in 0..20u8 {
            f.write_all_at(&vec![i; 700], u64::from(i) * 700).unwrap();
            if i % 7 == 0 {
                f.datasync().unwrap();
            }
        }
        s.crash(Crash::TornPowerCut);
        s.snapshot()
    };
    assert_eq!(run(9), run(9));
}
