//! A stored message as a Kafka fetch reads it: the same two layouts as
//! [`Message`], decoded without copying, so its key, value and header values
//! are slices of the buffer its record was read into. A fetch then copies a
//! payload's bytes once, into its answer, where decoding a [`Message`] and
//! turning it into a record copied them twice more.

use crate::message::{Message, WHOLE_LAYOUT};
use bytes::Bytes;
use protocol::records::PlainRecord;
use serde::Deserialize;

pub struct MessageView {
    /// The transactionId's UTF-8.
    pub transaction_id: Bytes,
    /// The traceId's UTF-8.
    pub trace_id: Option<Bytes>,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<(String, Option<Bytes>)>,
    pub timestamp_ms: Option<i64>,
    /// The value is sealed; a reader opens it into a [`Message`] instead.
    pub encrypted: bool,
}

/// The layout without nulls, borrowed (`message.rs` has it as written).
#[derive(Deserialize)]
struct PlainLayout<'a> {
    transaction_id: &'a str,
    trace_id: Option<&'a str>,
    key: Option<&'a [u8]>,
    value: &'a [u8],
    #[serde(borrow)]
    headers: Vec<(&'a str, &'a [u8])>,
    timestamp_ms: Option<i64>,
    encrypted: bool,
}

/// The layout of the whole [`Message`], borrowed. The producer's identity
/// is not part of a record, but is read so the blob decodes to its end.
#[derive(Deserialize)]
struct WholeLayout<'a> {
    transaction_id: &'a str,
    trace_id: Option<&'a str>,
    key: Option<&'a [u8]>,
    value: Option<&'a [u8]>,
    #[serde(borrow)]
    headers: Vec<(&'a str, Option<&'a [u8]>)>,
    timestamp_ms: Option<i64>,
    encrypted: bool,
    _producer_sub: Option<&'a str>,
}

impl MessageView {
    pub fn decode(blob: &Bytes) -> Result<Self, bincode::Error> {
        let share = |b: &[u8]| blob.slice_ref(b);
        let header = |(k, v): (&str, Option<&[u8]>)| (k.to_string(), v.map(share));
        if let Some(whole) = blob.strip_prefix(&[WHOLE_LAYOUT]) {
            let m: WholeLayout = crate::codec::from_bytes(whole)?;
            return Ok(Self {
                transaction_id: share(m.transaction_id.as_bytes()),
                trace_id: m.trace_id.map(|t| share(t.as_bytes())),
                key: m.key.map(share),
                value: m.value.map(share),
                headers: m.headers.into_iter().map(header).collect(),
                timestamp_ms: m.timestamp_ms,
                encrypted: m.encrypted,
            });
        }
        let m: PlainLayout = crate::codec::from_bytes(blob)?;
        Ok(Self {
            transaction_id: share(m.transaction_id.as_bytes()),
            trace_id: m.trace_id.map(|t| share(t.as_bytes())),
            key: m.key.map(share),
            value: Some(share(m.value)),
            headers: m.headers.into_iter().map(|(k, v)| header((k, Some(v)))).collect(),
            timestamp_ms: m.timestamp_ms,
            encrypted: m.encrypted,
        })
    }
}

impl MessageView {
    /// A record of a stored Kafka batch, its bytes slices of the batch's
    /// decoded buffer.
    pub fn from_kafka(record: PlainRecord, transaction_id: String) -> Self {
        Self {
            transaction_id: transaction_id.into(),
            trace_id: None,
            key: record.key,
            value: record.value,
            headers: record.headers,
            timestamp_ms: Some(record.timestamp_ms),
            encrypted: false,
        }
    }
}

/// An opened sealed message, whose plaintext has no stored buffer to share.
impl From<Message> for MessageView {
    fn from(m: Message) -> Self {
        Self {
            transaction_id: m.transaction_id.into(),
            trace_id: m.trace_id.map(Bytes::from),
            key: m.key.map(Bytes::from),
            value: m.value.map(Bytes::from),
            headers: m.headers.into_iter().map(|(k, v)| (k, v.map(|v| Bytes::from(v.into_vec())))).collect(),
            timestamp_ms: m.timestamp_ms,
            encrypted: m.encrypted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_bytes::ByteBuf;

    fn both_ways(m: Message) {
        let blob = Bytes::from(m.encode());
        let view = MessageView::decode(&blob).unwrap();
        let whole = MessageView::from(Message::decode(&blob).unwrap());
        for v in [&view, &whole] {
            assert_eq!(v.transaction_id, m.transaction_id.as_bytes());
            assert_eq!(v.trace_id.as_deref(), m.trace_id.as_deref().map(str::as_bytes));
            assert_eq!(v.key.as_deref(), m.key.as_deref());
            assert_eq!(v.value.as_deref(), m.value.as_deref());
            assert_eq!(v.headers.len(), m.headers.len());
            for ((k, v), (mk, mv)) in v.headers.iter().zip(&m.headers) {
                assert_eq!((k, v.as_deref()), (mk, mv.as_deref().map(|b| &b[..])));
            }
            assert_eq!((v.timestamp_ms, v.encrypted), (m.timestamp_ms, m.encrypted));
        }
        let value = view.value.as_ref().filter(|v| !v.is_empty());
        assert!(
            value.is_none_or(|v| blob.as_ptr_range().contains(&v.as_ptr())),
            "the view's value is a slice of the blob, not a copy"
        );
    }

    #[test]
    fn reads_both_layouts_as_message_does() {
        let mut m = Message::new("tx-1".into(), b"{\"a\":1}".to_vec());
        both_ways(m.clone());
        m.key = Some(b"k".to_vec());
        m.trace_id = Some("trace".into());
        m.headers = vec![("h".into(), Some(ByteBuf::from(b"v".to_vec())))];
        m.timestamp_ms = Some(1_700_000_000_000);
        both_ways(m.clone());
        m.headers.push(("null".into(), None));
        both_ways(m.clone());
        m.value = None;
        m.producer_sub = Some("alice".into());
        both_ways(m);
    }

    #[test]
    fn a_cut_blob_is_an_error() {
        let blob = Bytes::from(Message::new("tx".into(), b"value".to_vec()).encode());
        for cut in 0..blob.len() {
            assert!(MessageView::decode(&blob.slice(..cut)).is_err());
        }
    }
}
