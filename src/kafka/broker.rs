//! [`facade::Broker`] over a node: every write is a planner command through
//! the replicator, every read comes from the applied store and the qlog, as
//! for the HTTP API. Kafka partition number p is the queue's p-th partition
//! in creation order (partition ids only grow, so id order is that order).

use super::records::{to_record, transaction_id};
use super::time_index::TimeIndex;
use crate::message::Message;
use crate::node::{GroupCore, Node};
use crate::planner::command::{Command, ConfigureQueue, CursorCommit, PushBody, PushItem, PushOutcome, PushStatus};
use crate::planner::kafka_txn::{KafkaTxnAnswer, KafkaTxnOp, TxnRefusal};
use crate::planner::kv::{row_key, Expiry, KvAnswer, KvKind, KvOp, KvResult};
use crate::planner::share::{AckKind, ShareAck, ShareAnswer, ShareOp};
use crate::qlog::files::LogFile;
use crate::qlog::kafka_batch::KafkaBatch;
use crate::queue_options::{QueueOptions, KAFKA_LOG_APPEND_TIME, KAFKA_MAX_MESSAGE_BYTES};
use crate::reader::{KafkaRun, ReaderError};
use crate::replicate::raft::version_gate::cluster_catalogue;
use crate::replicate::typed::Typed;
use crate::replicate::ProposeError;
use crate::share_groups::{self, ShareGroupError};
use crate::store::rows::KafkaTxnState;
use crate::store::Store;
use bytes::Bytes;
use facade::broker::{
    BrokerAddress, BrokerError, Committed, ConfigEntry, FetchAsk, Fetched, FetchedRun, GroupCoordinator, OffsetCommit,
    PartitionBatch, PartitionOffsets, ProduceAnswers, Produced, Read, ShareAckAsk, ShareAcquired, TopicView,
    TxnProducer, TxnView,
};
use facade::file_range::{FileRange, StoredFile};
use facade::TopicSettings;
use futures_util::future::join_all;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

const PRODUCER_ID_KEY: &str = "producer-id";

pub struct QueenBroker {
    node: Arc<Node>,
    times: Arc<TimeIndex>,
}

/// What a Kafka client is told when the replicator cannot take a request.
fn broker_error(e: ProposeError) -> BrokerError {
    match e {
        ProposeError::ShuttingDown => BrokerError::ShuttingDown,
        ProposeError::LogFilesUnavailable => BrokerError::Unavailable(e.to_string()),
        // A client retries NOT_LEADER_OR_FOLLOWER (NOT_COORDINATOR) at
        // another broker of its metadata: a member.
        ProposeError::NotLeader { .. } | ProposeError::NotAMember => BrokerError::NotLeader(e.to_string()),
        ProposeError::Timeout => BrokerError::TimedOut(e.to_string()),
    }
}

/// What a Kafka client is told when the transaction coordinator refuses.
fn refused(r: TxnRefusal) -> BrokerError {
    match r {
        TxnRefusal::Fenced => BrokerError::ProducerFenced,
        TxnRefusal::UnknownProducer => BrokerError::UnknownProducerId,
        TxnRefusal::InvalidState => BrokerError::InvalidTxnState(
            "the request does not fit the transaction's state (a partition not added to it, or none open)".into(),
        ),
    }
}

fn planner_producer(p: TxnProducer) -> crate::planner::kafka_txn::TxnProducer {
    crate::planner::kafka_txn::TxnProducer { id: p.id, epoch: p.epoch }
}

impl QueenBroker {
    pub fn new(node: Arc<Node>) -> Self {
        Self { node, times: Arc::default() }
    }

    /// Whether a produced batch is stored as it came. Always on one node; a
    /// cluster only once every member reads such batches (its effect
    /// catalogue is 2 or later), since an older build could not read them
    /// back.
    fn stores_batches_as_they_came(&self) -> bool {
        self.node.settings.raft_node_id.is_none() || cluster_catalogue(&self.store()) >= 2
    }

    /// Whether Kafka transactions may be written: always on one node; on a
    /// cluster once every member reads their effects (catalogue 3).
    fn refuse_transactions_before_catalogue_3(&self) -> Result<(), BrokerError> {
        if self.node.placed_apart() {
            return Err(BrokerError::Unsupported(
                "Kafka transactions span topics, and with QUEEN_RAFT_GROUPS above 1 topics lie in several raft \
                 groups: this build does not write a transaction's markers across groups"
                    .into(),
            ));
        }
        match self.node.settings.raft_node_id.is_none() || cluster_catalogue(&self.store()) >= 3 {
            true => Ok(()),
            false => Err(BrokerError::CoordinatorLoading(
                "Kafka transactions wait until every cluster member runs a build that reads them (effect catalogue 3)"
                    .into(),
            )),
        }
    }

    /// Asks the transaction coordinator, answering a request that only succeeds or is refused.
    async fn ask_txn(&self, op: KafkaTxnOp) -> Result<(), BrokerError> {
        self.refuse_transactions_before_catalogue_3()?;
        match self.ask(Typed::kafka_txn(op)).await? {
            KafkaTxnAnswer::Done(done) => done.map_err(refused),
            other => Err(BrokerError::Internal(format!("the transaction coordinator answered {other:?}"))),
        }
    }

    /// (queue id, partition id) of each asked partition, or why not.
    fn locate_all(&self, partitions: &[(String, i32)]) -> Vec<Result<(u64, u64), BrokerError>> {
        partitions.iter().map(|(topic, index)| locate(&self.store_of(topic), topic, *index)).collect()
    }

