//! SASL PLAIN (RFC 4616): `[authzid] NUL authcid NUL password`.

use std::collections::HashMap;

/// The authenticated user, or why not.
pub fn check(users: &HashMap<String, String>, token: &[u8]) -> Result<String, String> {
    let text = std::str::from_utf8(token).map_err(|_| "the PLAIN token is not UTF-8".to_string())?;
    let parts: Vec<&str> = text.split('\0').collect();
    let [authzid, user, password] = parts.as_slice() else {
        return Err("the PLAIN token is not authzid NUL user NUL password".to_string());
    };
    if !authzid.is_empty() && authzid != user {
        return Err(format!("user {user:?} may not act as {authzid:?}"));
    }
    match users.get(*user) {
        Some(expected) if super::scram::constant_time_eq(expected.as_bytes(), password.as_bytes()) => {
            Ok(user.to_string())
        }
        _ => Err(format!("authentication failed for user {user:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_accepts_the_right_password_only() {
        let users = HashMap::from([("alice".to_string(), "secret".to_string())]);
        assert_eq!(check(&users, b"\0alice\0secret"), Ok("alice".to_string()));
        assert!(check(&users, b"\0alice\0wrong").is_err());
        assert!(check(&users, b"\0bob\0secret").is_err());
        assert!(check(&users, b"mallory\0alice\0secret").is_err());
        assert!(check(&users, b"garbage").is_err());
    }
}
