//! A keyspace: one sorted map in RAM that remembers which of its rows changed
//! since the last checkpoint.

use serde::{de::DeserializeOwned, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A key as the checkpoint stores it: bytes that sort like the key.
pub trait RowKey: Ord + Clone {
    fn encode(&self) -> Vec<u8>;
    fn decode(bytes: &[u8]) -> Option<Self>;
}

impl RowKey for String {
    fn encode(&self) -> Vec<u8> {
        self.as_bytes().to_vec()
    }
    fn decode(bytes: &[u8]) -> Option<Self> {
        String::from_utf8(bytes.to_vec()).ok()
    }
}

impl RowKey for (u64, u64) {
    fn encode(&self) -> Vec<u8> {
        [self.0.to_be_bytes(), self.1.to_be_bytes()].concat()
    }
    fn decode(b: &[u8]) -> Option<Self> {
        (b.len() == 16)
            .then(|| (u64::from_be_bytes(b[..8].try_into().unwrap()), u64::from_be_bytes(b[8..].try_into().unwrap())))
    }
}

impl RowKey for (u64, String) {
    fn encode(&self) -> Vec<u8> {
        [&self.0.to_be_bytes()[..], self.1.as_bytes()].concat()
    }
    fn decode(b: &[u8]) -> Option<Self> {
        let (id, name) = b.split_at_checked(8)?;
        Some((u64::from_be_bytes(id.try_into().ok()?), String::from_utf8(name.to_vec()).ok()?))
    }
}

impl RowKey for (u64, u64, String) {
    fn encode(&self) -> Vec<u8> {
        [&self.0.to_be_bytes()[..], &self.1.to_be_bytes()[..], self.2.as_bytes()].concat()
    }
    fn decode(b: &[u8]) -> Option<Self> {
        let (ids, name) = b.split_at_checked(16)?;
        let (q, p) = <(u64, u64)>::decode(ids)?;
        Some((q, p, String::from_utf8(name.to_vec()).ok()?))
    }
}

/// (queue, partition, group, offset): the group name is length-prefixed so
/// that the offset after it can be found.
impl RowKey for (u64, u64, String, u64) {
    fn encode(&self) -> Vec<u8> {
        let name = self.2.as_bytes();
        [
            &self.0.to_be_bytes()[..],
            &self.1.to_be_bytes()[..],
            &(name.len() as u16).to_be_bytes()[..],
            name,
            &self.3.to_be_bytes()[..],
        ]
        .concat()
    }
    fn decode(b: &[u8]) -> Option<Self> {
        let (ids, rest) = b.split_at_checked(16)?;
        let (q, p) = <(u64, u64)>::decode(ids)?;
        let (len, rest) = rest.split_at_checked(2)?;
        let (name, offset) = rest.split_at_checked(u16::from_be_bytes(len.try_into().ok()?) as usize)?;
        Some((q, p, String::from_utf8(name.to_vec()).ok()?, u64::from_be_bytes(offset.try_into().ok()?)))
    }
}

/// One row to write (`Some`) or delete (`None`) at the next checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowChange {
    pub keyspace: &'static str,
    pub key: Vec<u8>,
    pub value: Option<Vec<u8>>,
}

pub struct Keyspace<K, V> {
    pub name: &'static str,
    map: BTreeMap<K, V>,
    /// The rows changed since the last checkpoint. These keyspaces change
    /// the same few rows over and over (a partition's end, a group's
    /// cursor), so a set stays small and a change copies no row; the dedup
    /// rows, which are new with every message, keep a log instead
    /// (`dedup.rs`).
    dirty: BTreeSet<K>,
}

impl<K: RowKey, V: Serialize + DeserializeOwned + Clone> Keyspace<K, V> {
    pub fn new(name: &'static str) -> Self {
        Self { name, map: BTreeMap::new(), dirty: BTreeSet::new() }
    }

