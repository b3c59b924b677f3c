//! ShareFetch (KIP-932): a share member's session step, its piggybacked
//! acknowledgements, then records acquired for it from the session's
//! partitions: each partition answers the batches that hold its acquired
//! offsets and the acquired ranges with their delivery counts (the client
//! delivers only those offsets). With nothing to acquire the fetch waits,
//! up to `max_wait_ms`, for appends, and looks again at a tick for records
//! given back or whose locks ran out.

use super::fetch::encode_partition;
use super::share_acks::{self, AckBatch};
use crate::broker::{BrokerError, FetchAsk};
use crate::names::str_bytes;
use crate::share_sessions::{ConnectionId, SharePartition};
use crate::spliced::{Splice, StandIns};
use crate::{Broker, Facade};
use protocol::messages::share_fetch_response::{
    AcquiredRecords, LeaderIdAndEpoch, PartitionData, ShareFetchableTopicResponse,
};
use protocol::messages::{ShareFetchRequest, ShareFetchResponse};
use protocol::ResponseError;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How often a waiting fetch looks again for records given back.
const TICK: Duration = Duration::from_millis(200);

fn refused(error: ResponseError, why: &str) -> ShareFetchResponse {
    ShareFetchResponse::default().with_error_code(error.code()).with_error_message(Some(str_bytes(why)))
}

/// What one partition answers.
#[derive(Default)]
struct Answer {
    error: i16,
    ack_error: Option<i16>,
    records: Option<bytes::Bytes>,
    acquired: Vec<(i64, i16)>,
}

/// Runs of consecutive offsets with one delivery count: (first, last, count).
fn ranges(acquired: &[(i64, i16)]) -> Vec<(i64, i64, i16)> {
    let mut out: Vec<(i64, i64, i16)> = Vec::new();
    for &(offset, count) in acquired {
        match out.last_mut() {
            Some(r) if r.1 + 1 == offset && r.2 == count => r.1 = offset,
            _ => out.push((offset, offset, count)),
        }
    }
    out
}

/// `connection`: the one the request came on, which a session opened now
/// belongs to.
pub async fn handle<B: Broker>(
    f: &Facade<B>,
    req: ShareFetchRequest,
    connection: ConnectionId,
) -> (ShareFetchResponse, Vec<Splice>) {
    let Some(group) = req.group_id.as_ref().map(|g| g.0.as_str().to_string()).filter(|g| !g.is_empty()) else {
        return (refused(ResponseError::InvalidRequest, "GroupId is needed"), Vec::new());
    };
    let member = req.member_id.as_deref().unwrap_or_default().to_string();
    if member.is_empty() || member.len() > 36 {
        return (refused(ResponseError::InvalidRequest, "MemberId must be 1 to 36 characters"), Vec::new());
    }
    let mut acks = Vec::new();
    let mut add = Vec::new();
    for t in &req.topics {
        for p in &t.partitions {
            let at = (*t.topic_id.as_bytes(), p.partition_index);
            add.push(at);
            let batches: Vec<AckBatch<'_>> = p
                .acknowledgement_batches
                .iter()
                .map(|b| AckBatch { first: b.first_offset, last: b.last_offset, types: &b.acknowledge_types })
                .collect();
            if !batches.is_empty() {
                acks.push((at, batches));
            }
        }
    }
    let forget: Vec<SharePartition> = req
        .forgotten_topics_data
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| (*t.topic_id.as_bytes(), *p)))
        .collect();
    let epoch = req.share_session_epoch;
    // v2: a fetch that only renews locks asks for no records (KIP-1222).
    let only_renews = req.is_renew_ack;
    if only_renews && (req.max_bytes != 0 || req.min_bytes != 0 || req.max_records != 0 || req.max_wait_ms != 0) {
        let why = "a fetch that renews acknowledgements asks for no records: MaxBytes, MinBytes, MaxRecords and MaxWaitMs are 0";
        return (refused(ResponseError::InvalidRequest, why), Vec::new());
    }
    if epoch == 0 && !acks.is_empty() {
        return (refused(ResponseError::InvalidRequest, "a session's first fetch carries no acknowledgements"), vec![]);
    }
    let key = (group.clone(), member.clone());
    let partitions = match f.share_sessions.fetch(key, epoch, &add, &forget, connection) {
        Ok(partitions) => partitions,
        Err(e) => return (refused(e, &format!("share session of member {member}: {e:?}")), Vec::new()),
    };
    let mut answers: BTreeMap<SharePartition, Answer> = BTreeMap::new();
    for (at, code) in share_acks::apply(f, &group, &member, acks, only_renews).await {
        answers.entry(at).or_default().ack_error = Some(code);
    }
    if epoch == -1 {
        if let Err(e) = f.broker.share_release(group.clone(), member.clone()).await {
            tracing::warn!(group, member, error = %e, "share fetch: a closed session's records wait for their locks to run out");
        }
    }
    let mut splices = Vec::new();
    if !only_renews {
        if let Err(e) = acquire(f, &req, &group, &member, &partitions, &mut answers, &mut splices).await {
            for at in &partitions {
                answers.entry(*at).or_default().error = e.read_error().code();
            }
        }
    }
    let leader = LeaderIdAndEpoch::default().with_leader_id(f.config.node_id).with_leader_epoch(0);
    let mut topics: BTreeMap<[u8; 16], Vec<PartitionData>> = BTreeMap::new();
    for ((topic_id, partition), a) in answers {
        if a.error == 0 && a.ack_error.is_none() && a.acquired.is_empty() {
            continue;
        }
        let acquired = ranges(&a.acquired)
            .into_iter()
            .map(|(first, last, count)| {
                AcquiredRecords::default().with_first_offset(first).with_last_offset(last).with_delivery_count(count)
            })
            .collect();
        topics.entry(topic_id).or_default().push(
            PartitionData::default()
                .with_partition_index(partition)
                .with_error_code(a.error)
                .with_acknowledge_error_code(a.ack_error.unwrap_or(0))
                .with_current_leader(leader.clone())
                .with_records(Some(a.records.unwrap_or_default()))
                .with_acquired_records(acquired),
        );
    }
    let responses = topics
        .into_iter()
        .map(|(id, partitions)| {
            ShareFetchableTopicResponse::default().with_topic_id(crate::names::uuid(id)).with_partitions(partitions)
        })
        .collect();
    let answer = ShareFetchResponse::default()
        .with_acquisition_lock_timeout_ms(share_acks::lock_ms(f, &group))
        .with_responses(responses);
    (answer, splices)
}