    /// Group 0's applied state: the coordinators' (consumer group state,
    /// producer ids, transactions, share group declarations).
    fn store(&self) -> std::sync::RwLockReadGuard<'_, Store> {
        self.node.group0().view.local()
    }

    /// The applied state of the raft group that holds `topic`.
    fn store_of(&self, topic: &str) -> std::sync::RwLockReadGuard<'_, Store> {
        self.node.group_of(topic).view.local()
    }

    /// Asks group 0, the coordinators' group.
    async fn ask<A>(&self, proposal: Typed<A>) -> Result<A, BrokerError> {
        ask_in(self.node.group0(), proposal).await
    }

    /// Hands `proposal` to the planner now where this node plans, so its
    /// place among this connection's writes is fixed when this returns; a
    /// follower forwards it and waits. The future answers once it is durable.
    async fn ask_placed<A: Send + 'static>(
        &self,
        group: &GroupCore,
        proposal: Typed<A>,
    ) -> Pin<Box<dyn Future<Output = Result<A, BrokerError>> + Send>> {
        match group.replicator.ask_now(proposal) {
            Ok(wait) => Box::pin(async move { wait.await.map_err(broker_error) }),
            Err(forwarded) => Box::pin(std::future::ready(ask_in(group, *forwarded).await)),
        }
    }

    /// Runs a time index lookup on the partition, off the async workers:
    /// it may read the partition's records.
    async fn look_up_time(
        &self,
        topic: &str,
        partition: i32,
        lookup: impl FnOnce(&TimeIndex, &Node, u64, u64) -> Result<Option<(u64, i64)>, ReaderError> + Send + 'static,
    ) -> Result<Option<(i64, i64)>, BrokerError> {
        let (q, p) = locate(&self.store_of(topic), topic, partition)?;
        let (node, times) = (self.node.clone(), self.times.clone());
        let found = tokio::task::spawn_blocking(move || lookup(&times, &node, q, p))
            .await
            .map_err(|e| BrokerError::Internal(e.to_string()))?
            .map_err(|e| BrokerError::Internal(e.to_string()))?;
        Ok(found.map(|(offset, timestamp)| (offset as i64, timestamp)))
    }

    /// The largest batch a produce writes to `topic`: its
    /// `max.message.bytes`, else the node's `message.max.bytes` (a topic
    /// that does not exist yet is created with the node's).
    fn max_message_bytes(&self, topic: &str) -> usize {
        let store = self.store_of(topic);
        let own = store
            .queues
            .get(&topic.to_string())
            .and_then(|row| QueueOptions::parse(&row.options).kafka_max_message_bytes());
        own.unwrap_or(self.node.settings.kafka_message_max_bytes)
    }

    /// Share group state is group 0's and its records the queue groups':
    /// refused with the groups apart, whether or not the member declared
    /// itself (`share_groups::declare` refuses that too).
    fn refuse_share_groups_apart(&self) -> Result<(), BrokerError> {
        match self.node.placed_apart() {
            true => Err(share_group_error(ShareGroupError::GroupsApart)),
            false => Ok(()),
        }
    }

    fn refuse_when_full(&self) -> Result<(), BrokerError> {
        if self.node.disk_gate.is_full() {
            return Err(BrokerError::StorageFull);
        }
        Ok(())
    }
}

/// Asks the raft group `group`.
async fn ask_in<A>(group: &GroupCore, proposal: Typed<A>) -> Result<A, BrokerError> {
    group.replicator.ask(proposal).await.map_err(broker_error)
}

/// A topic's id: fixed for the queue's life, never shared with another
/// queue (queue ids are never reused).
fn topic_id(queue: u64) -> [u8; 16] {
    ((0x5155_4545_4e00_0000u128 << 64) | queue as u128).to_be_bytes()
}

fn partition_ids(store: &Store, queue: u64) -> impl Iterator<Item = u64> + '_ {
    store.partitions.range((queue, 0)..=(queue, u64::MAX)).map(|((_, p), _)| *p)
}

fn view(store: &Store, name: &str) -> Option<TopicView> {
    let q = store.queue_id(name)?;
    Some(TopicView { name: name.to_string(), id: topic_id(q), partitions: partition_ids(store, q).count() as u32 })
}

/// (queue id, partition id) of Kafka partition `index` of `topic`.
fn locate(store: &Store, topic: &str, index: i32) -> Result<(u64, u64), BrokerError> {
    let q = store.queue_id(topic).ok_or(BrokerError::UnknownTopicOrPartition)?;
    let p = usize::try_from(index)
        .ok()
        .and_then(|i| partition_ids(store, q).nth(i))
        .ok_or(BrokerError::UnknownTopicOrPartition)?;
    Ok((q, p))
}

/// A partition a fetch reads, found in the applied state.
struct PartitionRead {
    queue: u64,
    partition: u64,
    offset: u64,
    max_bytes: usize,
    offsets: PartitionOffsets,
    /// Where the read stops: the high watermark, or for read_committed the
    /// last stable offset.
    end: u64,
    aborted: Vec<(i64, i64)>,
}

impl PartitionRead {
    fn plan(store: &Store, ask: &FetchAsk) -> Result<Self, BrokerError> {
        let (queue, partition) = locate(store, &ask.topic, ask.partition)?;
        let offsets = offsets_of(store, queue, partition);
        if ask.offset < offsets.log_start || ask.offset > offsets.high_watermark {
            return Err(BrokerError::OffsetOutOfRange {
                offset: ask.offset,
                log_start: offsets.log_start,
                high_watermark: offsets.high_watermark,
            });
        }
        let offset = ask.offset as u64;
        let (end, aborted) = match ask.read_committed {
            false => (offsets.high_watermark as u64, Vec::new()),
            true => {
                let end = offsets.last_stable as u64;
                let aborted = store.aborted_between(queue, partition, offset, end);
                (end, aborted.into_iter().map(|(producer, first)| (producer, first as i64)).collect())
            }
        };
        let (end, max_bytes) = match ask.until {
            Some(until) => (end.min(until.max(0) as u64 + 1), usize::MAX),
            None => (end, ask.max_bytes),
        };
        Ok(Self { queue, partition, offset, max_bytes, offsets, end, aborted })
    }

