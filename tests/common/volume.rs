//! Small volumes for the tests of a full disk: a tmpfs of a few MiB, and
//! payloads that fill it at the rate they are sent.

/// A tmpfs of a few MiB mounted on a directory, unmounted when dropped;
/// `None`, said loudly, where this process may not mount (not root).
pub struct SmallVolume {
    pub path: std::path::PathBuf,
    _tmp: Option<tempfile::TempDir>,
}

impl SmallVolume {
    /// A volume of `mib` MiB on a fresh directory.
    pub fn mount(mib: u64) -> Option<SmallVolume> {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("vol");
        std::fs::create_dir(&path).unwrap();
        let mut vol = SmallVolume::mount_at(&path, mib)?;
        vol._tmp = Some(tmp);
        Some(vol)
    }

    /// A volume of `mib` MiB mounted over the directory `path`, with what
    /// `path` held copied onto it.
    pub fn mount_at(path: &std::path::Path, mib: u64) -> Option<SmallVolume> {
        let held = path.with_extension("held");
        std::fs::rename(path, &held).unwrap();
        std::fs::create_dir(path).unwrap();
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(path)
            .output();
        let vol = match out {
            Ok(o) if o.status.success() => Some(SmallVolume { path: path.to_path_buf(), _tmp: None }),
            // Root can always mount a tmpfs, so there a failure is the test's own.
            other if unsafe { libc::geteuid() } == 0 => panic!("mounting a {mib} MiB tmpfs as root failed: {other:?}"),
            other => {
                eprintln!("\n\n*** SKIPPED: cannot mount a {mib} MiB tmpfs for a full-disk test ({other:?}); run as root ***\n");
                None
            }
        };
        let copied = std::process::Command::new("cp").arg("-a").arg(held.join(".")).arg(path).status().unwrap();
        assert!(copied.success(), "copying {} onto the volume failed", held.display());
        std::fs::remove_dir_all(&held).unwrap();
        vol
    }

    /// Grows the volume to `mib` MiB, with what it holds.
    pub fn grow(&self, mib: u64) {
        let out = std::process::Command::new("mount")
            .args(["-o", &format!("remount,size={mib}m")])
            .arg(&self.path)
            .status()
            .unwrap();
        assert!(out.success(), "growing the volume failed");
    }

    /// Used share of the volume in percent, as the disk gate counts it.
    pub fn used_pct(&self) -> f64 {
        let c = std::ffi::CString::new(self.path.as_os_str().as_encoded_bytes()).unwrap();
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0);
        let used = (st.f_blocks - st.f_bfree) as f64;
        100.0 * used / (used + st.f_bavail as f64)
    }
}

impl Drop for SmallVolume {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// A payload of `len` characters that zstd cannot shrink much (six random
/// bits each, from a xorshift: quick even in a debug build).
pub fn incompressible(len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x: u64 = rand::random::<u64>() | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ALPHABET[(x >> 58) as usize] as char
        })
        .collect()
}
