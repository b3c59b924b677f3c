//! The APIs and versions Queen serves. ApiVersions answers exactly this
//! table, and a request outside it is refused before any handler sees it.
//! Every range sits inside what the `kafka-protocol` crate can decode.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::VersionRange;

/// (API, lowest version, highest version).
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 12),
    (ApiKey::Fetch, 4, 16),
    (ApiKey::ListOffsets, 1, 9),
    (ApiKey::Metadata, 1, 13),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::FindCoordinator, 0, 4),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::ApiVersions, 0, 3),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 5),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::InitProducerId, 0, 4),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::DescribeCluster, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
    (ApiKey::AddPartitionsToTxn, 0, 3),
    (ApiKey::AddOffsetsToTxn, 0, 3),
    (ApiKey::EndTxn, 0, 3),
    (ApiKey::TxnOffsetCommit, 0, 3),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 1),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
    (ApiKey::ShareGroupHeartbeat, 1, 1),
    (ApiKey::ShareGroupDescribe, 1, 1),
    (ApiKey::ShareFetch, 1, 2),
    (ApiKey::ShareAcknowledge, 1, 2),
    (ApiKey::DescribeShareGroupOffsets, 0, 0),
    (ApiKey::AlterShareGroupOffsets, 0, 0),
    (ApiKey::DeleteShareGroupOffsets, 0, 0),
];

/// APIs Queen does not serve yet but answers, in their own layout, with
/// UNSUPPORTED_VERSION: a client that sends one without asking ApiVersions
/// first learns why instead of losing its connection. Not advertised.
pub const REFUSED: &[(ApiKey, i16, i16)] = &[
    // v4+ is the brokers' verification form (KIP-890), not a client's.
    (ApiKey::AddPartitionsToTxn, 4, 5),
];

pub fn is_refused(key: ApiKey, version: i16) -> bool {
    REFUSED.iter().any(|(k, min, max)| *k == key && *min <= version && version <= *max)
}

/// The versions of `key` Queen serves, if it serves the API at all.
pub fn supported(key: ApiKey) -> Option<VersionRange> {
    SUPPORTED.iter().find(|(k, _, _)| *k == key).map(|(_, min, max)| VersionRange { min: *min, max: *max })
}

pub fn is_supported(key: ApiKey, version: i16) -> bool {
    supported(key).is_some_and(|r| r.min <= version && version <= r.max)
}

/// The table as ApiVersions answers it.
pub fn api_versions() -> Vec<ApiVersion> {
    SUPPORTED
        .iter()
        .map(|(k, min, max)| {
            ApiVersion::default().with_api_key(*k as i16).with_min_version(*min).with_max_version(*max)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_range_is_one_the_codec_can_decode() {
        for (key, min, max) in SUPPORTED.iter().chain(REFUSED) {
            let codec = key.valid_versions();
            assert!(codec.min <= *min && *max <= codec.max, "{key:?} {min}..{max} outside {codec}");
        }
    }
}
