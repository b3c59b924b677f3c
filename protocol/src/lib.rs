//! Queen's Kafka wire codec, sans I/O: it turns bytes into requests and
//! answers into bytes, and never touches a socket, a clock or the store.
//!
//! - [`frame`] cuts size-prefixed frames out of a byte stream;
//! - [`request`] decodes a frame's header and body, and tells an unknown API
//!   or an unsupported version apart from a malformed frame;
//! - [`versions`] is the table of what Queen serves, and nothing else;
//! - [`response`] encodes an answer with the header its version wants;
//! - [`records`] converts RecordBatch v2 (any compression) to and from plain
//!   records that the broker stores as messages;
//! - [`markers`] builds a transaction's commit and abort markers and reads
//!   a batch header's transaction fields.
//!
//! The message types are those of the `kafka-protocol` crate, re-exported as
//! [`messages`].

pub mod chunks;
pub mod decompress;
pub mod frame;
pub mod markers;
pub mod records;
pub mod request;
pub mod response;
pub mod versions;

pub use kafka_protocol::messages;
pub use kafka_protocol::protocol::StrBytes;
pub use kafka_protocol::ResponseError;
