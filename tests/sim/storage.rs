//! Simulated storage: the qlog's files in memory, with what a crash or a
//! failing disk does to them, drawn from the simulation's seed.
//!
//! Every file remembers the bytes its last `datasync` made durable, and
//! every directory the entries its last `sync_dir` made durable. A kill
//! keeps everything (the page cache survives a process); a power cut puts
//! back only what was synced, and a torn power cut also lands each unsynced
//! 512-byte sector, or not, at random. Faults, when armed: a write or a
//! datasync that fails with EIO or ENOSPC (a failed write may have landed a
//! prefix), and a bit flipped in what a read returns.

use queen::seams::storage::{DirEntry, Reserve, Storage, StorageFile};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::io::{Error, ErrorKind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub const SECTOR: usize = 512;

/// How often each fault strikes, per operation, in parts per million.
#[derive(Debug, Clone, Copy, Default)]
pub struct Faults {
    pub write_fails_ppm: u32,
    pub sync_fails_ppm: u32,
    pub read_flips_ppm: u32,
}

/// What the faults did, per class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultCounts {
    pub write_eio: u64,
    pub write_enospc: u64,
    pub sync_eio: u64,
    pub read_flips: u64,
    pub kills: u64,
    pub power_cuts: u64,
    pub torn_power_cuts: u64,
    pub torn_sectors: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crash {
    /// The process dies; the operating system keeps every byte written.
    Kill,
    /// The machine loses power: only what was synced is there.
    PowerCut,
    /// As a power cut, with each unsynced sector landed or not.
    TornPowerCut,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    Dir,
    File(u64),
}

#[derive(Debug, Default)]
struct Inode {
    data: Vec<u8>,
    synced: Vec<u8>,
}

#[derive(Debug)]
struct Fs {
    rng: StdRng,
    faults: Faults,
    /// A broken disk, for proving the simulator catches what it must: a
    /// datasync answers without making anything durable.
    lying_syncs: bool,
    /// When set, the first read of every place (a file read whole, or a
    /// position in a file) returns one bit flipped, and later reads do not:
    /// the places read so far.
    flip_first_reads: Option<BTreeSet<(u64, u64)>>,
    /// Whether each of the next reads flips a bit, in order; once it runs
    /// out, reads flip as the armed faults say.
    read_script: VecDeque<bool>,
    counts: FaultCounts,
    next_inode: u64,
    inodes: HashMap<u64, Inode>,
    /// The names as the running process sees them.
    live: BTreeMap<PathBuf, Node>,
    /// Per directory, the entries its last `sync_dir` made durable.
    durable: BTreeMap<PathBuf, BTreeMap<String, Node>>,
    /// Directories that always exist (the simulated machine's own).
    roots: BTreeSet<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct SimStorage {
    fs: Arc<Mutex<Fs>>,
}

fn not_found(path: &Path) -> Error {
    Error::new(ErrorKind::NotFound, format!("{}: no such file or directory (simulated)", path.display()))
}

fn eio() -> Error {
    Error::from_raw_os_error(libc::EIO)
}

impl Fs {
    fn strikes(&mut self, ppm: u32) -> bool {
        ppm > 0 && self.rng.gen_range(0..1_000_000) < ppm
    }

    fn parent_exists(&self, path: &Path) -> Result<(), Error> {
        let parent = path.parent().ok_or_else(|| not_found(path))?;
        if self.roots.contains(parent) || self.live.get(parent) == Some(&Node::Dir) {
            Ok(())
        } else {
            Err(not_found(parent))
        }
    }

    fn file(&self, path: &Path) -> Result<u64, Error> {
        match self.live.get(path) {
            Some(Node::File(ino)) => Ok(*ino),
            Some(Node::Dir) => Err(Error::new(ErrorKind::IsADirectory, path.display().to_string())),
            None => Err(not_found(path)),
        }
    }

    fn create(&mut self, path: &Path) -> Result<u64, Error> {
        if let Ok(ino) = self.file(path) {
            return Ok(ino);
        }
        self.parent_exists(path)?;
        self.next_inode += 1;
        let ino = self.next_inode;
        self.inodes.insert(ino, Inode::default());
        self.live.insert(path.to_path_buf(), Node::File(ino));
        Ok(ino)
    }

    fn write_at(&mut self, ino: u64, bytes: &[u8], pos: u64) -> Result<(), Error> {
        let fails = self.faults.write_fails_ppm;
        let (fail, landed) = if self.strikes(fails) {
            let enospc = self.rng.gen_bool(0.5);
            if enospc {
                self.counts.write_enospc += 1;
            } else {
                self.counts.write_eio += 1;
            }
            let err = if enospc { Error::from_raw_os_error(libc::ENOSPC) } else { eio() };
            let sectors = bytes.len() / SECTOR;
            let landed = if sectors == 0 { 0 } else { self.rng.gen_range(0..=sectors) * SECTOR };
            (Some(err), landed)
        } else {
            (None, bytes.len())
        };
        let data = &mut self.inodes.get_mut(&ino).expect("an open file's inode").data;
        let end = pos as usize + landed;
        if data.len() < end {
            data.resize(end, 0);
        }
        data[pos as usize..end].copy_from_slice(&bytes[..landed]);
        fail.map_or(Ok(()), Err)
    }

    fn sync(&mut self, ino: u64) -> Result<(), Error> {
        let fails = self.faults.sync_fails_ppm;
        if self.strikes(fails) {
            self.counts.sync_eio += 1;
            return Err(eio());
        }
        if self.lying_syncs {
            return Ok(());
        }
        let inode = self.inodes.get_mut(&ino).expect("an open file's inode");
        inode.synced = inode.data.clone();
        Ok(())
    }

    /// What a read of `place` (an inode and a position) returns in `buf`.
    fn read_flipping(&mut self, buf: &mut [u8], place: (u64, u64)) {
        let first = self.flip_first_reads.as_mut().is_some_and(|read| read.insert(place));
        let flips = self.faults.read_flips_ppm;
        let flip = match self.read_script.pop_front() {
            Some(scripted) => scripted,
            None => first || self.strikes(flips),
        };
        if !buf.is_empty() && flip {
            self.counts.read_flips += 1;
            let at = self.rng.gen_range(0..buf.len());
            buf[at] ^= 1 << self.rng.gen_range(0..8);
        }
    }

    fn children<'a>(&'a self, dir: &'a Path) -> impl Iterator<Item = (&'a PathBuf, &'a Node)> + 'a {
        self.live
            .range(dir.to_path_buf()..)
            .skip_while(move |(p, _)| p.as_path() == dir)
            .take_while(move |(p, _)| p.starts_with(dir))
            .filter(move |(p, _)| p.parent() == Some(dir))
    }

    /// What a crash leaves of one file.
    fn crash_image(&mut self, ino: u64, crash: Crash) -> Vec<u8> {
        let inode = &self.inodes[&ino];
        let (data, synced) = (inode.data.clone(), inode.synced.clone());
        match crash {
            Crash::Kill => data,
            Crash::PowerCut => synced,
            Crash::TornPowerCut => {
                // The length lands at any sector boundary between the two.
                let (lo, hi) = (synced.len().min(data.len()), synced.len().max(data.len()));
                let len = if hi > lo {
                    (lo + self.rng.gen_range(0..=(hi - lo).div_ceil(SECTOR)) * SECTOR).min(hi)
                } else {
                    hi
                };
                let len = if data.len() < synced.len() { synced.len() } else { len };
                let mut out = synced.clone();
                out.resize(len, 0);
                let mut at = 0;
                while at < len {
                    let end = (at + SECTOR).min(len);
                    let new = data.get(at..end.min(data.len())).unwrap_or(&[]);
                    if new != &out[at..end.min(at + new.len())] && self.rng.gen_bool(0.5) {
                        out[at..at + new.len()].copy_from_slice(new);
                        self.counts.torn_sectors += 1;
                    }
                    at = end;
                }
                out
            }
        }
    }
}

impl SimStorage {
    /// Empty storage on which `roots` (and their ancestors) always exist.
    pub fn new(seed: u64, roots: &[&Path]) -> Self {
        let mut all = BTreeSet::new();
        for root in roots {
            all.extend(root.ancestors().map(Path::to_path_buf));
        }
        Self {
            fs: Arc::new(Mutex::new(Fs {
                rng: StdRng::seed_from_u64(seed),
                faults: Faults::default(),
                lying_syncs: false,
                flip_first_reads: None,
                read_script: VecDeque::new(),
                counts: FaultCounts::default(),
                next_inode: 0,
                inodes: HashMap::new(),
                live: BTreeMap::new(),
                durable: BTreeMap::new(),
                roots: all,
            })),
        }
    }

    fn fs(&self) -> std::sync::MutexGuard<'_, Fs> {
        self.fs.lock().expect("simulated storage lock")
    }

    /// From now on every datasync answers at once and syncs nothing, as a
    /// node that answered before its fdatasync would.
    pub fn lie_about_syncs(&self) {
        self.fs().lying_syncs = true;
    }

    /// From now on the first read of every place returns a bit flipped,
    /// and every later read of it the true bytes.
    pub fn flip_first_reads(&self) {
        self.fs().flip_first_reads = Some(BTreeSet::new());
    }

    /// The next reads flip a bit or not, one per entry of `script`.
    pub fn script_read_flips(&self, script: &[bool]) {
        self.fs().read_script = script.iter().copied().collect();
    }

    pub fn arm(&self, faults: Faults) {
        self.fs().faults = faults;
    }

    pub fn counts(&self) -> FaultCounts {
        self.fs().counts
    }

    /// The process, or the machine, goes down: the names and bytes left are
    /// what `crash` keeps. Faults are disarmed, as for a new boot.
    pub fn crash(&self, crash: Crash) {
        let mut fs = self.fs();
        fs.faults = Faults::default();
        match crash {
            Crash::Kill => fs.counts.kills += 1,
            Crash::PowerCut => fs.counts.power_cuts += 1,
            Crash::TornPowerCut => fs.counts.torn_power_cuts += 1,
        }
        if crash != Crash::Kill {
            // Rebuild the names from the durable directory entries, from the roots down.
            let mut live = BTreeMap::new();
            let mut dirs: Vec<PathBuf> = fs.roots.iter().cloned().collect();
            while let Some(dir) = dirs.pop() {
                for (name, node) in fs.durable.get(&dir).cloned().unwrap_or_default() {
                    let path = dir.join(name);
                    if node == Node::Dir {
                        dirs.push(path.clone());
                    }
                    live.insert(path, node);
                }
            }
            fs.live = live;
            let dirs: BTreeSet<PathBuf> = fs
                .live
                .iter()
                .filter(|(_, n)| **n == Node::Dir)
                .map(|(p, _)| p.clone())
                .chain(fs.roots.iter().cloned())
                .collect();
            fs.durable.retain(|d, _| dirs.contains(d));
        }
        if crash == Crash::Kill {
            return;
        }
        // Every file left is a durable name; its bytes are what the cut left.
        let reachable: Vec<u64> =
            fs.live.values().filter_map(|n| if let Node::File(i) = n { Some(*i) } else { None }).collect();
        let images: Vec<(u64, Vec<u8>)> = reachable.iter().map(|&ino| (ino, fs.crash_image(ino, crash))).collect();
        let reachable: BTreeSet<u64> = reachable.into_iter().collect();
        fs.inodes.retain(|i, _| reachable.contains(i));
        for (ino, image) in images {
            let inode = fs.inodes.get_mut(&ino).expect("a reachable inode");
            inode.synced = image.clone();
            inode.data = image;
        }
    }

    /// Every file and its bytes, for comparing two runs.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let fs = self.fs();
        fs.live
            .iter()
            .filter_map(
                |(p, n)| if let Node::File(i) = n { Some((p.clone(), fs.inodes[i].data.clone())) } else { None },
            )
            .collect()
    }
}

