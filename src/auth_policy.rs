//! One authentication policy for both front ends. `JWT_ENABLED=true`
//! protects HTTP with bearer tokens and Kafka with the same tokens over SASL
//! OAUTHBEARER; `QUEEN_KAFKA_SASL_MECHANISMS` adds password mechanisms to
//! Kafka. A node that protects one front end and leaves the other open
//! refuses to start, unless the open one is named on purpose
//! (`QUEEN_HTTP_AUTH=open`, `QUEEN_KAFKA_AUTH=open`): a second door left
//! open by accident is the failure this guards against.

use crate::config::{OpenOnPurpose, Settings};

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("the Kafka listener requires SASL ({0}) while HTTP is open (JWT_ENABLED=false): set JWT_ENABLED=true to protect HTTP as well, or QUEEN_HTTP_AUTH=open to serve HTTP open on purpose")]
    HttpLeftOpen(String),
    #[error("QUEEN_HTTP_AUTH=open contradicts JWT_ENABLED=true: HTTP cannot be both open and protected")]
    HttpOpenWithJwt,
    #[error(
        "QUEEN_KAFKA_AUTH=open contradicts QUEEN_KAFKA_SASL_MECHANISMS={0:?}: Kafka cannot be both open and protected"
    )]
    KafkaOpenWithSasl(String),
}

/// How each listener authenticates, as the boot log states it.
#[derive(Debug)]
pub struct Policy {
    pub http: String,
    pub kafka: String,
}

/// The mechanisms `QUEEN_KAFKA_SASL_MECHANISMS` names.
pub fn named_mechanisms(s: &Settings) -> Vec<&str> {
    s.kafka_sasl_mechanisms.split(',').map(str::trim).filter(|m| !m.is_empty()).collect()
}

impl Policy {
    pub fn of(s: &Settings) -> Result<Self, PolicyError> {
        let named = named_mechanisms(s);
        let http_open_on_purpose = s.http_auth == Some(OpenOnPurpose::Open);
        let kafka_open_on_purpose = s.kafka_auth == Some(OpenOnPurpose::Open);
        if http_open_on_purpose && s.jwt_enabled {
            return Err(PolicyError::HttpOpenWithJwt);
        }
        if kafka_open_on_purpose && !named.is_empty() {
            return Err(PolicyError::KafkaOpenWithSasl(s.kafka_sasl_mechanisms.clone()));
        }
        if !s.jwt_enabled && !named.is_empty() && !http_open_on_purpose {
            return Err(PolicyError::HttpLeftOpen(format!("QUEEN_KAFKA_SASL_MECHANISMS={}", named.join(","))));
        }
        let http = match (s.jwt_enabled, http_open_on_purpose) {
            (true, _) => "JWT bearer tokens (JWT_ENABLED=true), roles read-only < read-write < admin".to_string(),
            (false, true) => "none, open on purpose (QUEEN_HTTP_AUTH=open)".to_string(),
            (false, false) => "none (JWT_ENABLED=false)".to_string(),
        };
        let mut mechanisms = named.iter().map(|m| m.to_string()).collect::<Vec<_>>();
        if s.jwt_enabled && !kafka_open_on_purpose && !named.contains(&"OAUTHBEARER") {
            mechanisms.push("OAUTHBEARER".to_string());
        }
        let kafka = if kafka_open_on_purpose {
            "none, open on purpose (QUEEN_KAFKA_AUTH=open)".to_string()
        } else if mechanisms.is_empty() {
            "none (JWT_ENABLED=false, QUEEN_KAFKA_SASL_MECHANISMS empty)".to_string()
        } else if s.jwt_enabled {
            format!("SASL {}, required; OAUTHBEARER takes the HTTP API's JWTs and roles", mechanisms.join(", "))
        } else {
            format!("SASL {}, required", mechanisms.join(", "))
        };
        Ok(Self { http, kafka })
    }

    /// One line per listener.
    pub fn log(&self) {
        tracing::info!("HTTP listener authentication: {}", self.http);
        tracing::info!("Kafka listener authentication: {}", self.kafka);
    }
}
