//! SASL OAUTHBEARER (RFC 7628), server side: the client's one message
//! carries a bearer token, `n,,\x01auth=Bearer <token>\x01\x01`, which the
//! node's [`TokenVerifier`] checks as the HTTP API checks its tokens. A
//! refused token answers the failure at once rather than RFC 7628's JSON
//! challenge: Kafka clients read SaslAuthenticate's error code and message.

use super::principal::{Principal, TokenVerifier};

const SEPARATOR: char = '\x01';

/// The bearer token of a client's initial response.
fn token(message: &[u8]) -> Result<&str, String> {
    let text = std::str::from_utf8(message).map_err(|_| "the OAUTHBEARER message is not UTF-8".to_string())?;
    let (gs2_header, pairs) =
        text.split_once(SEPARATOR).ok_or("the OAUTHBEARER message is not gs2-header \\x01 key=value pairs")?;
    if !(gs2_header.starts_with("n,") || gs2_header.starts_with("y,")) {
        return Err("channel binding is not supported".to_string());
    }
    let auth = pairs
        .split(SEPARATOR)
        .find_map(|pair| pair.strip_prefix("auth="))
        .ok_or("the OAUTHBEARER message has no auth= value")?;
    let (scheme, token) = auth.split_once(' ').ok_or("the OAUTHBEARER auth value is not `Bearer <token>`")?;
    // The scheme is case-insensitive (RFC 7235 §2.1, which RFC 7628 follows).
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err("the OAUTHBEARER auth value is not `Bearer <token>`".to_string());
    }
    Ok(token.trim())
}

/// The principal a client's initial response authenticates.
pub fn authenticate(verifier: &dyn TokenVerifier, message: &[u8]) -> Result<Principal, String> {
    verifier.verify(token(message)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_read_from_the_auth_pair_whatever_the_scheme_case() {
        assert_eq!(token(b"n,,\x01auth=Bearer abc.def.ghi\x01\x01"), Ok("abc.def.ghi"));
        assert_eq!(token(b"n,a=me,\x01host=x\x01auth=bearer t\x01\x01"), Ok("t"));
        assert!(token(b"n,,\x01auth=Basic dXNlcg==\x01\x01").is_err());
        assert!(token(b"p=tls-unique,,\x01auth=Bearer t\x01\x01").is_err());
        assert!(token(b"n,,\x01\x01").is_err());
        assert!(token(b"garbage").is_err());
    }
}
