//! SaslAuthenticate: one step of the mechanism the handshake chose.

use crate::names::str_bytes;
use crate::sasl::Session;
use crate::{Broker, Facade};
use protocol::messages::{SaslAuthenticateRequest, SaslAuthenticateResponse};
use protocol::ResponseError;

pub fn handle<B: Broker>(
    f: &Facade<B>,
    req: SaslAuthenticateRequest,
    session: &mut Session,
) -> SaslAuthenticateResponse {
    let Some(config) = &f.config.sasl else {
        return SaslAuthenticateResponse::default().with_error_code(ResponseError::IllegalSaslState.code());
    };
    match session.authenticate(config, &req.auth_bytes) {
        Ok(reply) => SaslAuthenticateResponse::default().with_auth_bytes(reply.into()),
        Err(why) => {
            tracing::warn!(reason = %why, "kafka SASL authentication failed");
            SaslAuthenticateResponse::default()
                .with_error_code(ResponseError::SaslAuthenticationFailed.code())
                .with_error_message(Some(str_bytes(&why)))
        }
    }
}