    /// Loads a row read from the checkpoint; it is not dirty.
    pub fn load_row(&mut self, key: &[u8], value: &[u8]) -> Result<(), String> {
        let k = K::decode(key).ok_or_else(|| format!("key of {} bytes does not decode", key.len()))?;
        let v = crate::codec::from_bytes(value).map_err(|e| format!("value does not decode: {e}"))?;
        self.map.insert(k, v);
        Ok(())
    }

    pub fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    /// A row by a borrowed form of its key (a `&str` for a `String` key),
    /// with no key built for the lookup.
    pub fn get_borrowed<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: std::borrow::Borrow<Q>,
    {
        self.map.get(key)
    }

    pub fn remove(&mut self, key: &K) -> Option<V> {
        let old = self.map.remove(key);
        if old.is_some() {
            self.dirty.insert(key.clone());
        }
        old
    }

    /// The rows whose keys fall in `range`, in key order.
    pub fn range<R: std::ops::RangeBounds<K>>(&self, range: R) -> impl DoubleEndedIterator<Item = (&K, &V)> {
        self.map.range(range)
    }

    pub fn insert(&mut self, key: K, value: V) {
        self.dirty.insert(key.clone());
        self.map.insert(key, value);
    }

    /// Changes a row in place, marking it for the next checkpoint.
    pub fn update(&mut self, key: &K, f: impl FnOnce(&mut V)) -> bool {
        match self.map.get_mut(key) {
            Some(v) => {
                f(v);
                self.dirty.insert(key.clone());
                true
            }
            None => false,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.map.iter()
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The rows changed since the last call, copied out so that encoding
    /// them happens on the checkpointer's thread, not under the store lock.
    pub fn take_changes(&mut self) -> ChangedRows<K, V> {
        let dirty = std::mem::take(&mut self.dirty);
        let changes = dirty.into_iter().map(|k| {
            let row = self.map.get(&k).cloned();
            (k, row)
        });
        ChangedRows { keyspace: self.name, changes: changes.collect() }
    }
}

/// Changes to one keyspace, in the order they were made, not yet encoded.
pub struct ChangedRows<K, V> {
    keyspace: &'static str,
    changes: Vec<(K, Option<V>)>,
}

impl<K: Ord, V> ChangedRows<K, V> {
    pub fn new(keyspace: &'static str, changes: Vec<(K, Option<V>)>) -> Self {
        Self { keyspace, changes }
    }

    #[cfg(test)]
    pub fn rows_in_order(self) -> Vec<(K, Option<V>)> {
        self.changes
    }

    /// Each changed row once, as its last change left it, in key order.
    fn last_per_row(mut self) -> Vec<(K, Option<V>)> {
        // A stable sort keeps a row's changes in order; the last one wins.
        self.changes.sort_by(|a, b| a.0.cmp(&b.0));
        let mut rows: Vec<(K, Option<V>)> = Vec::with_capacity(self.changes.len());
        for change in self.changes {
            match rows.last_mut() {
                Some(last) if last.0 == change.0 => *last = change,
                _ => rows.push(change),
            }
        }
        rows
    }
}

/// Changed rows of any keyspace, ready to be encoded for the checkpoint.
pub trait EncodeChanges: Send {
    /// How many changes it holds: a row changed twice counts twice.
    fn rows(&self) -> usize;
    fn encode_into(self: Box<Self>, out: &mut Vec<RowChange>);
}

impl<K: RowKey + Send, V: Serialize + Send> EncodeChanges for ChangedRows<K, V> {
    fn rows(&self) -> usize {
        self.changes.len()
    }

    fn encode_into(self: Box<Self>, out: &mut Vec<RowChange>) {
        let keyspace = self.keyspace;
        for (key, value) in self.last_per_row() {
            out.push(RowChange { keyspace, key: key.encode(), value: value.map(|v| crate::codec::to_bytes(&v)) });
        }
    }
}
