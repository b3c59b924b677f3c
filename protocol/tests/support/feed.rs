//! What the fuzz target and the CI decoder test both do with arbitrary
//! bytes: cut frames, decode each as a request, and decode a produce's
//! records. Any panic or abort in here is a bug.

use bytes::BytesMut;
use protocol::messages::RequestKind;

pub fn feed(data: &[u8]) {
    let mut buf = BytesMut::from(data);
    while let Ok(Some(frame)) = protocol::frame::split_frame(&mut buf, 1 << 20) {
        let Ok(request) = protocol::request::decode(frame) else { continue };
        let RequestKind::Produce(p) = request.body else { continue };
        for part in p.topic_data.into_iter().flat_map(|t| t.partition_data) {
            if let Some(records) = part.records {
                let _ = protocol::records::decode_produced(records, &protocol::decompress::Allowance::new(1 << 24));
            }
        }
    }
}
