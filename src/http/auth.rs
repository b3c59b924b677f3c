//! JWT authentication, configured as Queen's server is (`JWT_ENABLED`,
//! `JWT_ALGORITHM`, `JWT_SECRET`, `JWT_PUBLIC_KEY`, `JWT_ISSUER`,
//! `JWT_AUDIENCE`, `JWT_CLOCK_SKEW`, `JWT_SKIP_PATHS`), with roles from the
//! `role`/`roles` claims: `read-only` may read, `read-write` may also produce
//! and consume, `admin` may also delete and administer. The same checker
//! serves the Kafka listener's OAUTHBEARER ([`TokenVerifier`]), so a token
//! means the same on both ports.

use super::error::ApiError;
use crate::config::Settings;
use crate::node::Node;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
pub use facade::sasl::Role;
use facade::sasl::{Principal, TokenVerifier};
use jsonwebtoken::{decode, decode_header, Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use std::sync::Arc;

/// The validated token's `sub` claim, which a push stamps on each message
/// as `producerSub`; a request extension, present only when the token has one.
#[derive(Debug, Clone)]
pub struct ProducerSub(pub String);

impl ProducerSub {
    /// The identity a handler stamps: the token's, never one the body names.
    pub fn of(extension: Option<axum::Extension<ProducerSub>>) -> Option<String> {
        extension.map(|axum::Extension(ProducerSub(sub))| sub)
    }
}

pub struct Auth {
    keys: Vec<(Algorithm, DecodingKey)>,
    issuer: Option<String>,
    audience: Option<String>,
    leeway: u64,
    skip: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AuthConfigError {
    #[error("JWT_ENABLED=true with JWT_ALGORITHM={0}: that algorithm needs {1}")]
    MissingKey(String, &'static str),
    #[error("JWT_ALGORITHM={0} is not one of HS256, RS256, EdDSA, auto")]
    UnknownAlgorithm(String),
    #[error("JWT_PUBLIC_KEY is not a PEM {0} public key: {1}")]
    BadPublicKey(&'static str, jsonwebtoken::errors::Error),
}

impl Auth {
    /// The authenticator the settings ask for; none when JWT is off.
    pub fn from_settings(s: &Settings) -> Result<Option<Self>, AuthConfigError> {
        if !s.jwt_enabled {
            return Ok(None);
        }
        let alg = s.jwt_algorithm.as_str();
        let mut keys = Vec::new();
        let secret = s.jwt_secret.as_ref().map(|k| DecodingKey::from_secret(k.as_bytes()));
        let pem = s.jwt_public_key.as_ref().map(|p| p.replace("\\n", "\n"));
        match alg {
            "HS256" | "auto" => {
                if let Some(k) = secret {
                    keys.push((Algorithm::HS256, k));
                } else if alg == "HS256" {
                    return Err(AuthConfigError::MissingKey(alg.into(), "JWT_SECRET"));
                }
            }
            "RS256" | "EdDSA" => {}
            other => return Err(AuthConfigError::UnknownAlgorithm(other.into())),
        }
        if let Some(pem) = &pem {
            if matches!(alg, "RS256" | "auto") {
                match DecodingKey::from_rsa_pem(pem.as_bytes()) {
                    Ok(k) => keys.push((Algorithm::RS256, k)),
                    Err(e) if alg == "RS256" => return Err(AuthConfigError::BadPublicKey("RSA", e)),
                    Err(_) => {}
                }
            }
            if matches!(alg, "EdDSA" | "auto") {
                match DecodingKey::from_ed_pem(pem.as_bytes()) {
                    Ok(k) => keys.push((Algorithm::EdDSA, k)),
                    Err(e) if alg == "EdDSA" => return Err(AuthConfigError::BadPublicKey("Ed25519", e)),
                    Err(_) => {}
                }
            }
        } else if matches!(alg, "RS256" | "EdDSA") {
            return Err(AuthConfigError::MissingKey(alg.into(), "JWT_PUBLIC_KEY"));
        }
        if keys.is_empty() {
            return Err(AuthConfigError::MissingKey(alg.into(), "JWT_SECRET or JWT_PUBLIC_KEY"));
        }
        let skip = s.jwt_skip_paths.split(',').map(str::trim).filter(|p| !p.is_empty()).map(str::to_string).collect();
        Ok(Some(Self {
            keys,
            issuer: s.jwt_issuer.clone(),
            audience: s.jwt_audience.clone(),
            leeway: s.jwt_clock_skew,
            skip,
        }))
    }

    /// Who a bearer token authenticates and with which role, or why it
    /// authenticates no one.
    fn principal(&self, token: &str) -> Result<Principal, &'static str> {
        let header = decode_header(token).map_err(|_| "the token is not a JWT")?;
        let (alg, key) =
            self.keys.iter().find(|(a, _)| *a == header.alg).ok_or("the token's algorithm is not accepted")?;
        let mut v = Validation::new(*alg);
        v.leeway = self.leeway;
        v.validate_nbf = true;
        let mut required = vec!["exp"];
        match &self.audience {
            Some(a) => {
                v.set_audience(&[a]);
                required.push("aud");
            }
            None => v.validate_aud = false,
        }
        if let Some(i) = &self.issuer {
            v.set_issuer(&[i]);
            required.push("iss");
        }
        v.set_required_spec_claims(&required);
        let claims = decode::<Claims>(token, key, &v).map_err(|e| match e.kind() {
            jsonwebtoken::errors::ErrorKind::ExpiredSignature => "the token has expired",
            jsonwebtoken::errors::ErrorKind::InvalidIssuer => "the token's issuer is not accepted",
            jsonwebtoken::errors::ErrorKind::InvalidAudience => "the token's audience is not accepted",
            _ => "the token does not verify",
        })?;
        let Claims { sub, exp, role, roles } = claims.claims;
        let role = role
            .into_iter()
            .chain(roles.into_iter().flatten())
            .filter_map(|r| Role::parse(&r))
            .max()
            .ok_or("the token names no role (admin, read-write, read-only)")?;
        // Validation allows `leeway` seconds past exp; so does the session.
        let expires_at_ms = exp.saturating_add(self.leeway).saturating_mul(1000).min(i64::MAX as u64) as i64;
        Ok(Principal {
            name: sub.clone().unwrap_or_else(|| "a token without sub".to_string()),
            subject: sub,
            role,
            expires_at_ms: Some(expires_at_ms),
        })
    }
}

impl TokenVerifier for Auth {
    fn verify(&self, token: &str) -> Result<Principal, String> {
        self.principal(token).map_err(str::to_string)
    }
}

#[derive(Deserialize)]
struct Claims {
    sub: Option<String>,
    /// Required and checked by the validation; kept for the session's lifetime.
    exp: u64,
    role: Option<String>,
    roles: Option<Vec<String>>,
}

/// The least role a request needs.
pub fn required_role(method: &Method, path: &str) -> Role {
    let reads = ["/api/v1/fetch", "/api/v1/partitions/changed"];
    let pops = path.starts_with("/api/v1/pop") || path == "/api/v1/ephemeral/pop";
    if *method == Method::GET && !pops {
        return Role::ReadOnly;
    }
    if *method == Method::POST && reads.contains(&path) {
        return Role::ReadOnly;
    }
    let administrative = path.starts_with("/api/v1/resources/")
        || path.starts_with("/api/v1/consumer-groups")
        || path == "/api/v1/stats/refresh";
    if administrative {
        return Role::Admin;
    }
    Role::ReadWrite
}

pub async fn authenticate(State(node): State<Arc<Node>>, mut request: Request, next: Next) -> Response {
    let Some(auth) = &node.auth else { return next.run(request).await };
    let path = request.uri().path();
    if auth.skip.iter().any(|p| p == path) {
        return next.run(request).await;
    }
    let token = request.headers().get("authorization").and_then(|h| h.to_str().ok()).and_then(bearer_token);
    let principal = match token.map(|t| auth.principal(t)) {
        None => Err("a bearer token is required"),
        Some(p) => p,
    };
    match principal {
        Err(why) => ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", why).before_the_body(),
        Ok(p) if p.role < required_role(request.method(), path) => ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("the token's role may not {} {path}", request.method()),
        )
        .before_the_body(),
        Ok(p) => {
            if let Some(sub) = p.subject {
                request.extensions_mut().insert(ProducerSub(sub));
            }
            next.run(request).await
        }
    }
}

/// The token of an `Authorization: Bearer <token>` value; the scheme is
/// case-insensitive (RFC 7235 §2.1).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::bearer_token;

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        for header in ["Bearer abc", "bearer abc", "BEARER abc", "bEaReR  abc "] {
            assert_eq!(bearer_token(header), Some("abc"), "{header}");
        }
        for header in ["Basic abc", "Bearer", "Bearer ", "Bearerabc"] {
            assert_eq!(bearer_token(header), None, "{header}");
        }
    }
}
