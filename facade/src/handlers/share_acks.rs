//! A share member's acknowledgements as ShareFetch and ShareAcknowledge
//! both carry them: batches of offsets, each with one acknowledge type or
//! one per offset, applied through the broker and answered per partition.

use crate::broker::ShareAckAsk;
use crate::share_sessions::SharePartition;
use crate::{Broker, Facade};
use protocol::ResponseError;
use std::collections::BTreeMap;

/// One acknowledgement batch as a request carries it.
pub struct AckBatch<'a> {
    pub first: i64,
    pub last: i64,
    pub types: &'a [i8],
}

/// The batch as runs of one type each: (first, last, type).
fn runs(batch: &AckBatch<'_>) -> Result<Vec<(i64, i64, i8)>, ResponseError> {
    if batch.first < 0 || batch.last < batch.first {
        return Err(ResponseError::InvalidRequest);
    }
    match batch.types {
        [kind] => Ok(vec![(batch.first, batch.last, *kind)]),
        types if types.len() as i64 == batch.last - batch.first + 1 => {
            let mut out: Vec<(i64, i64, i8)> = Vec::new();
            for (i, kind) in types.iter().enumerate() {
                let offset = batch.first + i as i64;
                match out.last_mut() {
                    Some(run) if run.2 == *kind => run.1 = offset,
                    _ => out.push((offset, offset, *kind)),
                }
            }
            Ok(out)
        }
        _ => Err(ResponseError::InvalidRequest),
    }
}

/// Kafka's RENEW acknowledge type: allowed only in a request that says it
/// renews (`IsRenewAck`, v2).
const RENEW: i8 = 4;

/// How long records of `group` are held, as a share answer reports it.
pub fn lock_ms<B: Broker>(f: &Facade<B>, group: &str) -> i32 {
    let configs = f.broker.share_group_config(group).unwrap_or_default();
    let lock = configs.iter().find(|c| c.name == "share.record.lock.duration.ms");
    lock.and_then(|c| c.value.parse().ok()).unwrap_or(30_000)
}

/// Applies `member`'s acknowledgements of each partition: per partition,
/// the error of its first refused batch, or 0. `renew`: whether the
/// request may renew locks.
pub async fn apply<B: Broker>(
    f: &Facade<B>,
    group: &str,
    member: &str,
    acks: Vec<(SharePartition, Vec<AckBatch<'_>>)>,
    renew: bool,
) -> BTreeMap<SharePartition, i16> {
    let mut codes = BTreeMap::new();
    let mut asks = Vec::new();
    let mut owners = Vec::new();
    for ((topic_id, partition), batches) in acks {
        let Some(topic) = f.broker.topic_by_id(topic_id).map(|t| t.name) else {
            codes.insert((topic_id, partition), ResponseError::UnknownTopicId.code());
            continue;
        };
        codes.insert((topic_id, partition), 0);
        for batch in &batches {
            if !renew && batch.types.contains(&RENEW) {
                codes.insert((topic_id, partition), ResponseError::InvalidRequest.code());
                continue;
            }
            match runs(batch) {
                Ok(runs) => {
                    for (first, last, kind) in runs {
                        asks.push(ShareAckAsk { topic: topic.clone(), partition, first, last, kind });
                        owners.push((topic_id, partition));
                    }
                }
                Err(e) => {
                    codes.insert((topic_id, partition), e.code());
                }
            }
        }
    }
    if asks.is_empty() {
        return codes;
    }
    let answers = match f.broker.share_acknowledge(group.to_string(), member.to_string(), asks).await {
        Ok(answers) => answers,
        Err(e) => vec![Err(e); owners.len()],
    };
    for (owner, answer) in owners.into_iter().zip(answers) {
        let code = codes.entry(owner).or_insert(0);
        if let (Err(e), 0) = (answer, *code) {
            *code = e.read_error().code();
        }
    }
    codes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_with_a_type_per_offset_is_cut_into_runs_of_one_type() {
        let batch = AckBatch { first: 10, last: 13, types: &[1, 1, 2, 1] };
        assert_eq!(runs(&batch), Ok(vec![(10, 11, 1), (12, 12, 2), (13, 13, 1)]));
        assert_eq!(runs(&AckBatch { first: 5, last: 9, types: &[3] }), Ok(vec![(5, 9, 3)]));
        assert_eq!(runs(&AckBatch { first: 5, last: 9, types: &[1, 1] }), Err(ResponseError::InvalidRequest));
    }
}
