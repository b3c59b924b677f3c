//! Reading stored messages back from the qlog, for every front end: the
//! applied state (through the read-only view) says where they are, the
//! files hold them.

use crate::encryption::{Cipher, EncryptionError};
use crate::message::Message;
use crate::message_view::MessageView;
use crate::qlog::batch_places::{batch_places, PlacedBatch, Places};
use crate::qlog::files::{FileTable, Location, LogFile, ReadError};
use crate::qlog::kafka_batch::KafkaBatch;
use crate::qlog::message_record::{MessageRecord, MessageRecordError, Piece};
use crate::state_view::StateView;
use crate::store::locator::Span;
use bytes::Bytes;
use protocol::records::PlainRecord;
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
    #[error("a stored Kafka batch does not decode: {0}")]
    KafkaBatch(#[from] protocol::records::RecordsError),
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

/// What a Kafka fetch reads: the stored batches themselves, and the
/// messages stored one by one (HTTP pushes), which it encodes as records.
pub enum KafkaRun {
    /// A batch read into memory, from a record small enough to read whole.
    Batch(Bytes),
    /// A batch left in its file, for the answer to send from there.
    InFile {
        file: Arc<LogFile>,
        pos: u64,
        len: usize,
    },
    Messages(Vec<StoredMessage<MessageView>>),
}

/// A record's batches and the file they sit in.
type BatchesInFile = (Arc<LogFile>, Vec<PlacedBatch>);

/// Records of at most this many bytes are read whole, batches included:
/// one read of a small record costs less than finding its batches and
/// sending them from the file.
const READ_WHOLE_MAX: u32 = 16 * 1024;

/// What a read decodes a stored payload into: a [`Message`] of its own, or
/// a [`MessageView`] of slices of the bytes read.
pub trait Opened: Sized {
    /// The stored message as a reader sees it: decoded, and opened if sealed.
    fn open(reader: &MessageReader, raw: &Bytes) -> Result<Self, ReaderError>;

    /// A record of a stored Kafka batch (never sealed: a sealed queue's
    /// records are stored one by one), under its transactionId.
    fn from_kafka(record: PlainRecord, transaction_id: String, producer_sub: Option<&str>) -> Self;
}

impl Opened for Message {
    fn from_kafka(record: PlainRecord, transaction_id: String, producer_sub: Option<&str>) -> Self {
        Message::from_kafka(&record, transaction_id, producer_sub.map(str::to_string))
    }

    fn open(reader: &MessageReader, raw: &Bytes) -> Result<Self, ReaderError> {
        let mut message = Message::decode(raw)?;
        if message.encrypted {
            reader.cipher.as_ref().ok_or(EncryptionError::NoKey)?.open(&mut message)?;
        }
        Ok(message)
    }
}

impl Opened for MessageView {
    fn from_kafka(record: PlainRecord, transaction_id: String, _: Option<&str>) -> Self {
        MessageView::from_kafka(record, transaction_id)
    }

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
        let now = store.locator.spans_from(queue, partition, span.first_offset).first().copied();
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
                .spans_from(queue, partition, first)
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
            for (at, piece) in record.placed_pieces() {
                let end = at + u64::from(piece.count());
                // The offsets asked for below this piece are not stored.
                while wanted.next_if(|o| **o < at).is_some() {}
                if wanted.peek().is_none_or(|o| **o >= end) {
                    continue;
                }
                let mut take = |offset: u64, message: Message| {
                    out.push(StoredMessage { offset, timestamp_us: record.timestamp_us, message });
                };
                match piece {
                    Piece::Message(p) => {
                        wanted.next();
                        take(at, Message::open(self, &p.raw()?)?);
                    }
                    Piece::Kafka(batch) => {
                        for (offset, _, message) in self.kafka_messages::<Message>(&record, batch)? {
                            if wanted.next_if_eq(&&offset).is_some() {
                                take(offset, message);
                            }
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// The messages of a stored Kafka batch of `record`, each with its
    /// offset and value's size.
    fn kafka_messages<M: Opened>(
        &self,
        record: &MessageRecord,
        batch: &KafkaBatch,
    ) -> Result<Vec<(u64, usize, M)>, ReaderError> {
        let records = batch.records()?;
        Ok(records
            .into_iter()
            .enumerate()
            .map(|(i, (offset, r))| {
                let offset = offset as u64;
                let id = batch.transaction_id(i as u32, record.id, offset);
                (offset, r.value.as_ref().map_or(0, Bytes::len), M::from_kafka(r, id, batch.producer_sub.as_deref()))
            })
            .collect())
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
        let mut out = Vec::new();
        let mut used = 0u64;
        for span in self.spans_from(queue, partition, offset, end) {
            let Some(record) = self.record_of(queue, partition, &span)? else { continue };
            if out.capacity() == 0 {
                // Room for the read at the first record's mean size: grown by
                // doubling, the list was copied over about once more.
                let stored: usize = record.pieces.iter().map(Piece::stored_len).sum();
                let mean = stored as u64 / u64::from(span.count.max(1));
                out.reserve((budget / mean.max(1) + 1).min(end - offset).min(1 << 16) as usize);
            }
            for (at, piece) in record.placed_pieces() {
                if at + u64::from(piece.count()) <= offset || at >= end {
                    continue;
                }
                let messages = match piece {
                    Piece::Message(p) => vec![(at, p.raw_len(), M::open(self, &p.raw()?)?)],
                    Piece::Kafka(batch) => self.kafka_messages(&record, batch)?,
                };
                for (at, size, message) in messages {
                    if at < offset || at >= end {
                        continue;
                    }
                    if !out.is_empty() && used + size as u64 > budget {
                        return Ok((out, used));
                    }
                    used += size as u64;
                    out.push(StoredMessage { offset: at, timestamp_us: record.timestamp_us, message });
                }
            }
        }
        Ok((out, used))
    }

    /// What a Kafka fetch from `offset` below `end` answers, at least one
    /// run, until `budget` bytes: stored batches as they are (whole, so
    /// one may begin before `offset`, as Kafka's do; a consumer skips what
    /// it did not ask for), and the messages stored one by one between
    /// them, to encode.
    pub fn read_for_kafka(
        &self,
        queue: u64,
        partition: u64,
        offset: u64,
        end: u64,
        budget: u64,
    ) -> Result<(Vec<KafkaRun>, u64), ReaderError> {
        let mut runs: Vec<KafkaRun> = Vec::new();
        let mut used = 0u64;
        // Whether a run of `size` bytes is past the budget (the first never
        // is), counting it in when it is not.
        let over = |used: &mut u64, size: usize, runs: &[KafkaRun]| {
            if !runs.is_empty() && *used + size as u64 > budget {
                return true;
            }
            *used += size as u64;
            false
        };
        let wanted = |at: u64, count: u32| at + u64::from(count) > offset && at < end;
        for span in self.spans_from(queue, partition, offset, end) {
            if let Some((file, batches)) = self.batches_in_file(queue, partition, &span)? {
                for b in batches.into_iter().filter(|b| wanted(b.first_offset, b.count)) {
                    if over(&mut used, b.len, &runs) {
                        return Ok((runs, used));
                    }
                    runs.push(KafkaRun::InFile { file: file.clone(), pos: b.pos, len: b.len });
                }
                continue;
            }
            let Some(record) = self.record_of(queue, partition, &span)? else { continue };
            for (at, piece) in record.placed_pieces().filter(|(at, piece)| wanted(*at, piece.count())) {
                let size = match piece {
                    Piece::Message(p) => p.raw_len(),
                    Piece::Kafka(batch) => batch.bytes.len(),
                };
                if over(&mut used, size, &runs) {
                    return Ok((runs, used));
                }
                match (piece, runs.last_mut()) {
                    (Piece::Kafka(batch), _) => runs.push(KafkaRun::Batch(batch.bytes.clone())),
                    (Piece::Message(p), last) => {
                        let message = MessageView::open(self, &p.raw()?)?;
                        let stored = StoredMessage { offset: at, timestamp_us: record.timestamp_us, message };
                        match last {
                            Some(KafkaRun::Messages(messages)) => messages.push(stored),
                            _ => runs.push(KafkaRun::Messages(vec![stored])),
                        }
                    }
                }
            }
        }
        Ok((runs, used))
    }

    /// The batches of a large record of Kafka batches where they sit in
    /// their file, its bytes unread; none for a small record, a record of
    /// messages stored one by one, or one no longer where `span` says
    /// (reclaim rewrote its file): those are read whole (`record_of`).
    fn batches_in_file(&self, queue: u64, partition: u64, span: &Span) -> Result<Option<BatchesInFile>, ReaderError> {
        let at = span.at;
        if at.frame_len <= READ_WHOLE_MAX {
            return Ok(None);
        }
        let Some(file) = self.files.get(at.log, at.segment).map_err(ReadError::from)? else { return Ok(None) };
        Ok(match batch_places(&file, at) {
            Ok(Places::Batches { span: s, batches })
                if (s.queue, s.partition, s.first_offset) == (queue, partition, span.first_offset) =>
            {
                Some((file, batches))
            }
            _ => None,
        })
    }

    /// The spans from the one holding `offset`, below `end`. Not every span
    /// to the partition's end: a reader far behind would copy them all for
    /// each read. A read that needs more than this many answers what it
    /// has, at least one message, and the caller reads on from there.
    fn spans_from(&self, queue: u64, partition: u64, offset: u64, end: u64) -> Vec<Span> {
        let store = self.view.local();
        let from = store.locator.spans_from(queue, partition, offset);
        from.iter().take_while(|s| s.first_offset < end).take(SPANS_PER_READ).copied().collect()
    }
}