    /// The records within this partition's budget and the `left` of the
    /// fetch's, which it takes from.
    fn read(self, node: &Node, left: &mut usize) -> Result<Fetched, BrokerError> {
        let Self { queue, partition, offset, max_bytes, offsets, end, aborted } = self;
        let budget = max_bytes.min(*left);
        if offset >= end || budget == 0 {
            return Ok(Fetched { runs: Vec::new(), offsets, aborted: Vec::new() });
        }
        let (runs, used) = node
            .group_of_id(queue)
            .reader
            .read_for_kafka(queue, partition, offset, end, budget as u64)
            .map_err(|e| BrokerError::Internal(e.to_string()))?;
        *left = left.saturating_sub(used as usize);
        let runs = runs
            .into_iter()
            .map(|run| match run {
                KafkaRun::Batch(bytes) => FetchedRun::Batches(bytes),
                KafkaRun::InFile { file, pos, len } => FetchedRun::InFile(FileRange { file, pos, len }),
                KafkaRun::Messages(messages) => FetchedRun::Records(messages.into_iter().map(to_record).collect()),
            })
            .collect();
        Ok(Fetched { runs, offsets, aborted })
    }
}

/// A qlog file, as a fetch sends stored batches from it.
impl StoredFile for LogFile {
    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        LogFile::raw_fd(self)
    }

    fn read_at(&self, len: usize, pos: u64) -> std::io::Result<Vec<u8>> {
        self.read_vec_at(len, pos)
    }
}

fn offsets_of(store: &Store, q: u64, p: u64) -> PartitionOffsets {
    let row = store.partition(q, p).expect("a located partition has a row");
    PartitionOffsets {
        log_start: row.log_start as i64,
        high_watermark: row.next_offset as i64,
        last_stable: store.last_stable_offset(q, p) as i64,
    }
}

impl facade::Broker for QueenBroker {
    /// On a cluster, the raft leader coordinates every group, at the Kafka
    /// address its `QUEEN_RAFT_PEERS` entry names; while no leader is known
    /// none does. A leader whose entry names no Kafka address leaves each
    /// node coordinating the groups of the clients it reaches.
    fn group_coordinator(&self) -> GroupCoordinator {
        let Some(me) = self.node.settings.raft_node_id else { return GroupCoordinator::Here };
        let Some((leader, member)) = self.node.group0().replicator.leader() else {
            return GroupCoordinator::NotAvailable;
        };
        if leader == me {
            return GroupCoordinator::Here;
        }
        kafka_address(leader, &member).map_or(GroupCoordinator::Here, GroupCoordinator::There)
    }

    fn other_brokers(&self) -> Vec<BrokerAddress> {
        let me = self.node.settings.raft_node_id;
        let voters = self.node.group0().replicator.voters();
        voters.iter().filter(|(id, _)| Some(*id) != me).filter_map(|(id, member)| kafka_address(*id, member)).collect()
    }

    fn topics(&self) -> Vec<TopicView> {
        let mut topics = Vec::new();
        for group in self.node.queue_groups() {
            let store = group.view.local();
            topics.extend(store.queues.iter().filter_map(|(name, _)| view(&store, name)));
        }
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        topics
    }

    fn topic(&self, name: &str) -> Option<TopicView> {
        view(&self.store_of(name), name)
    }

    fn topic_by_id(&self, id: [u8; 16]) -> Option<TopicView> {
        let queue = u64::try_from(u128::from_be_bytes(id) ^ u128::from_be_bytes(topic_id(0))).ok()?;
        let store = self.node.group_of_id(queue).view.local();
        let name = store.queue_name(queue)?.to_string();
        view(&store, &name)
    }

    async fn create_topic(
        &self,
        name: String,
        partitions: u32,
        settings: TopicSettings,
    ) -> Result<TopicView, BrokerError> {
        self.refuse_when_full()?;
        let options = queue_options(settings);
        if ask_in(self.node.group_of(&name), Typed::create_topic(name.clone(), partitions, options)).await?.existed {
            return Err(BrokerError::TopicAlreadyExists);
        }
        view(&self.store_of(&name), &name).ok_or_else(|| BrokerError::Internal("a created topic is missing".into()))
    }

    async fn delete_topic(&self, name: String) -> Result<(), BrokerError> {
        match ask_in(self.node.group_of(&name), Typed::delete_queue(name)).await? {
            false => Err(BrokerError::UnknownTopicOrPartition),
            true => Ok(()),
        }
    }

    async fn create_partitions(&self, name: String, total: u32) -> Result<(), BrokerError> {
        self.refuse_when_full()?;
        match ask_in(self.node.group_of(&name), Typed::add_partitions(name, total)).await?.existed {
            false => Err(BrokerError::UnknownTopicOrPartition),
            true => Ok(()),
        }
    }

    fn admit(&self, topic: &str, batch_bytes: usize) -> Result<(), BrokerError> {
        self.refuse_when_full()?;
        let limit = self.max_message_bytes(topic);
        match batch_bytes > limit {
            true => Err(BrokerError::RecordTooLarge { size: batch_bytes, limit }),
            false => Ok(()),
        }
    }