#[derive(Debug)]
struct SimFile {
    fs: Arc<Mutex<Fs>>,
    ino: u64,
}

impl SimFile {
    fn fs(&self) -> std::sync::MutexGuard<'_, Fs> {
        self.fs.lock().expect("simulated storage lock")
    }
}

impl StorageFile for SimFile {
    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> std::io::Result<()> {
        let mut fs = self.fs();
        let data = &fs.inodes.get(&self.ino).ok_or_else(eio)?.data;
        let end = pos as usize + buf.len();
        if end > data.len() {
            return Err(Error::new(ErrorKind::UnexpectedEof, "read past the end (simulated)"));
        }
        buf.copy_from_slice(&data[pos as usize..end]);
        fs.read_flipping(buf, (self.ino, pos));
        Ok(())
    }

    fn write_all_at(&self, bytes: &[u8], pos: u64) -> std::io::Result<()> {
        self.fs().write_at(self.ino, bytes, pos)
    }

    fn datasync(&self) -> std::io::Result<()> {
        self.fs().sync(self.ino)
    }

    fn truncate_durable(&self, len: u64) -> std::io::Result<()> {
        let mut fs = self.fs();
        let inode = fs.inodes.get_mut(&self.ino).ok_or_else(eio)?;
        inode.data.resize(len as usize, 0);
        inode.synced = inode.data.clone();
        Ok(())
    }
}

