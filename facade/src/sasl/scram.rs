//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), server side. The
//! salted password is derived per exchange from the configured password
//! with a fresh salt, so no credential is stored beyond the configuration.

use super::Mechanism;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::{Digest, Sha256, Sha512};
use std::collections::HashMap;

const ITERATIONS: u32 = 4096;

pub struct Exchange {
    mechanism: Mechanism,
    user: String,
    salted_password: Vec<u8>,
    client_first_bare: String,
    server_first: String,
    nonce: String,
}

fn hmac(mechanism: Mechanism, key: &[u8], data: &[u8]) -> Vec<u8> {
    match mechanism {
        Mechanism::ScramSha512 => {
            let mut m = Hmac::<Sha512>::new_from_slice(key).expect("HMAC takes any key length");
            m.update(data);
            m.finalize().into_bytes().to_vec()
        }
        _ => {
            let mut m = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
            m.update(data);
            m.finalize().into_bytes().to_vec()
        }
    }
}

fn hash(mechanism: Mechanism, data: &[u8]) -> Vec<u8> {
    match mechanism {
        Mechanism::ScramSha512 => Sha512::digest(data).to_vec(),
        _ => Sha256::digest(data).to_vec(),
    }
}

fn salted(mechanism: Mechanism, password: &str, salt: &[u8]) -> Vec<u8> {
    match mechanism {
        Mechanism::ScramSha512 => {
            pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(password.as_bytes(), salt, ITERATIONS).to_vec()
        }
        _ => pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(password.as_bytes(), salt, ITERATIONS).to_vec(),
    }
}

pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The value of `key=` among a SCRAM message's comma-separated attributes.
fn attribute(message: &str, key: char) -> Option<&str> {
    message.split(',').find_map(|part| part.strip_prefix(key).and_then(|rest| rest.strip_prefix('=')))
}

/// SCRAM's `saslname`: `=2C` is a comma and `=3D` an equals sign.
fn unescape(name: &str) -> String {
    name.replace("=2C", ",").replace("=3D", "=")
}

impl Exchange {
    /// Takes the client-first message; answers the server-first message.
    pub fn start(
        mechanism: Mechanism,
        users: &HashMap<String, String>,
        token: &[u8],
    ) -> Result<(Exchange, Vec<u8>), String> {
        let text = std::str::from_utf8(token).map_err(|_| "the SCRAM message is not UTF-8".to_string())?;
        // gs2 header: "n,," (no channel binding, no authzid) or "y,,"; "p=" asks for binding we do not offer.
        let mut parts = text.splitn(3, ',');
        let (binding, _authzid, bare) = (parts.next(), parts.next(), parts.next());
        if !matches!(binding, Some("n") | Some("y")) {
            return Err("channel binding is not supported".to_string());
        }
        let bare = bare.ok_or("a malformed SCRAM client-first message")?.to_string();
        let user = unescape(attribute(&bare, 'n').ok_or("no user in the SCRAM message")?);
        let client_nonce = attribute(&bare, 'r').ok_or("no nonce in the SCRAM message")?;
        let password = users.get(&user).ok_or_else(|| format!("authentication failed for user {user:?}"))?;
        let mut salt = [0u8; 16];
        let mut server_nonce = [0u8; 18];
        rand::thread_rng().fill_bytes(&mut salt);
        rand::thread_rng().fill_bytes(&mut server_nonce);
        let nonce = format!("{client_nonce}{}", B64.encode(server_nonce));
        let server_first = format!("r={nonce},s={},i={ITERATIONS}", B64.encode(salt));
        let exchange = Exchange {
            mechanism,
            user,
            salted_password: salted(mechanism, password, &salt),
            client_first_bare: bare,
            server_first: server_first.clone(),
            nonce,
        };
        Ok((exchange, server_first.into_bytes()))
    }

    /// Takes the client-final message; checks the proof and answers the
    /// server-final message with the server's signature.
    pub fn finish(self, token: &[u8]) -> Result<(String, Vec<u8>), String> {
        let failed = || format!("authentication failed for user {:?}", self.user);
        let text = std::str::from_utf8(token).map_err(|_| "the SCRAM message is not UTF-8".to_string())?;
        let (without_proof, proof) = text.rsplit_once(",p=").ok_or("no proof in the SCRAM message")?;
        // RFC 5802 echoes the server's nonce; librdkafka 2.0 (Debian's kcat)
        // sends its own nonce in front of it again. Kafka accepts any nonce
        // that ends with the server's (whose fresh part is what matters),
        // and so does Queen.
        if !attribute(without_proof, 'r').is_some_and(|r| r.ends_with(self.nonce.as_str())) {
            return Err("the SCRAM nonce does not match".to_string());
        }
        let proof = B64.decode(proof).map_err(|_| failed())?;
        let auth_message = format!("{},{},{}", self.client_first_bare, self.server_first, without_proof);
        let m = self.mechanism;
        let client_key = hmac(m, &self.salted_password, b"Client Key");
        let stored_key = hash(m, &client_key);
        let signature = hmac(m, &stored_key, auth_message.as_bytes());
        if proof.len() != client_key.len() {
            return Err(failed());
        }
        let recovered: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
        if !constant_time_eq(&hash(m, &recovered), &stored_key) {
            return Err(failed());
        }
        let server_key = hmac(m, &self.salted_password, b"Server Key");
        let server_signature = hmac(m, &server_key, auth_message.as_bytes());
        Ok((self.user, format!("v={}", B64.encode(server_signature)).into_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client side of SCRAM, enough to check the server against it.
    fn client_final(m: Mechanism, password: &str, client_first_bare: &str, server_first: &str) -> (String, Vec<u8>) {
        let nonce = attribute(server_first, 'r').unwrap();
        let salt = B64.decode(attribute(server_first, 's').unwrap()).unwrap();
        let salted_password = salted(m, password, &salt);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        let client_key = hmac(m, &salted_password, b"Client Key");
        let signature = hmac(m, &hash(m, &client_key), auth_message.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&signature).map(|(k, s)| k ^ s).collect();
        let server_signature = hmac(m, &hmac(m, &salted_password, b"Server Key"), auth_message.as_bytes());
        (format!("{without_proof},p={}", B64.encode(proof)), server_signature)
    }

    #[test]
    fn a_client_with_the_password_proves_it_and_checks_the_server() {
        let users = HashMap::from([("alice".to_string(), "pencil".to_string())]);
        for m in [Mechanism::ScramSha256, Mechanism::ScramSha512] {
            let bare = "n=alice,r=fyko+d2lbbFgONRv9qkxdawL";
            let (exchange, server_first) = Exchange::start(m, &users, format!("n,,{bare}").as_bytes()).unwrap();
            let server_first = String::from_utf8(server_first).unwrap();
            let (final_message, expected) = client_final(m, "pencil", bare, &server_first);
            let (user, server_final) = exchange.finish(final_message.as_bytes()).unwrap();
            assert_eq!(user, "alice");
            assert_eq!(String::from_utf8(server_final).unwrap(), format!("v={}", B64.encode(expected)));

            let (exchange, server_first) = Exchange::start(m, &users, format!("n,,{bare}").as_bytes()).unwrap();
            let (wrong, _) = client_final(m, "not-pencil", bare, &String::from_utf8(server_first).unwrap());
            assert!(exchange.finish(wrong.as_bytes()).is_err());
        }
        assert!(Exchange::start(Mechanism::ScramSha256, &users, b"n,,n=bob,r=x").is_err());
    }
}