    /// The push is handed to the planner before the outer future resolves
    /// (where this node plans; a follower forwards it and waits), so the
    /// connection may read its next request while this one is written.
    async fn produce(&self, batches: Vec<PartitionBatch>) -> ProduceAnswers {
        // The batches' bytes count at the disk gate until they are durable, so
        // producers side by side cannot carry the volume past the gate.
        let bytes = batches.iter().flat_map(|b| &b.wires).map(Bytes::len);
        let Some(admission) = self.node.disk_gate.admit(bytes.sum::<usize>() as u64) else {
            let full = batches.iter().map(|_| Err(BrokerError::StorageFull)).collect();
            return Box::pin(std::future::ready(full));
        };
        let as_they_came = self.stores_batches_as_they_came();
        // A request's batches are all one producer's: transactional or not.
        let transactional = batches.first().and_then(|b| Some((b.transactional_id.clone()?, &b.batch)));
        let transactional =
            transactional.map(|(id, batch)| (id, TxnProducer { id: batch.producer_id, epoch: batch.producer_epoch }));
        // Per batch: its first item in `items`, its item count and whether
        // it was stamped with the append time, or why not.
        let mut plan: Vec<Result<(usize, usize, bool), BrokerError>> = Vec::with_capacity(batches.len());
        let mut items: Vec<PushItem> = Vec::new();
        let mut sealer = self.node.sealer();
        for b in &batches {
            // The partition's name, and whether its topic stamps the append
            // time, in one look at the applied state.
            let located = {
                let store = self.store_of(&b.topic);
                locate(&store, &b.topic, b.partition).and_then(|(q, p)| {
                    let name = store.partition(q, p).map(|r| r.name.clone());
                    let stamps = store
                        .queues
                        .get(&b.topic)
                        .is_some_and(|row| QueueOptions::parse(&row.options).kafka_log_append_time());
                    name.map(|name| (name, stamps)).ok_or(BrokerError::UnknownTopicOrPartition)
                })
            };
            // The facade admitted the batch (`admit`) before it asked here.
            plan.push(located.and_then(|(partition, log_append_time)| {
                let first = items.len();
                let mut stamped = false;
                let item = |body| PushItem { queue: b.topic.clone(), partition: partition.clone(), body };
                // A sealed queue's records are sealed one by one, each under
                // its own transactionId.
                let as_it_came = as_they_came && !sealer.seals(&b.topic);
                if transactional.is_some() && !as_it_came {
                    // A read_committed consumer needs the batch's header.
                    return Err(BrokerError::InvalidRequest(format!(
                        "topic {:?} is encrypted, and its records are stored one by one: transactions write there only as they came",
                        b.topic
                    )));
                }
                if as_it_came {
                    stamped = log_append_time;
                    for wire in &b.wires {
                        let batch = KafkaBatch::new(wire.clone(), b.producer_sub.clone())
                            .map_err(|e| BrokerError::CorruptRecords(e.to_string()))?;
                        items.push(item(PushBody::Kafka(batch.typed(log_append_time))));
                    }
                } else {
                    for (i, record) in b.batch.records.iter().enumerate() {
                        let mut message =
                            Message::from_kafka(record, transaction_id(&b.batch, i), b.producer_sub.clone());
                        sealer.seal(&b.topic, &mut message).map_err(|e| BrokerError::Internal(e.to_string()))?;
                        let level = self.node.settings.zstd_level;
                        items.push(PushItem::new(b.topic.clone(), partition.clone(), &message, level));
                    }
                }
                Ok((first, items.len() - first, stamped))
            }));
        }
        type Pushed = Result<Vec<Result<PushOutcome, BrokerError>>, BrokerError>;
        let pushed: Pin<Box<dyn Future<Output = Pushed> + Send>> = if items.is_empty() {
            Box::pin(std::future::ready(Ok(vec![])))
        } else if let Some((transactional_id, producer)) = transactional {
            let op = KafkaTxnOp::Produce { transactional_id, producer: planner_producer(producer), items };
            let asked = match self.refuse_transactions_before_catalogue_3() {
                Err(e) => Box::pin(std::future::ready(Err(e))),
                Ok(()) => self.ask_placed(self.node.group0(), Typed::kafka_txn(op)).await,
            };
            Box::pin(async move {
                match asked.await? {
                    KafkaTxnAnswer::Produced(answers) => Ok(answers.into_iter().map(|a| a.map_err(refused)).collect()),
                    other => Err(BrokerError::Internal(format!("a transactional produce was answered {other:?}"))),
                }
            })
        } else {
            // Each raft group's part is placed now, in this connection's
            // order; each partition is answered by its own group's write.
            let mut asked = Vec::new();
            for (group, part) in self.node.split(items, |node, item| node.group_of(&item.queue)) {
                let (at, items): (Vec<usize>, Vec<PushItem>) = part.into_iter().unzip();
                asked.push((at, self.ask_placed(group, Typed::push(items)).await));
            }
            Box::pin(async move {
                let mut placed: Vec<(usize, Result<PushOutcome, BrokerError>)> = Vec::new();
                for (at, answer) in asked {
                    match answer.await {
                        Ok(Ok(outcomes)) => {
                            assert_eq!(
                                at.len(),
                                outcomes.len(),
                                "a group answered a push of {} items with {} outcomes",
                                at.len(),
                                outcomes.len()
                            );
                            placed.extend(at.into_iter().zip(outcomes.into_iter().map(Ok)));
                        }
                        // A full queue is a condition the producer retries through.
                        Ok(Err(full)) => {
                            let full = BrokerError::QueueFull(format!(
                                "queue {:?} is at its maxSize of {}",
                                full.queue, full.max_size
                            ));
                            placed.extend(at.into_iter().map(|a| (a, Err(full.clone()))));
                        }
                        Err(e) => placed.extend(at.into_iter().map(|a| (a, Err(e.clone())))),
                    }
                }
                placed.sort_by_key(|(at, _)| *at);
                Ok(placed.into_iter().map(|(_, outcome)| outcome).collect())
            })
        };
        let node = self.node.clone();
        Box::pin(async move {
            let outcomes = pushed.await;
            drop(admission);
            plan.into_iter()
                .map(|slot| {
                    let (first, count, stamped) = slot?;
                    let outcomes = outcomes.as_ref().map_err(Clone::clone)?;
                    let written = outcomes.get(first..first + count).filter(|_| count > 0);
                    let written = written.ok_or(BrokerError::CorruptRecords("an empty batch".into()))?;
                    for outcome in written {
                        match outcome.as_ref().map_err(Clone::clone)?.status {
                            PushStatus::OutOfOrder => return Err(BrokerError::OutOfOrderSequence),
                            PushStatus::Fenced => return Err(BrokerError::ProducerFenced),
                            PushStatus::Queued | PushStatus::Duplicate => {}
                        }
                    }
                    let first = written[0].as_ref().map_err(Clone::clone)?;
                    let store = node.group_of_id(first.queue_id).view.local();
                    let log_start =
                        store.partition(first.queue_id, first.partition_id).map_or(0, |r| r.log_start as i64);
                    // The time a LogAppendTime batch was stamped with (-1 for CreateTime).
                    let log_append_time_ms = match stamped {
                        true => first.timestamp_us.div_euclid(1000),
                        false => -1,
                    };
                    Ok(Produced { base_offset: first.offset as i64, log_start, log_append_time_ms })
                })
                .collect()
        })
    }

