//! Any bytes a client may send: cut into frames and decoded as requests, and
//! a produce's records decoded too. Nothing may panic or hang; every frame
//! ends as a request or a named decode error.

use bytes::BytesMut;
use protocol::messages::RequestKind;

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let mut buf = BytesMut::from(data);
        while let Ok(Some(frame)) = protocol::frame::split_frame(&mut buf, 1 << 20) {
            if let Ok(request) = protocol::request::decode(frame) {
                if let RequestKind::Produce(p) = request.body {
                    for t in p.topic_data {
                        for part in t.partition_data {
                            if let Some(records) = part.records {
                                let _ = protocol::records::decode_produced(records, 1 << 24);
                            }
                        }
                    }
                }
            }
        }
    });
}
