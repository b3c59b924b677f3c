//! SaslAuthenticate: one step of the mechanism the handshake chose. After a
//! SaslHandshake v0 the same steps arrive as bare tokens instead ([`bare`]).

use crate::names::str_bytes;
use crate::sasl::Session;
use crate::{Broker, Facade};
use protocol::messages::{SaslAuthenticateRequest, SaslAuthenticateResponse};
use protocol::ResponseError;
use std::time::{SystemTime, UNIX_EPOCH};

pub fn handle<B: Broker>(
    f: &Facade<B>,
    req: SaslAuthenticateRequest,
    session: &mut Session,
) -> SaslAuthenticateResponse {
    let Some(config) = &f.config.sasl else {
        return SaslAuthenticateResponse::default().with_error_code(ResponseError::IllegalSaslState.code());
    };
    match session.authenticate(config, &req.auth_bytes) {
        Ok(reply) => SaslAuthenticateResponse::default()
            .with_auth_bytes(reply.into())
            .with_session_lifetime_ms(session_lifetime_ms(session)),
        Err(why) => {
            tracing::warn!(reason = %why, "kafka SASL authentication failed");
            SaslAuthenticateResponse::default()
                .with_error_code(ResponseError::SaslAuthenticationFailed.code())
                .with_error_message(Some(str_bytes(&why)))
        }
    }
}

/// One step of a SaslHandshake v0 exchange: the bare token in, the bare
/// reply out. A failure has no place to travel but the closed connection,
/// as with a Kafka broker.
pub fn bare<B: Broker>(f: &Facade<B>, token: &[u8], session: &mut Session) -> Result<Vec<u8>, String> {
    let config = f.config.sasl.as_ref().ok_or("a SASL token with SASL off")?;
    session.authenticate(config, token)
}

/// KIP-368: how long the credential stays valid, so the client
/// authenticates again before it runs out; 0 for a password, which does
/// not run out.
fn session_lifetime_ms(session: &Session) -> i64 {
    let Some(expires_at) = session.principal().and_then(|p| p.expires_at_ms) else { return 0 };
    (expires_at - now_ms()).max(1)
}

pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}