    async fn fetch(&self, asks: Vec<FetchAsk>, total_bytes: usize) -> Vec<Result<Fetched, BrokerError>> {
        // A consumer acts on what it fetches: it reads the committed log.
        // Each partition behind its own group's gate: a group electing a
        // leader holds up only its own partitions.
        let groups = self.node.groups_of(asks.iter().map(|a| a.topic.as_str()));
        let gates = join_all(groups.iter().map(|g| g.view.gate())).await;
        let reads: Vec<Result<PartitionRead, BrokerError>> = asks
            .iter()
            .map(|ask| {
                let group = self.node.group_of(&ask.topic);
                let at =
                    groups.iter().position(|g| std::ptr::eq(*g, group)).expect("every asked topic's group is gated");
                gates[at].clone().map_err(broker_error)?;
                PartitionRead::plan(&group.view.local(), ask)
            })
            .collect();
        let node = self.node.clone();
        // File reads block: every partition's in one task off the async
        // workers, where a task each cost a wake-up and a thread switch each.
        let n = reads.len();
        tokio::task::spawn_blocking(move || {
            let mut left = total_bytes;
            reads.into_iter().map(|read| read?.read(&node, &mut left)).collect()
        })
        .await
        .unwrap_or_else(|e| vec![Err(BrokerError::Internal(e.to_string())); n])
    }

    async fn read_gate(&self, of: Read) -> Result<(), BrokerError> {
        let groups: Vec<&GroupCore> = match &of {
            Read::Topics(topics) => self.node.groups_of(topics.iter().map(String::as_str)),
            Read::Coordinator => vec![self.node.group0()],
            Read::Everything => self.node.groups().iter().collect(),
        };
        for gate in join_all(groups.iter().map(|g| g.view.gate())).await {
            gate.map_err(broker_error)?;
        }
        Ok(())
    }

    fn offsets(&self, topic: &str, partition: i32) -> Result<PartitionOffsets, BrokerError> {
        let store = self.store_of(topic);
        let (q, p) = locate(&store, topic, partition)?;
        Ok(offsets_of(&store, q, p))
    }

    async fn offset_for_time(
        &self,
        topic: String,
        partition: i32,
        timestamp_ms: i64,
    ) -> Result<Option<(i64, i64)>, BrokerError> {
        self.look_up_time(&topic, partition, move |times, node, q, p| times.first_at_or_after(node, q, p, timestamp_ms))
            .await
    }

    async fn max_timestamp(&self, topic: String, partition: i32) -> Result<Option<(i64, i64)>, BrokerError> {
        self.look_up_time(&topic, partition, |times, node, q, p| times.max_timestamp(node, q, p)).await
    }

