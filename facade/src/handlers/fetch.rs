//! Fetch: reads each asked partition from its fetch offset and, while less
//! than `min_bytes` is ready and no partition answers an error, waits for
//! appends to the asked topics until `max_wait_ms`. As in Kafka, the record
//! bytes of the answer stay within `max_bytes` and each partition's within
//! its `partition_max_bytes`, except that the first partition with records
//! gets at least its first one, however large, so a consumer always
//! progresses. At
//! READ_COMMITTED (isolation level 1) a partition is read up to its last
//! stable offset, and answered with the aborted transactions its records
//! may hold, which the consumer skips. Fetch sessions are declined (session id 0): every fetch
//! is a full one, which KIP-227 lets a broker choose.

use crate::broker::{BrokerError, FetchAsk, Fetched, FetchedRun, PartitionOffsets};
use crate::file_range::FileBytesSent;
use crate::names::topic_name;
use crate::spliced::{Part, Splice, StandIns};
use crate::{internal_topics, Broker, Facade};
use protocol::messages::fetch_response::{AbortedTransaction, FetchableTopicResponse, PartitionData};
use protocol::messages::{FetchRequest, FetchResponse, ProducerId};
use protocol::records::encode_fetched;
use protocol::ResponseError;
use std::time::{Duration, Instant};

/// The answer, and the splices of its record sets left in stored files.
pub async fn handle<B: Broker>(f: &Facade<B>, req: FetchRequest, version: i16) -> (FetchResponse, Vec<Splice>) {
    let deadline = Instant::now() + Duration::from_millis(req.max_wait_ms.max(0) as u64);
    let min_bytes = req.min_bytes.max(0) as usize;
    let max_bytes = if req.max_bytes > 0 { req.max_bytes as usize } else { usize::MAX };
    loop {
        // From v13 a fetch names topics by id only; looked up on every pass,
        // so a topic deleted (or made anew under its name) while the fetch
        // waits is answered as an unknown id.
        let names: Vec<Option<String>> = req
            .topics
            .iter()
            .map(|t| {
                if version >= 13 {
                    let id = *t.topic_id.as_bytes();
                    f.broker.topic_by_id(id).or_else(|| internal_topics::by_id(id)).map(|t| t.name)
                } else {
                    Some(t.topic.0.as_str().to_string())
                }
            })
            .collect();
        let known: Vec<&str> = names.iter().flatten().map(String::as_str).collect();
        // Made before the read, so an append that lands during it still wakes us.
        let appended = f.broker.appended(&known);
        let read = read_all(f, &req, &names, max_bytes, version).await;
        let now = Instant::now();
        // As Kafka: enough bytes, an error, or the deadline answer at once.
        if read.bytes >= min_bytes || read.errored || now >= deadline {
            return (FetchResponse::default().with_responses(read.topics), read.splices);
        }
        let _ = tokio::time::timeout(deadline - now, appended).await;
    }
}

/// One pass over every asked partition.
struct Read {
    topics: Vec<FetchableTopicResponse>,
    bytes: usize,
    /// Some partition answered an error.
    errored: bool,
    splices: Vec<Splice>,
}

