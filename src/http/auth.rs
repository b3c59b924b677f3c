//! The HTTP API's side of authentication: a bearer token checked by the
//! node's JWT checker (`jwt.rs`) before every route but `JWT_SKIP_PATHS`,
//! the role each route needs, and the token's `sub` handed to the handlers
//! that stamp it as `producerSub`.

use super::error::ApiError;
use crate::jwt::Role;
use crate::node::Node;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
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
        || path == "/api/v1/stats/refresh"
        || path.starts_with("/api/v1/system/");
    if administrative {
        return Role::Admin;
    }
    Role::ReadWrite
}

pub async fn authenticate(State(node): State<Arc<Node>>, mut request: Request, next: Next) -> Response {
    let Some(auth) = &node.auth else { return next.run(request).await };
    let path = request.uri().path();
    if auth.skips(path) {
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
