//! SaslHandshake: the client names its mechanism; the answer lists the
//! enabled ones. Version 1 announces SaslAuthenticate requests, version 0
//! bare tokens (Kafka before 1.0; librdkafka checks that v0 is offered
//! before it uses SASL at all). Without SASL configured every mechanism is
//! unsupported.

use crate::names::str_bytes;
use crate::sasl::Session;
use crate::{Broker, Facade};
use protocol::messages::{SaslHandshakeRequest, SaslHandshakeResponse};
use protocol::ResponseError;

pub fn handle<B: Broker>(
    f: &Facade<B>,
    req: SaslHandshakeRequest,
    version: i16,
    session: &mut Session,
) -> SaslHandshakeResponse {
    let Some(config) = &f.config.sasl else {
        return SaslHandshakeResponse::default().with_error_code(ResponseError::UnsupportedSaslMechanism.code());
    };
    let enabled = config.mechanisms.iter().map(|m| str_bytes(m.name())).collect();
    let code = if session.handshake(config, req.mechanism.as_str(), version) {
        0
    } else {
        ResponseError::UnsupportedSaslMechanism.code()
    };
    SaslHandshakeResponse::default().with_error_code(code).with_mechanisms(enabled)
}
