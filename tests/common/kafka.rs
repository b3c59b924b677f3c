//! A minimal Kafka client over the `protocol` crate's codec, for tests that
//! need exact bytes on the wire (bad frames, chosen producer ids and
//! sequences) that a real client library would never send.

use bytes::{Bytes, BytesMut};
use protocol::messages::{ApiKey, RequestKind, ResponseKind};
use protocol::records::{encode_produced, Compression, PlainRecord, ProducedBatch};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// A byte stream to the node: plain TCP or TLS.
pub trait Duplex: AsyncRead + AsyncWrite + Unpin + Send {}
impl<S: AsyncRead + AsyncWrite + Unpin + Send> Duplex for S {}

pub struct KafkaConn {
    stream: Box<dyn Duplex>,
    buf: BytesMut,
    next_correlation: i32,
}

impl KafkaConn {
    pub async fn connect(port: u16) -> KafkaConn {
        let stream = TcpStream::connect(("127.0.0.1", port)).await.expect("connect to the Kafka listener");
        KafkaConn::over(stream)
    }

    /// A connection over a stream already open (a TLS session).
    pub fn over(stream: impl Duplex + 'static) -> KafkaConn {
        KafkaConn { stream: Box::new(stream), buf: BytesMut::new(), next_correlation: 1 }
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write a request");
    }

    /// The next response frame, or None once the node closed the connection.
    pub async fn read_frame(&mut self) -> Option<Bytes> {
        loop {
            if let Ok(Some(frame)) = protocol::frame::split_frame(&mut self.buf, usize::MAX >> 1) {
                return Some(frame);
            }
            match self.stream.read_buf(&mut self.buf).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    }

    pub async fn call(&mut self, api_key: ApiKey, version: i16, body: RequestKind) -> ResponseKind {
        let correlation = self.next_correlation;
        self.next_correlation += 1;
        let bytes = protocol::request::encode(api_key, version, correlation, &body).expect("encode a request");
        self.send_raw(&bytes).await;
        let frame = self.read_frame().await.expect("an answer before the connection closed");
        let (got, answer) = protocol::response::decode(api_key, version, frame).expect("decode the answer");
        assert_eq!(got, correlation, "answers come in request order");
        answer
    }
}

/// Record-batch bytes for `values`, as a producer with (id, epoch, base
/// sequence) sends them; id -1 for a producer without idempotence.
pub fn batch(producer_id: i64, epoch: i16, base_sequence: i32, values: &[String]) -> Bytes {
    let records = values
        .iter()
        .map(|v| PlainRecord { timestamp_ms: 1, key: None, value: Some(Bytes::from(v.clone())), headers: vec![] })
        .collect();
    let batch = ProducedBatch { producer_id, producer_epoch: epoch, base_sequence, transactional: false, records };
    encode_produced(&batch, Compression::None).expect("encode a batch")
}
