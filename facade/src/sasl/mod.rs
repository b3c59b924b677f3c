//! SASL authentication of Kafka connections (SaslHandshake v1, then
//! SaslAuthenticate), off unless mechanisms are configured. PLAIN checks a
//! password; SCRAM-SHA-256/512 (RFC 5802/7677) proves it without sending it.
//! Until a connection has authenticated, it may only ask ApiVersions and
//! the two SASL APIs.

mod plain;
mod scram;

use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    Plain,
    ScramSha256,
    ScramSha512,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
            Mechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [Mechanism::Plain, Mechanism::ScramSha256, Mechanism::ScramSha512].into_iter().find(|m| m.name() == name)
    }
}

/// The mechanisms offered and the users they accept.
#[derive(Debug, Clone)]
pub struct SaslConfig {
    pub mechanisms: Vec<Mechanism>,
    /// user → password.
    pub users: HashMap<String, String>,
}

/// One connection's authentication.
#[derive(Default)]
pub struct Session {
    mechanism: Option<Mechanism>,
    scram: Option<scram::Exchange>,
    pub user: Option<String>,
}

/// What one SaslAuthenticate step answers: bytes for the client, or why it failed.
pub type Step = Result<Vec<u8>, String>;

impl Session {
    pub fn authenticated(&self) -> bool {
        self.user.is_some()
    }

    /// SaslHandshake: picks the mechanism for the exchange that follows.
    pub fn handshake(&mut self, config: &SaslConfig, mechanism: &str) -> bool {
        match Mechanism::parse(mechanism).filter(|m| config.mechanisms.contains(m)) {
            Some(m) => {
                self.mechanism = Some(m);
                self.scram = None;
                true
            }
            None => false,
        }
    }

    /// SaslAuthenticate: one step of the chosen mechanism.
    pub fn authenticate(&mut self, config: &SaslConfig, token: &[u8]) -> Step {
        let Some(mechanism) = self.mechanism else {
            return Err("SaslAuthenticate before SaslHandshake".to_string());
        };
        match mechanism {
            Mechanism::Plain => {
                let user = plain::check(&config.users, token)?;
                self.user = Some(user);
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
                    self.user = Some(user);
                    Ok(server_final)
                }
            },
        }
    }
}
