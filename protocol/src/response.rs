//! Encoding an answer: size prefix, the response header at the version the
//! API wants, then the body.

use crate::chunks::{Chunks, SHARED_MIN_BYTES};
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersionsResponse;
use kafka_protocol::messages::{ApiKey, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::{Decodable, Encodable};
use kafka_protocol::ResponseError;

#[derive(Debug, thiserror::Error)]
#[error("{api_key:?} v{version} response does not encode: {reason}")]
pub struct EncodeError {
    pub api_key: ApiKey,
    pub version: i16,
    pub reason: String,
}

/// One whole response frame, size prefix included.
pub fn encode(correlation_id: i32, api_key: ApiKey, version: i16, body: &ResponseKind) -> Result<Bytes, EncodeError> {
    let failed = |e: anyhow::Error| EncodeError { api_key, version, reason: e.to_string() };
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    let header_version = api_key.response_header_version(version);
    // A fetch or share fetch answer, which runs to megabytes, is `encode_chunks`'s.
    let mut buf = BytesMut::with_capacity(4 + header.compute_size(header_version).map_err(failed)? + 64);
    buf.put_i32(0);
    header.encode(&mut buf, header_version).map_err(failed)?;
    body.encode(&mut buf, version).map_err(failed)?;
    let size = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    Ok(buf.freeze())
}

/// One whole response frame, size prefix included, as chunks to write in
/// order: the record sets of [`SHARED_MIN_BYTES`] or more of a fetch or a
/// share fetch answer are chunks of their own, the buffers the answer holds,
/// not copies (the connection replaces a file's stand-in by its range only
/// where it is such a chunk). Any other answer is one chunk.
pub fn encode_chunks(
    correlation_id: i32,
    api_key: ApiKey,
    version: i16,
    body: &ResponseKind,
) -> Result<Vec<Bytes>, EncodeError> {
    match body {
        ResponseKind::Fetch(fetch) => {
            let records = fetch.responses.iter().flat_map(|t| &t.partitions).map(|p| &p.records);
            chunked(correlation_id, api_key, version, fetch, large(records))
        }
        ResponseKind::ShareFetch(fetch) => {
            let records = fetch.responses.iter().flat_map(|t| &t.partitions).map(|p| &p.records);
            chunked(correlation_id, api_key, version, fetch, large(records))
        }
        _ => encode(correlation_id, api_key, version, body).map(|frame| vec![frame]),
    }
}

/// The record sets worth a chunk of their own.
fn large<'a>(records: impl Iterator<Item = &'a Option<Bytes>>) -> Vec<Bytes> {
    records.filter_map(|r| r.clone()).filter(|r| r.len() >= SHARED_MIN_BYTES).collect()
}

/// `body`'s frame as chunks, each of `shared` one of its own.
fn chunked<M: Encodable>(
    correlation_id: i32,
    api_key: ApiKey,
    version: i16,
    body: &M,
    shared: Vec<Bytes>,
) -> Result<Vec<Bytes>, EncodeError> {
    let failed = |e: anyhow::Error| EncodeError { api_key, version, reason: e.to_string() };
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    let header_version = api_key.response_header_version(version);
    let size = header.compute_size(header_version).map_err(failed)? + body.compute_size(version).map_err(failed)?;
    let size_prefix =
        i32::try_from(size).map_err(|_| failed(anyhow::anyhow!("{size} bytes is over a frame's size")))?;
    let mut buf = Chunks::new(&shared, 4 + size - shared.iter().map(Bytes::len).sum::<usize>());
    buf.put_i32(size_prefix);
    header.encode(&mut buf, header_version).map_err(failed)?;
    body.encode(&mut buf, version).map_err(failed)?;
    Ok(buf.finish())
}

/// The answer to an ApiVersions request at a version Queen does not serve:
/// version 0's layout, error 35 and the supported table, so that the client
/// retries at a version both sides know.
pub fn unsupported_api_versions(correlation_id: i32) -> Bytes {
    let body = ApiVersionsResponse::default()
        .with_error_code(ResponseError::UnsupportedVersion.code())
        .with_api_keys(crate::versions::api_versions());
    encode(correlation_id, ApiKey::ApiVersions, 0, &ResponseKind::ApiVersions(body))
        .expect("an ApiVersions v0 response always encodes")
}

/// Decodes a response frame (without its size prefix) as a client reads it:
/// its correlation id and body.
pub fn decode(api_key: ApiKey, version: i16, mut frame: Bytes) -> Result<(i32, ResponseKind), String> {
    let header =
        ResponseHeader::decode(&mut frame, api_key.response_header_version(version)).map_err(|e| e.to_string())?;
    let body = ResponseKind::decode(api_key, &mut frame, version).map_err(|e| e.to_string())?;
    Ok((header.correlation_id, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::share_fetch_response::{PartitionData, ShareFetchableTopicResponse};
    use kafka_protocol::messages::ShareFetchResponse;

    #[test]
    fn a_share_fetch_answers_large_record_sets_are_chunks_of_their_own() {
        // The connection splices a stored file's range in where its stand-in
        // is a chunk of its own: a share fetch answer copied whole lost it,
        // and every share fetch of 16 KiB of records closed the connection.
        let records = Bytes::from(vec![7u8; SHARED_MIN_BYTES]);
        let partition = PartitionData::default().with_records(Some(records.clone()));
        let topic = ShareFetchableTopicResponse::default().with_partitions(vec![partition]);
        let body = ResponseKind::ShareFetch(ShareFetchResponse::default().with_responses(vec![topic]));
        let chunks = encode_chunks(9, ApiKey::ShareFetch, 1, &body).unwrap();
        assert!(chunks.iter().any(|c| c.as_ptr() == records.as_ptr() && c.len() == records.len()));
        assert_eq!(chunks.concat(), encode(9, ApiKey::ShareFetch, 1, &body).unwrap().to_vec());
    }
}
