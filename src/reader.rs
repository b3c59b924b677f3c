//! Reading stored messages back from the qlog, for every front end: the
//! applied state (through the read-only view) says where they are, the
//! files hold them.

use crate::encryption::{Cipher, EncryptionError};
use crate::message::Message;
use crate::message_view::MessageView;
use crate::qlog::files::{FileTable, Location, ReadError};
use crate::qlog::message_record::{MessageRecord, MessageRecordError};
use crate::state_view::StateView;
use crate::store::locator::Span;
use bytes::Bytes;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum ReaderError {
    #[error(transparent)]
    File(#[from] ReadError),
    #[error("a stored message record does not decode: {0}")]
    Record(#[from] MessageRecordError),
    #[error("a stored message does not decode: {0}")]
    Message(#[from] bincode::Error),
    #[error(transparent)]
    Sealed(#[from] EncryptionError),
    #[error("the record at byte {pos} of segment {segment} of log {log} is not the one the locator names there")]
    Misplaced { log: u64, segment: u32, pos: u64 },
}

/// What reading a message takes: where the applied state says it is, the
/// files, and the key of sealed queues.
#[derive(Clone)]
pub struct MessageReader {
    pub view: StateView,
    pub files: Arc<FileTable>,
    pub cipher: Option<Arc<Cipher>>,
}

/// The most appends one `read_from` looks at.
const SPANS_PER_READ: usize = 4096;

pub struct StoredMessage<M = Message> {
    pub offset: u64,
    pub timestamp_us: i64,
    pub message: M,
}

/// What a read decodes a stored payload into: a [`Message`] of its own, or
/// a [`MessageView`] of slices of the bytes read.
pub trait Opened: Sized {
    /// The stored message as a reader sees it: decoded, and opened if sealed.
    fn open(reader: &MessageReader, raw: &Bytes) -> Result<Self, ReaderError>;
}

impl Opened for Message {
    fn open(reader: &MessageReader, raw: &Bytes) -> Result<Self, ReaderError> {
        let mut message = Message::decode(raw)?;
        if message.encrypted {
            reader.cipher.as_ref().ok_or(EncryptionError::NoKey)?.open(&mut message)?;
        }
        Ok(message)
    }
}

impl Opened for MessageView {
    fn open(reader: &MessageReader, raw: &Bytes) -> Result<Self, ReaderError> {
        let view = MessageView::decode(raw)?;
        if view.encrypted {
            return Message::open(reader, raw).map(MessageView::from);
        }
        Ok(view)
    }
}

impl MessageReader {
    /// The message record of `span`; none when retention removed it since the
    /// span was looked up. Reclaim may also have rewritten its file, moving the
    /// record: a read that fails, or finds another record there, looks the span
    /// up once more.
    fn record_of(&self, queue: u64, partition: u64, span: &Span) -> Result<Option<MessageRecord>, ReaderError> {
        let read = |at: Location| -> Result<MessageRecord, ReaderError> {
            let record = MessageRecord::decode_shared(&self.files.read_body(at)?)?;
            let s = record.span;
            if (s.queue, s.partition, s.first_offset) != (queue, partition, span.first_offset) {
                return Err(ReaderError::Misplaced { log: at.log, segment: at.segment, pos: at.pos });
            }
            Ok(record)
        };
        let first = read(span.at);
        if first.is_ok() {
            return first.map(Some);
        }
        let store = self.view.local();
        let now = store.locator.from_offset(queue, partition, span.first_offset).first().copied();
        drop(store);
        match now {
            Some(s) if s.first_offset != span.first_offset => Ok(None),
            None => Ok(None),
            Some(s) if s.at != span.at => read(s.at).map(Some),
            Some(_) => first.map(Some),
        }
    }

    /// The messages of `offsets` (ascending) in a partition, skipping any the
    /// store does not hold.
    pub fn read_offsets(&self, queue: u64, partition: u64, offsets: &[u64]) -> Result<Vec<StoredMessage>, ReaderError> {
        let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) else { return Ok(vec![]) };
        let spans: Vec<Span> = {
            let store = self.view.local();
            store
                .locator
                .from_offset(queue, partition, first)
                .iter()
                .take_while(|s| s.first_offset <= last)
                .copied()
                .collect()
        };
        let mut out = Vec::with_capacity(offsets.len());
        let mut wanted = offsets.iter().peekable();
        for span in spans {
            if wanted.peek().is_none() {
                break;
            }
            if wanted.peek().is_some_and(|o| **o >= span.end()) {
                continue;
            }
            let Some(record) = self.record_of(queue, partition, &span)? else { continue };
            while let Some(&&o) = wanted.peek() {
                if o >= span.end() {
                    break;
                }
                wanted.next();
                if let Some(p) = o.checked_sub(span.first_offset).and_then(|i| record.payloads.get(i as usize)) {
                    let message = Message::open(self, &p.raw()?)?;
                    out.push(StoredMessage { offset: o, timestamp_us: record.timestamp_us, message });
                }
            }
        }
        Ok(out)
    }

    /// Messages from `offset` below `end`, at least one, until `budget` payload bytes.
    pub fn read_from<M: Opened>(
        &self,
        queue: u64,
        partition: u64,
        offset: u64,
        end: u64,
        budget: u64,
    ) -> Result<(Vec<StoredMessage<M>>, u64), ReaderError> {
        // Not every span to the partition's end: a reader far behind would copy
        // them all for each read. A read that needs more than this many answers
        // what it has, at least one message, and the caller reads on from there.
        let spans: Vec<Span> = {
            let store = self.view.local();
            let from = store.locator.from_offset(queue, partition, offset);
            from.iter().take_while(|s| s.first_offset < end).take(SPANS_PER_READ).copied().collect()
        };
        let mut out = Vec::new();
        let mut used = 0u64;
        for span in spans {
            let Some(record) = self.record_of(queue, partition, &span)? else { continue };
            if out.capacity() == 0 {
                // Room for the read at the first record's mean size: grown by
                // doubling, the list was copied over about once more.
                let mean =
                    record.payloads.iter().map(|p| p.raw_len() as u64).sum::<u64>() / u64::from(span.count.max(1));
                out.reserve((budget / mean.max(1) + 1).min(end - offset).min(1 << 16) as usize);
            }
            for (i, payload) in record.payloads.iter().enumerate() {
                let at = record.span.first_offset + i as u64;
                if at < offset || at >= end {
                    continue;
                }
                if !out.is_empty() && used + payload.raw_len() as u64 > budget {
                    return Ok((out, used));
                }
                used += payload.raw_len() as u64;
                let message = M::open(self, &payload.raw()?)?;
                out.push(StoredMessage { offset: at, timestamp_us: record.timestamp_us, message });
            }
        }
        Ok((out, used))
    }
}
