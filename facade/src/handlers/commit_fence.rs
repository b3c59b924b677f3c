//! Who may commit a group's offsets, the one rule OffsetCommit and
//! TxnOffsetCommit (v3 and later, KIP-447) share: a consumer-protocol
//! (KIP-848) group's member commits at its member epoch, and no older than
//! the epoch it was given each partition at; a classic group's member
//! commits at its generation. A transactional commit checked only against
//! the classic coordinator found no member in a KIP-848 group and was told
//! UNKNOWN_MEMBER_ID, which a transactional consumer answers by aborting
//! and trying again: the chain never committed.

use crate::groups::TopicPartition;
use crate::{Broker, Facade};
use protocol::ResponseError;
use std::collections::BTreeMap;

pub struct CommitFence {
    /// Why the whole request is refused, if it is.
    refused: Option<ResponseError>,
    /// The epoch each of the member's partitions was given at (consumer-protocol groups only).
    given_at: BTreeMap<TopicPartition, i32>,
    epoch: i32,
}

impl CommitFence {
    pub async fn check<B: Broker>(
        f: &Facade<B>,
        group: &str,
        member_id: &str,
        instance: Option<&str>,
        generation_or_epoch: i32,
    ) -> Self {
        let (refused, given_at) =
            match f.consumer_groups.may_commit(&*f.broker, group, member_id, generation_or_epoch).await {
                Some(Ok(given_at)) => (None, given_at),
                Some(Err(e)) => (Some(e), BTreeMap::new()),
                None => (f.groups.may_commit(group, member_id, instance, generation_or_epoch).err(), BTreeMap::new()),
            };
        CommitFence { refused, given_at, epoch: generation_or_epoch }
    }

    /// The error a commit of `topic`/`partition` is answered with, if it is refused.
    pub fn refusal<B: Broker>(&self, f: &Facade<B>, topic: &str, partition: i32) -> Option<ResponseError> {
        if let Some(e) = &self.refused {
            return Some(*e);
        }
        let stale = !self.given_at.is_empty()
            && f.broker
                .topic(topic)
                .is_some_and(|t| self.given_at.get(&(t.id, partition)).is_some_and(|given| self.epoch < *given));
        stale.then_some(ResponseError::StaleMemberEpoch)
    }
}
