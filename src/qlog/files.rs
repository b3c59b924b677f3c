//! The open qlog files readers share with the writer. Reads use positioned
//! reads, so they never move a cursor the writer depends on.

use super::record::{read_frame, Frame};
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, RwLock};

/// Where a record sits: which log, which segment, which bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    pub log: u64,
    pub segment: u32,
    pub pos: u64,
    pub frame_len: u32,
}

#[derive(Default)]
pub struct FileTable {
    files: RwLock<HashMap<(u64, u32), Arc<File>>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("qlog segment {segment} of log {log} is not open")]
    NotOpen { log: u64, segment: u32 },
    #[error("reading the qlog: {0}")]
    Io(#[from] std::io::Error),
    #[error("the record at byte {pos} of segment {segment} of log {log} fails its checksum")]
    Corrupt { log: u64, segment: u32, pos: u64 },
}

impl FileTable {
    pub fn insert(&self, log: u64, segment: u32, file: Arc<File>) {
        self.files.write().expect("file table lock").insert((log, segment), file);
    }

    /// Forgets a file reclaim freed; a read already holding it finishes.
    pub fn remove(&self, log: u64, segment: u32) {
        self.files.write().expect("file table lock").remove(&(log, segment));
    }

    pub fn get(&self, log: u64, segment: u32) -> Option<Arc<File>> {
        self.files.read().expect("file table lock").get(&(log, segment)).cloned()
    }

    /// The verified body of the record at `loc`.
    pub fn read_body(&self, loc: Location) -> Result<Vec<u8>, ReadError> {
        let file = self.get(loc.log, loc.segment).ok_or(ReadError::NotOpen { log: loc.log, segment: loc.segment })?;
        let mut frame = vec![0u8; loc.frame_len as usize];
        file.read_exact_at(&mut frame, loc.pos)?;
        match read_frame(&frame, 0) {
            Frame::Valid { body, next } if next == frame.len() => Ok(body.to_vec()),
            _ => Err(ReadError::Corrupt { log: loc.log, segment: loc.segment, pos: loc.pos }),
        }
    }
}
