//! Which listeners serve TLS, from the settings: both share one certificate
//! and key (QUEEN_TLS_CERT, QUEEN_TLS_KEY) and one optional client CA
//! (QUEEN_TLS_CLIENT_CA); QUEEN_KAFKA_TLS and QUEEN_HTTP_TLS turn each on.
//! A certificate set with neither on is refused rather than ignored, so no
//! one believes a plain listener encrypted.

use crate::config::Settings;
use facade::tls::{acceptor, TlsAcceptor, TlsFiles};

/// The acceptors of the Kafka and the HTTP listener (none: plain TCP).
pub struct Listeners {
    pub kafka: Option<TlsAcceptor>,
    pub http: Option<TlsAcceptor>,
}

/// The listeners' TLS, or why the settings cannot give it, for a FATAL line.
pub fn listeners(s: &Settings) -> Result<Listeners, String> {
    let any_on = s.kafka_tls || s.http_tls;
    let files = match (&s.tls_cert, &s.tls_key) {
        (Some(cert), Some(key)) => {
            TlsFiles { cert: cert.clone(), key: key.clone(), client_ca: s.tls_client_ca.clone() }
        }
        (None, None) if !any_on && s.tls_client_ca.is_none() => return Ok(Listeners { kafka: None, http: None }),
        (None, None) if !any_on => return Err("QUEEN_TLS_CLIENT_CA is set but no listener serves TLS".to_string()),
        (None, None) => {
            return Err(
                "QUEEN_KAFKA_TLS or QUEEN_HTTP_TLS is on but QUEEN_TLS_CERT and QUEEN_TLS_KEY are not set".to_string()
            )
        }
        (Some(_), None) => return Err("QUEEN_TLS_CERT is set without QUEEN_TLS_KEY".to_string()),
        (None, Some(_)) => return Err("QUEEN_TLS_KEY is set without QUEEN_TLS_CERT".to_string()),
    };
    if !any_on {
        return Err("QUEEN_TLS_CERT is set but neither QUEEN_KAFKA_TLS nor QUEEN_HTTP_TLS is on".to_string());
    }
    let build = |alpn: &[&[u8]]| acceptor(&files, alpn).map_err(|e| format!("TLS settings: {e}"));
    Ok(Listeners {
        kafka: s.kafka_tls.then(|| build(&[])).transpose()?,
        // The HTTP API speaks HTTP/1.1 only.
        http: s.http_tls.then(|| build(&[b"http/1.1"])).transpose()?,
    })
}