    fn appended(&self, topics: &[&str]) -> impl std::future::Future<Output = ()> + Send + 'static {
        let queues: Vec<u64> = topics.iter().filter_map(|t| self.store_of(t).queue_id(t)).collect();
        let signal = self.node.apply_watch.watch(queues);
        async move { signal.notified().await }
    }

    async fn commit_offsets(&self, group: String, commits: Vec<OffsetCommit>) -> Vec<Result<(), BrokerError>> {
        let resolved: Vec<Result<CursorCommit, BrokerError>> = {
            commits
                .iter()
                .map(|c| {
                    let (queue, partition) = locate(&self.store_of(&c.topic), &c.topic, c.partition)?;
                    let offset = u64::try_from(c.offset)
                        .map_err(|_| BrokerError::InvalidRequest(format!("offset {} is negative", c.offset)))?;
                    Ok(CursorCommit { queue, partition, group: group.clone(), offset, metadata: c.metadata.clone() })
                })
                .collect()
        };
        // Each partition's commit is written in its own raft group, and
        // answered by that group's write.
        let (at, valid): (Vec<usize>, Vec<CursorCommit>) =
            resolved.iter().enumerate().filter_map(|(i, r)| Some((i, r.as_ref().ok()?.clone()))).unzip();
        let written: Vec<Result<(), BrokerError>> = self
            .node
            .ask_split(
                valid,
                |node, c| node.group_of_id(c.queue),
                |group, commits| async move {
                    let n = commits.len();
                    Ok::<_, std::convert::Infallible>(vec![
                        ask_in(group, Typed::group(Command::CommitOffsets(commits)))
                            .await
                            .map(|_| ());
                        n
                    ])
                },
            )
            .await
            .unwrap_or_else(|never| match never {});
        let mut results: Vec<Result<(), BrokerError>> = resolved.into_iter().map(|r| r.map(|_| ())).collect();
        for (i, w) in at.into_iter().zip(written) {
            results[i] = w;
        }
        results
    }

    fn committed(&self, group: &str, topic: &str, partition: i32) -> Result<Option<Committed>, BrokerError> {
        let store = self.store_of(topic);
        let (q, p) = locate(&store, topic, partition)?;
        let key = (q, p, group.to_string());
        Ok(store.cursors.get(&key).map(|c| Committed {
            offset: c.committed as i64,
            metadata: store.commit_metadata.get(&key).cloned().unwrap_or_default(),
        }))
    }

    fn group_partitions(&self, group: &str) -> Vec<(String, i32)> {
        let mut partitions = Vec::new();
        for placed in self.node.queue_groups() {
            let store = placed.view.local();
            partitions.extend(store.cursors.iter().filter(|(k, _)| k.2 == group).filter_map(|(k, _)| {
                let name = store.queue_name(k.0)?.to_string();
                let index = partition_ids(&store, k.0).position(|p| p == k.1)?;
                Some((name, index as i32))
            }));
        }
        partitions
    }

    fn group_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for placed in self.node.queue_groups() {
            names.extend(placed.view.local().cursors.iter().map(|(k, _)| k.2.clone()));
        }
        names.sort_unstable();
        names.dedup();
        names
    }

    async fn delete_group_offsets(&self, group: String, topic: Option<String>) -> Result<(), BrokerError> {
        let groups = self.node.groups_for(topic.as_deref());
        for placed in groups {
            let command = Command::DeleteGroup { queue: topic.clone(), group: group.clone(), metadata: true };
            ask_in(placed, Typed::group(command)).await?;
        }
        Ok(())
    }

    fn consumer_group_state(&self, group: &str) -> Option<String> {
        let key = row_key(crate::internal_kv::KAFKA_CONSUMER_GROUPS, group);
        self.store().kv.get(&key).map(|row| row.value.clone())
    }

    async fn save_consumer_group_state(&self, group: String, state: String) -> Result<(), BrokerError> {
        let op = KvOp {
            ns: crate::internal_kv::KAFKA_CONSUMER_GROUPS.to_string(),
            kind: KvKind::Put { key: group, value: state, expiry: Expiry::Forever, expect: None },
            required: true,
        };
        match self.ask(Typed::kv(vec![op])).await? {
            KvAnswer::Results(results) => match results.first() {
                Some(KvResult::Write { applied: Ok(()), .. }) => Ok(()),
                other => Err(BrokerError::Internal(format!("saving a consumer group answered {other:?}"))),
            },
            other => Err(BrokerError::Internal(format!("saving a consumer group answered {other:?}"))),
        }
    }

    async fn new_producer_id(&self) -> Result<i64, BrokerError> {
        let op = KvOp {
            ns: crate::internal_kv::KAFKA_PRODUCER_IDS.to_string(),
            kind: KvKind::Incr {
                key: PRODUCER_ID_KEY.to_string(),
                delta: 1.into(),
                min: None,
                max: None,
                expiry: Expiry::Forever,
            },
            required: true,
        };
        match self.ask(Typed::kv(vec![op])).await? {
            KvAnswer::Results(results) => match results.first() {
                Some(KvResult::Write { applied: Ok(()), row: Some(row), .. }) => row
                    .value
                    .parse::<i64>()
                    .map_err(|_| BrokerError::Internal(format!("the producer id counter holds {:?}", row.value))),
                other => Err(BrokerError::Internal(format!("the producer id counter answered {other:?}"))),
            },
            other => Err(BrokerError::Internal(format!("the producer id counter answered {other:?}"))),
        }
    }

    async fn init_transactional(
        &self,
        transactional_id: String,
        timeout_ms: i32,
        producer: Option<TxnProducer>,
    ) -> Result<TxnProducer, BrokerError> {
        self.refuse_transactions_before_catalogue_3()?;
        // Drawn before the coordinator decides, so that the decision needs
        // no second entry; used only for a new id or an exhausted epoch.
        let fresh_producer_id = self.new_producer_id().await?;
        let producer = producer.map(planner_producer);
        let op = KafkaTxnOp::Init { transactional_id, timeout_ms, fresh_producer_id, producer };
        match self.ask(Typed::kafka_txn(op)).await? {
            KafkaTxnAnswer::Init(init) => init.map(|p| TxnProducer { id: p.id, epoch: p.epoch }).map_err(refused),
            other => Err(BrokerError::Internal(format!("the transaction coordinator answered {other:?}"))),
        }
    }

    async fn add_partitions_to_txn(
        &self,
        transactional_id: String,
        producer: TxnProducer,
        partitions: Vec<(String, i32)>,
    ) -> Vec<Result<(), BrokerError>> {
        let located = self.locate_all(&partitions);
        let valid: Vec<(u64, u64)> = located.iter().filter_map(|l| l.as_ref().ok().copied()).collect();
        let added = match valid.is_empty() {
            true => Ok(()),
            false => {
                let producer = planner_producer(producer);
                self.ask_txn(KafkaTxnOp::AddPartitions { transactional_id, producer, partitions: valid }).await
            }
        };
        located.into_iter().map(|l| l.and(added.clone())).collect()
    }

    async fn add_offsets_to_txn(
        &self,
        transactional_id: String,
        producer: TxnProducer,
        group: String,
    ) -> Result<(), BrokerError> {
        self.ask_txn(KafkaTxnOp::AddGroup { transactional_id, producer: planner_producer(producer), group }).await
    }

    async fn txn_offset_commit(
        &self,
        transactional_id: String,
        producer: TxnProducer,
        group: String,
        commits: Vec<OffsetCommit>,
    ) -> Vec<Result<(), BrokerError>> {
        let asked: Vec<(String, i32)> = commits.iter().map(|c| (c.topic.clone(), c.partition)).collect();
        let resolved: Vec<Result<CursorCommit, BrokerError>> = self
            .locate_all(&asked)
            .into_iter()
            .zip(&commits)
            .map(|(located, c)| {
                let (queue, partition) = located?;
                let offset = u64::try_from(c.offset)
                    .map_err(|_| BrokerError::InvalidRequest(format!("offset {} is negative", c.offset)))?;
                Ok(CursorCommit { queue, partition, group: group.clone(), offset, metadata: c.metadata.clone() })
            })
            .collect();
        let offsets: Vec<CursorCommit> = resolved.iter().filter_map(|r| r.as_ref().ok().cloned()).collect();
        let written = match offsets.is_empty() {
            true => Ok(()),
            false => {
                let producer = planner_producer(producer);
                self.ask_txn(KafkaTxnOp::CommitOffsets { transactional_id, producer, offsets }).await
            }
        };
        resolved.into_iter().map(|r| r.map(|_| ()).and(written.clone())).collect()
    }

    async fn end_txn(&self, transactional_id: String, producer: TxnProducer, commit: bool) -> Result<(), BrokerError> {
        self.ask_txn(KafkaTxnOp::End { transactional_id, producer: planner_producer(producer), commit }).await
    }

    fn transactions(&self) -> Vec<TxnView> {
        let store = self.store();
        store
            .kafka_txns()
            .map(|(id, row)| TxnView {
                transactional_id: id.clone(),
                producer: TxnProducer { id: row.producer_id, epoch: row.epoch },
                state: row.state.name(),
                timeout_ms: row.timeout_ms,
                started_ms: match row.state {
                    KafkaTxnState::Ongoing => row.started_us.div_euclid(1000),
                    _ => -1,
                },
                partitions: row
                    .partitions
                    .keys()
                    .filter_map(|(q, p)| {
                        let topic = store.queue_name(*q)?.to_string();
                        let index = partition_ids(&store, *q).position(|id| id == *p)?;
                        Some((topic, index as i32))
                    })
                    .collect(),
            })
            .collect()
    }

    fn txn_offsets_pending(&self, group: &str, topic: &str, partition: i32) -> bool {
        let Ok((q, p)) = locate(&self.store_of(topic), topic, partition) else { return false };
        let store = self.store();
        let pending = store.kafka_txns().any(|(_, row)| {
            row.state == KafkaTxnState::Ongoing
                && row.offsets.iter().any(|o| o.queue == q && o.partition == p && o.group == group)
        });
        pending
    }

    fn topic_config(&self, topic: &str) -> Option<Vec<ConfigEntry>> {
        let store = self.store_of(topic);
        let row = store.queues.get(&topic.to_string())?;
        let options = QueueOptions::parse(&row.options);
        let retention_s = options.retention_seconds();
        let max_message_bytes = options.kafka_max_message_bytes();
        let log_append_time = options.kafka_log_append_time();
        let s = &self.node.settings;
        let fixed =
            |name: &str, value: String| ConfigEntry { name: name.to_string(), value, read_only: true, is_set: false };
        Some(vec![
            ConfigEntry {
                name: "retention.ms".to_string(),
                value: if retention_s == 0 { "-1".to_string() } else { (retention_s * 1000).to_string() },
                read_only: false,
                is_set: retention_s != 0,
            },
            ConfigEntry {
                name: "max.message.bytes".to_string(),
                value: max_message_bytes.unwrap_or(s.kafka_message_max_bytes).to_string(),
                read_only: false,
                is_set: max_message_bytes.is_some(),
            },
            fixed("cleanup.policy", "delete".into()),
            fixed("compression.type", "producer".into()),
            ConfigEntry {
                name: "message.timestamp.type".to_string(),
                value: if log_append_time { "LogAppendTime" } else { "CreateTime" }.to_string(),
                read_only: false,
                is_set: options.as_json().get(KAFKA_LOG_APPEND_TIME).is_some(),
            },
            fixed("min.insync.replicas", "1".into()),
            fixed("segment.bytes", s.segment_bytes.to_string()),
        ])
    }

    async fn set_topic_settings(&self, topic: String, settings: TopicSettings) -> Result<(), BrokerError> {
        let (namespace, task) = {
            let store = self.store_of(&topic);
            let row = store.queues.get(&topic).ok_or(BrokerError::UnknownTopicOrPartition)?;
            (row.namespace.clone(), row.task.clone())
        };
        let options = queue_options(settings);
        ask_in(self.node.group_of(&topic), Typed::configure(ConfigureQueue { queue: topic, namespace, task, options }))
            .await
            .map(|_| ())
    }

    fn share_group_config(&self, group: &str) -> Option<Vec<ConfigEntry>> {
        let entries = share_groups::configs(&self.store(), group)?;
        let entry = |(name, value, is_set)| ConfigEntry { name, value, read_only: false, is_set };
        Some(entries.into_iter().map(entry).collect())
    }

    async fn set_share_group_config(
        &self,
        group: String,
        settings: Vec<(String, Option<String>)>,
        validate_only: bool,
    ) -> Result<(), BrokerError> {
        share_groups::set(&self.node, &group, &settings, validate_only).await.map_err(share_group_error)
    }

    async fn declare_share_group(&self, group: String) -> Result<(), BrokerError> {
        share_groups::declare(&self.node, &group).await.map_err(share_group_error)
    }

    fn share_groups(&self) -> Vec<String> {
        share_groups::names(&self.store())
    }

    async fn forget_share_group(&self, group: String) -> Result<(), BrokerError> {
        share_groups::forget(&self.node, &group).await.map_err(share_group_error)
    }

    async fn share_acquire(
        &self,
        group: String,
        member: String,
        partitions: Vec<(String, i32)>,
        max_records: usize,
    ) -> Result<ShareAcquired, BrokerError> {
        self.refuse_share_groups_apart()?;
        let located = self.locate_all(&partitions);
        let ids: Vec<(u64, u64)> = located.iter().filter_map(|l| l.as_ref().ok().copied()).collect();
        let op = ShareOp::Acquire { group, holder: member, partitions: ids, max_records };
        let ShareAnswer::Acquired(got) = self.ask(Typed::share(op)).await? else {
            return Err(BrokerError::Internal("a share acquisition answered something else".into()));
        };
        let mut got = got.into_iter();
        Ok(located
            .into_iter()
            .map(|l| {
                l.map(|_| {
                    let records = got.next().unwrap_or_default();
                    records.into_iter().map(|(o, n)| (o as i64, n.min(i16::MAX as u32) as i16)).collect()
                })
            })
            .collect())
    }

    async fn share_acknowledge(
        &self,
        group: String,
        member: String,
        acks: Vec<ShareAckAsk>,
    ) -> Result<Vec<Result<(), BrokerError>>, BrokerError> {
        self.refuse_share_groups_apart()?;
        let asked: Vec<Result<ShareAck, BrokerError>> = {
            let store = self.store();
            acks.iter().map(|a| share_ack(&store, a)).collect()
        };
        let planned: Vec<ShareAck> = asked.iter().filter_map(|a| a.as_ref().ok().cloned()).collect();
        let op = ShareOp::Acknowledge { group, holder: member, acks: planned };
        let ShareAnswer::Acknowledged(applied) = self.ask(Typed::share(op)).await? else {
            return Err(BrokerError::Internal("a share acknowledgement answered something else".into()));
        };
        let mut applied = applied.into_iter();
        let not_held = || {
            BrokerError::InvalidRecordState(
                "a record acknowledged is not held by this member (its lock ran out?)".into(),
            )
        };
        Ok(asked
            .into_iter()
            .map(|a| a.and_then(|_| if applied.next().unwrap_or(false) { Ok(()) } else { Err(not_held()) }))
            .collect())
    }

    async fn share_release(&self, group: String, member: String) -> Result<(), BrokerError> {
        self.refuse_share_groups_apart()?;
        self.ask(Typed::share(ShareOp::ReleaseAll { group, holder: member })).await.map(|_| ())
    }

    fn share_start_offset(&self, group: &str, topic: &str, partition: i32) -> Result<Option<i64>, BrokerError> {
        let store = self.store_of(topic);
        let (q, p) = locate(&store, topic, partition)?;
        Ok(store.cursors.get(&(q, p, group.to_string())).map(|c| c.committed as i64))
    }
}