impl Storage for SimStorage {
    fn open(&self, path: &Path, create: bool) -> std::io::Result<Arc<dyn StorageFile>> {
        let mut fs = self.fs();
        let ino = if create { fs.create(path)? } else { fs.file(path)? };
        Ok(Arc::new(SimFile { fs: self.fs.clone(), ino }))
    }

    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let mut fs = self.fs();
        let ino = fs.file(path)?;
        let mut buf = fs.inodes[&ino].data.clone();
        fs.read_flipping(&mut buf, (ino, u64::MAX));
        Ok(buf)
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        let mut fs = self.fs();
        let ino = fs.create(path)?;
        fs.inodes.get_mut(&ino).expect("a created inode").data.clear();
        fs.write_at(ino, bytes, 0)
    }

    fn write_durable(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        let mut fs = self.fs();
        let ino = fs.create(path)?;
        fs.inodes.get_mut(&ino).expect("a created inode").data.clear();
        fs.write_at(ino, bytes, 0)?;
        fs.sync(ino)
    }

    fn len(&self, path: &Path) -> std::io::Result<u64> {
        let fs = self.fs();
        Ok(fs.inodes[&fs.file(path)?].data.len() as u64)
    }

    fn exists(&self, path: &Path) -> bool {
        let fs = self.fs();
        fs.roots.contains(path) || fs.live.contains_key(path)
    }

    /// A directory takes everything under it along, the durable entries of
    /// the directories in it too (those are the directories' own).
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        let mut fs = self.fs();
        fs.parent_exists(to)?;
        match fs.live.get(from).copied() {
            Some(Node::File(ino)) => {
                fs.live.remove(from);
                fs.live.insert(to.to_path_buf(), Node::File(ino));
            }
            Some(Node::Dir) => {
                if fs.live.contains_key(to) {
                    return Err(Error::new(ErrorKind::AlreadyExists, to.display().to_string()));
                }
                let moved = |p: &Path| to.join(p.strip_prefix(from).expect("under the renamed directory"));
                let under: Vec<PathBuf> = fs.live.keys().filter(|p| p.starts_with(from)).cloned().collect();
                for path in under {
                    let node = fs.live.remove(&path).expect("listed");
                    fs.live.insert(moved(&path), node);
                }
                let durable: Vec<PathBuf> = fs.durable.keys().filter(|p| p.starts_with(from)).cloned().collect();
                for dir in durable {
                    let entries = fs.durable.remove(&dir).expect("listed");
                    fs.durable.insert(moved(&dir), entries);
                }
            }
            None => return Err(not_found(from)),
        }
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        let mut fs = self.fs();
        fs.file(path)?;
        fs.live.remove(path);
        Ok(())
    }

    fn remove_dir(&self, path: &Path) -> std::io::Result<()> {
        let mut fs = self.fs();
        if fs.live.get(path) != Some(&Node::Dir) {
            return Err(not_found(path));
        }
        if fs.children(path).next().is_some() {
            return Err(Error::new(ErrorKind::DirectoryNotEmpty, path.display().to_string()));
        }
        fs.live.remove(path);
        Ok(())
    }

    fn create_dir_all(&self, path: &Path) -> std::io::Result<()> {
        let mut fs = self.fs();
        let mut missing: Vec<PathBuf> =
            path.ancestors().take_while(|a| !fs.roots.contains(*a)).map(Path::to_path_buf).collect();
        missing.reverse();
        for dir in missing {
            match fs.live.get(&dir) {
                Some(Node::Dir) => {}
                Some(Node::File(_)) => return Err(Error::new(ErrorKind::NotADirectory, dir.display().to_string())),
                None => {
                    fs.live.insert(dir, Node::Dir);
                }
            }
        }
        Ok(())
    }

    fn list(&self, dir: &Path) -> std::io::Result<Vec<DirEntry>> {
        let fs = self.fs();
        if !fs.roots.contains(dir) && fs.live.get(dir) != Some(&Node::Dir) {
            return Err(not_found(dir));
        }
        Ok(fs
            .children(dir)
            .map(|(p, n)| DirEntry {
                name: p.file_name().expect("a child has a name").to_string_lossy().into_owned(),
                is_dir: *n == Node::Dir,
            })
            .collect())
    }

    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        let mut fs = self.fs();
        if !fs.roots.contains(dir) && fs.live.get(dir) != Some(&Node::Dir) {
            return Err(not_found(dir));
        }
        let entries: BTreeMap<String, Node> = fs
            .children(dir)
            .map(|(p, n)| (p.file_name().expect("a child has a name").to_string_lossy().into_owned(), *n))
            .collect();
        fs.durable.insert(dir.to_path_buf(), entries);
        Ok(())
    }

    fn reserve(&self, _dir: &Path) -> Option<Reserve> {
        // Simulated files take no descriptors.
        Some(Box::new(()))
    }

    fn copy_durable(&self, from: &Path, to: &Path) -> std::io::Result<u64> {
        let bytes = self.read(from)?;
        self.write_durable(to, &bytes)?;
        Ok(bytes.len() as u64)
    }

    /// The outside file is a real one (heed's): its bytes come in whole.
    fn import(&self, outside: &Path, path: &Path) -> std::io::Result<()> {
        self.write_durable(path, &std::fs::read(outside)?)?;
        std::fs::remove_file(outside)
    }

    fn export(&self, path: &Path, outside: &Path) -> std::io::Result<()> {
        let bytes = self.read(path)?;
        let mut file = std::fs::File::create(outside)?;
        std::io::Write::write_all(&mut file, &bytes)?;
        file.sync_all()?;
        self.remove_file(path)
    }
}
