//! Decoding a request frame: the header, then the body at the version the
//! header names. The first eight bytes of every request (API key, version,
//! correlation id) have one layout in every version, so even a request that
//! cannot be served can be answered.

use crate::versions;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

#[derive(Debug)]
pub struct Request {
    pub api_key: ApiKey,
    pub version: i16,
    pub header: RequestHeader,
    pub body: RequestKind,
}

impl Request {
    pub fn correlation_id(&self) -> i32 {
        self.header.correlation_id
    }

    pub fn client_id(&self) -> &str {
        self.header.client_id.as_ref().map(|s| s.as_str()).unwrap_or("")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("a request of {0} bytes is too short to hold a request header")]
    Truncated(usize),
    #[error("API key {api_key} is not one Queen knows")]
    UnknownApi { api_key: i16, version: i16, correlation_id: i32 },
    #[error("{api_key:?} v{version} is not served (see ApiVersions)")]
    UnsupportedVersion { api_key: ApiKey, version: i16, correlation_id: i32 },
    #[error("{api_key:?} v{version} does not decode: {reason}")]
    Malformed { api_key: ApiKey, version: i16, correlation_id: i32, reason: String },
}

impl DecodeError {
    /// The correlation id to answer with, when the frame carried one.
    pub fn correlation_id(&self) -> Option<i32> {
        match self {
            DecodeError::Truncated(_) => None,
            DecodeError::UnknownApi { correlation_id, .. }
            | DecodeError::UnsupportedVersion { correlation_id, .. }
            | DecodeError::Malformed { correlation_id, .. } => Some(*correlation_id),
        }
    }
}

/// Decodes one frame (without its size prefix).
pub fn decode(frame: Bytes) -> Result<Request, DecodeError> {
    if frame.len() < 8 {
        return Err(DecodeError::Truncated(frame.len()));
    }
    let mut fixed = &frame[..8];
    let raw_key = fixed.get_i16();
    let version = fixed.get_i16();
    let correlation_id = fixed.get_i32();
    let api_key =
        ApiKey::try_from(raw_key).map_err(|_| DecodeError::UnknownApi { api_key: raw_key, version, correlation_id })?;
    if !versions::is_supported(api_key, version) && !versions::is_refused(api_key, version) {
        return Err(DecodeError::UnsupportedVersion { api_key, version, correlation_id });
    }
    let malformed = |reason: String| DecodeError::Malformed { api_key, version, correlation_id, reason };
    let mut buf = frame;
    let header = RequestHeader::decode(&mut buf, api_key.request_header_version(version))
        .map_err(|e| malformed(format!("header: {e}")))?;
    let body = RequestKind::decode(api_key, &mut buf, version).map_err(|e| malformed(e.to_string()))?;
    Ok(Request { api_key, version, header, body })
}

/// Encodes a request as a client sends it, size prefix included: what the
/// suite's tests and benchmarks speak to a node.
pub fn encode(api_key: ApiKey, version: i16, correlation_id: i32, body: &RequestKind) -> Result<Bytes, String> {
    let header = RequestHeader::default()
        .with_request_api_key(api_key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("queen-test")));
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    header.encode(&mut buf, api_key.request_header_version(version)).map_err(|e| e.to_string())?;
    body.encode(&mut buf, version).map_err(|e| e.to_string())?;
    let size = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    Ok(buf.freeze())
}