/// Reads every asked partition, all in one read of the broker's; `names`
/// holds each asked topic's name, none for an unknown topic id.
async fn read_all<B: Broker>(
    f: &Facade<B>,
    req: &FetchRequest,
    names: &[Option<String>],
    max_bytes: usize,
    version: i16,
) -> Read {
    let asks: Vec<FetchAsk> = req
        .topics
        .iter()
        .zip(names)
        .filter_map(|(topic, name)| Some((topic, name.as_ref()?)))
        .filter(|(_, name)| !internal_topics::is_internal(name))
        .flat_map(|(topic, name)| {
            topic.partitions.iter().map(|p| FetchAsk {
                topic: name.clone(),
                partition: p.partition,
                offset: p.fetch_offset,
                max_bytes: p.partition_max_bytes.max(0) as usize,
                read_committed: req.isolation_level == 1,
                until: None,
            })
        })
        .collect();
    let mut fetched = f.broker.fetch(asks, max_bytes).await.into_iter();
    let mut total = 0usize;
    let mut errored = false;
    let (mut stand_ins, mut splices) = (StandIns::default(), Vec::new());
    let counted = &f.config.file_bytes_sent;
    let mut topics = Vec::with_capacity(req.topics.len());
    for (topic, name) in req.topics.iter().zip(names) {
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for p in &topic.partitions {
            let budget = (p.partition_max_bytes.max(0) as usize).min(max_bytes.saturating_sub(total));
            // Only until some partition has answered records.
            let may_exceed = total == 0;
            let answer = PartitionData::default().with_partition_index(p.partition);
            let read = match name {
                // Nothing of Kafka's internal topics is stored to be read (internal_topics.rs).
                Some(name) if internal_topics::is_internal(name) => Err(ResponseError::TopicAuthorizationFailed),
                Some(name) => match fetched.next() {
                    Some(read) => {
                        let at = (name.as_str(), p.partition);
                        encode_partition(read, at, budget, may_exceed, &mut stand_ins, &mut splices, counted)
                    }
                    None => Err(ResponseError::UnknownServerError),
                },
                None => Err(ResponseError::UnknownTopicId),
            };
            let answer = match read {
                Ok((offsets, aborted, records, size)) => {
                    total += size;
                    let aborted = aborted
                        .into_iter()
                        .map(|(producer, first)| {
                            AbortedTransaction::default()
                                .with_producer_id(ProducerId(producer))
                                .with_first_offset(first)
                        })
                        .collect();
                    answer
                        .with_aborted_transactions(Some(aborted))
                        .with_high_watermark(offsets.high_watermark)
                        .with_last_stable_offset(offsets.last_stable)
                        .with_log_start_offset(if version >= 5 { offsets.log_start } else { -1 })
                        .with_records(Some(records))
                }
                Err(e) => {
                    errored = true;
                    answer
                        .with_aborted_transactions(Some(vec![]))
                        .with_error_code(e.code())
                        .with_records(Some(bytes::Bytes::new()))
                }
            };
            partitions.push(answer);
        }
        let answer = FetchableTopicResponse::default().with_partitions(partitions);
        topics.push(if version >= 13 {
            answer.with_topic_id(topic.topic_id)
        } else {
            answer.with_topic(topic_name(name.as_deref().unwrap_or_default()))
        });
    }
    Read { topics, bytes: total, errored, splices }
}

/// What a partition answers: its offsets, the aborted transactions (producer
/// id, first offset) its records may hold, the record bytes and their size.
type Encoded = (PartitionOffsets, Vec<(i64, i64)>, bytes::Bytes, usize);

/// A partition's offsets, aborted transactions and records as batch bytes
/// within `budget` (or, if `may_exceed`, the first record alone beyond it),
/// and their size. Stored
/// batches left in their files are spliced in (`spliced.rs`): the bytes
/// answered are a stand-in for them, and the splice goes in `splices`.
pub(super) fn encode_partition(
    fetched: Result<Fetched, BrokerError>,
    at: (&str, i32),
    budget: usize,
    may_exceed: bool,
    stand_ins: &mut StandIns,
    splices: &mut Vec<Splice>,
    counted: &FileBytesSent,
) -> Result<Encoded, ResponseError> {
    let (topic, partition) = at;
    let fetched = fetched.map_err(|e| e.read_error())?;
    // The broker sizes its read by what it stores, which is near but not
    // exactly the bytes records encode to: the encoding decides. A run that
    // does not fit ends the answer; the first is answered whatever its size
    // when `may_exceed`, so that a consumer always progresses.
    let mut parts: Vec<Part> = Vec::with_capacity(fetched.runs.len());
    let mut size = 0usize;
    for run in &fetched.runs {
        let left = budget.saturating_sub(size);
        let part = match run {
            FetchedRun::Batches(bytes) => Part::Bytes(bytes.clone()),
            FetchedRun::InFile(range) => Part::File(range.clone()),
            FetchedRun::Records(records) => Part::Bytes(encode_fetched(records, left).map_err(|e| {
                tracing::error!(topic, partition, error = %e, "fetch: stored records do not encode");
                ResponseError::UnknownServerError
            })?),
        };
        if part.len() > left && !(may_exceed && parts.is_empty()) {
            break;
        }
        size += part.len();
        parts.push(part);
    }
    let parts = match stand_ins.splice(parts) {
        Ok((stand_in, splice)) => {
            splices.push(splice);
            return Ok((fetched.offsets, fetched.aborted, stand_in, size));
        }
        Err(parts) => parts,
    };
    let read = |part: Part| match part {
        Part::Bytes(bytes) => Ok(bytes),
        Part::File(range) => range.read(counted).map_err(|e| {
            tracing::error!(topic, partition, error = %e, "fetch: a stored batch does not read");
            ResponseError::UnknownServerError
        }),
    };
    // One stretch, the common case, is answered without a copy.
    let mut bytes: Vec<bytes::Bytes> = parts.into_iter().map(read).collect::<Result<_, _>>()?;
    let bytes = match bytes.len() {
        0 => bytes::Bytes::new(),
        1 => bytes.pop().expect("one part"),
        _ => bytes.concat().into(),
    };
    Ok((fetched.offsets, fetched.aborted, bytes, size))
}