/// Acquires records of the session's partitions for `member`, waiting for
/// some up to the request's `max_wait_ms`, and reads them into `answers`.
/// The request's `max_records` bounds what is acquired in either acquire
/// mode (v2's record-limit mode asks exactly that).
async fn acquire<B: Broker>(
    f: &Facade<B>,
    req: &ShareFetchRequest,
    group: &str,
    member: &str,
    partitions: &[SharePartition],
    answers: &mut BTreeMap<SharePartition, Answer>,
    splices: &mut Vec<Splice>,
) -> Result<(), BrokerError> {
    let mut named = Vec::new();
    for at in partitions {
        match f.broker.topic_by_id(at.0) {
            Some(t) => named.push((*at, t.name)),
            None => answers.entry(*at).or_default().error = ResponseError::UnknownTopicId.code(),
        }
    }
    if named.is_empty() || req.share_session_epoch == -1 {
        return Ok(());
    }
    let max_records = req.max_records.max(1) as usize;
    let deadline = Instant::now() + Duration::from_millis(req.max_wait_ms.max(0) as u64);
    let asked: Vec<(String, i32)> = named.iter().map(|(at, name)| (name.clone(), at.1)).collect();
    let topics: Vec<&str> = named.iter().map(|(_, name)| name.as_str()).collect();
    let acquired = loop {
        let appended = f.broker.appended(&topics);
        let acquired =
            f.broker.share_acquire(group.to_string(), member.to_string(), asked.clone(), max_records).await?;
        let any = acquired.iter().any(|p| p.as_ref().is_ok_and(|r| !r.is_empty()));
        let now = Instant::now();
        if any || now >= deadline {
            break acquired;
        }
        let _ = tokio::time::timeout(TICK.min(deadline - now), appended).await;
    };
    let mut asks = Vec::new();
    let mut read = Vec::new();
    for ((at, name), got) in named.iter().zip(acquired) {
        match got {
            Ok(records) if records.is_empty() => {}
            Ok(records) => {
                let (first, last) = (records[0].0, records[records.len() - 1].0);
                asks.push(FetchAsk {
                    topic: name.clone(),
                    partition: at.1,
                    offset: first,
                    max_bytes: 0,
                    read_committed: false,
                    until: Some(last),
                });
                read.push((*at, name.clone(), records));
            }
            Err(e) => answers.entry(*at).or_default().error = e.read_error().code(),
        }
    }
    let fetched = f.broker.fetch(asks, usize::MAX).await;
    let mut stand_ins = StandIns::default();
    let counted = &f.config.file_bytes_sent;
    for ((at, name, records), fetched) in read.into_iter().zip(fetched) {
        let answer = answers.entry(at).or_default();
        match encode_partition(fetched, (&name, at.1), usize::MAX, true, &mut stand_ins, splices, counted) {
            Ok((_, _, bytes, _)) => {
                answer.records = Some(bytes);
                answer.acquired = records;
            }
            // The records stay acquired until their locks run out.
            Err(e) => answer.error = e.code(),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acquired_offsets_are_answered_as_runs_of_one_delivery_count() {
        let got = ranges(&[(3, 1), (4, 1), (5, 2), (7, 2), (8, 2)]);
        assert_eq!(got, vec![(3, 4, 1), (5, 5, 2), (7, 8, 2)]);
    }
}