/// A Kafka acknowledgement as the planner takes it, or why it is refused.
fn share_ack(store: &Store, a: &ShareAckAsk) -> Result<ShareAck, BrokerError> {
    let (queue, partition) = locate(store, &a.topic, a.partition)?;
    let kind = match a.kind {
        0 => AckKind::Gap,
        1 => AckKind::Accept,
        2 => AckKind::Release,
        3 => AckKind::Reject,
        4 => AckKind::Renew,
        k => return Err(BrokerError::InvalidRequest(format!("acknowledge type {k} is not one of 0 to 4"))),
    };
    if a.first < 0 || a.last < a.first {
        return Err(BrokerError::InvalidRequest(format!("acknowledged offsets {}..={} are no range", a.first, a.last)));
    }
    Ok(ShareAck { queue, partition, first: a.first as u64, last: a.last as u64, kind })
}

fn share_group_error(e: ShareGroupError) -> BrokerError {
    match e {
        ShareGroupError::Invalid(why) => BrokerError::InvalidRequest(why),
        ShareGroupError::NotYet => BrokerError::CoordinatorLoading(e.to_string()),
        ShareGroupError::GroupsApart => BrokerError::Unsupported(e.to_string()),
        ShareGroupError::Propose(e) => broker_error(e),
    }
}

/// The queue options of the Kafka settings given, the others left out (a
/// configure keeps what it does not name). `retention.ms` in whole seconds,
/// rounded up; a negative one (Kafka's -1) keeps messages for ever.
fn queue_options(settings: TopicSettings) -> serde_json::Map<String, serde_json::Value> {
    let mut options = serde_json::Map::new();
    if let Some(ms) = settings.retention_ms {
        let seconds = if ms < 0 { 0 } else { (ms + 999) / 1000 };
        options.insert("retentionSeconds".into(), seconds.into());
    }
    if let Some(bytes) = settings.max_message_bytes {
        options.insert(KAFKA_MAX_MESSAGE_BYTES.into(), bytes.into());
    }
    if let Some(log_append_time) = settings.log_append_time {
        options.insert(KAFKA_LOG_APPEND_TIME.into(), log_append_time.into());
    }
    options
}

/// Where node `id` takes Kafka clients, from its advertised address; none
/// for a member that advertises none.
fn kafka_address(id: u64, member: &crate::store::rows::Member) -> Option<BrokerAddress> {
    let (host, port) = member.kafka.rsplit_once(':')?;
    Some(BrokerAddress { node_id: i32::try_from(id).ok()?, host: host.to_string(), port: port.parse().ok()? })
}
