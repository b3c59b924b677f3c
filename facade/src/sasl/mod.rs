//! SASL authentication of Kafka connections, off unless mechanisms are
//! configured. PLAIN checks a password; SCRAM-SHA-256/512 (RFC 5802/7677)
//! proves it without sending it; OAUTHBEARER (RFC 7628) carries a bearer
//! token the node checks as its HTTP API does. SaslHandshake v1 is followed
//! by SaslAuthenticate requests; v0 (Kafka before 1.0) by the bare tokens,
//! each in a size-prefixed frame of its own. Until a connection has
//! authenticated, it may only ask ApiVersions and the two SASL APIs.

mod oauthbearer;
mod plain;
mod principal;
mod scram;

pub use principal::{Principal, Role, TokenVerifier};

use std::collections::HashMap;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    Plain,
    ScramSha256,
    ScramSha512,
    OAuthBearer,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
            Mechanism::ScramSha512 => "SCRAM-SHA-512",
            Mechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [Mechanism::Plain, Mechanism::ScramSha256, Mechanism::ScramSha512, Mechanism::OAuthBearer]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

/// The mechanisms offered, the users they accept and, for OAUTHBEARER, the
/// token checker.
#[derive(Clone)]
pub struct SaslConfig {
    pub mechanisms: Vec<Mechanism>,
    /// user → password, for PLAIN and SCRAM.
    pub users: HashMap<String, String>,
    /// Checks OAUTHBEARER tokens; set exactly when OAUTHBEARER is offered.
    pub tokens: Option<Arc<dyn TokenVerifier>>,
}

impl std::fmt::Debug for SaslConfig {
    /// Names the users, never their passwords.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslConfig")
            .field("mechanisms", &self.mechanisms)
            .field("users", &self.users.keys().collect::<Vec<_>>())
            .field("tokens", &self.tokens.is_some())
            .finish()
    }
}

/// One connection's authentication.
#[derive(Default)]
pub struct Session {
    mechanism: Option<Mechanism>,
    scram: Option<scram::Exchange>,
    /// SaslHandshake v0 chose the mechanism: its tokens follow as bare
    /// frames instead of SaslAuthenticate requests.
    bare_tokens: bool,
    principal: Option<Principal>,
}

/// What one authentication step answers: bytes for the client, or why it failed.
pub type Step = Result<Vec<u8>, String>;

impl Session {
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_ref()
    }

    pub fn authenticated(&self) -> bool {
        self.principal.is_some()
    }

    /// The credential ran out (a token's `exp`) at `now_ms`: the connection
    /// may do nothing more until it authenticates again (KIP-368).
    pub fn expired(&self, now_ms: i64) -> bool {
        self.principal.as_ref().and_then(|p| p.expires_at_ms).is_some_and(|at| at <= now_ms)
    }

    /// The next frame is a bare SASL token (after SaslHandshake v0), not a request.
    pub fn expects_bare_token(&self) -> bool {
        self.bare_tokens
    }

    /// SaslHandshake at `version`: picks the mechanism for the exchange that follows.
    pub fn handshake(&mut self, config: &SaslConfig, mechanism: &str, version: i16) -> bool {
        match Mechanism::parse(mechanism).filter(|m| config.mechanisms.contains(m)) {
            Some(m) => {
                self.mechanism = Some(m);
                self.scram = None;
                self.bare_tokens = version == 0;
                true
            }
            None => false,
        }
    }

    /// One step of the chosen mechanism. A failure leaves the connection
    /// unauthenticated, also one that was authenticating again.
    pub fn authenticate(&mut self, config: &SaslConfig, token: &[u8]) -> Step {
        let step = self.step(config, token);
        if step.is_err() {
            self.principal = None;
            self.mechanism = None;
            self.scram = None;
        }
        if step.is_err() || self.scram.is_none() {
            self.bare_tokens = false;
        }
        step
    }

    fn step(&mut self, config: &SaslConfig, token: &[u8]) -> Step {
        let Some(mechanism) = self.mechanism else {
            return Err("SaslAuthenticate before SaslHandshake".to_string());
        };
        match mechanism {
            Mechanism::Plain => {
                let user = plain::check(&config.users, token)?;
                self.principal = Some(Principal::user(user));
                Ok(vec![])
            }
            Mechanism::OAuthBearer => {
                let verifier = config.tokens.as_deref().ok_or("OAUTHBEARER is not offered")?;
                self.principal = Some(oauthbearer::authenticate(verifier, token)?);
                Ok(vec![])
            }
            Mechanism::ScramSha256 | Mechanism::ScramSha512 => match self.scram.take() {
                None => {
                    let (exchange, server_first) = scram::Exchange::start(mechanism, &config.users, token)?;
                    self.scram = Some(exchange);
                    Ok(server_first)
                }
                Some(exchange) => {
                    let (user, server_final) = exchange.finish(token)?;
                    self.principal = Some(Principal::user(user));
                    Ok(server_final)
                }
            },
        }
    }
}
