//! JWT authentication, configured as Queen's server is (`JWT_ENABLED`,
//! `JWT_ALGORITHM`, `JWT_SECRET`, `JWT_PUBLIC_KEY`, `JWT_ISSUER`,
//! `JWT_AUDIENCE`, `JWT_CLOCK_SKEW`, `JWT_SKIP_PATHS`), with roles from the
//! `role`/`roles` claims: `read-only` may read, `read-write` may also produce
//! and consume, `admin` may also delete and administer. One checker for both
//! front ends: the HTTP API's bearer tokens (`http/auth.rs`) and the Kafka
//! listener's OAUTHBEARER ([`TokenVerifier`]), so a token means the same on
//! both ports.

use crate::config::Settings;
pub use facade::sasl::Role;
use facade::sasl::{Principal, TokenVerifier};
use jsonwebtoken::{decode, decode_header, Algorithm, DecodingKey, Validation};
use serde::Deserialize;

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
    pub fn principal(&self, token: &str) -> Result<Principal, &'static str> {
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

impl Auth {
    /// Whether `path` is served without a token (`JWT_SKIP_PATHS`).
    pub fn skips(&self, path: &str) -> bool {
        self.skip.iter().any(|p| p == path)
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
