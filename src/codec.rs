//! The one serde encoding Queen stores (message blobs, entry bodies, store
//! rows): bincode with variable-length integers, little-endian, so small
//! numbers take one byte on disk.

use bincode::Options;
use serde::{Deserialize, Serialize};

fn options() -> impl Options {
    bincode::DefaultOptions::new()
}

pub fn to_bytes<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    options().serialize(value).expect("Queen's stored types always serialize")
}

/// Decodes `bytes`; a type that borrows from them (`&str`, `&[u8]`) is not copied.
pub fn from_bytes<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, bincode::Error> {
    options().deserialize(bytes)
}
