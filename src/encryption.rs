//! Encryption at rest for queues configured with `encryptionEnabled`: each
//! message's payload is sealed with AES-256-GCM under QUEEN_ENCRYPTION_KEY
//! before it reaches the qlog, with a fresh 96-bit nonce and the message's
//! transactionId as associated data (a sealed payload moved onto another
//! message fails to open). The reader opens it at the one point every front
//! end reads through, so pops, fetches and Kafka consumers see plaintext and
//! the disk never does.

use crate::message::Message;
use crate::state_view::StateView;
use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use std::collections::HashMap;

const NONCE_BYTES: usize = 12;

#[derive(Debug, thiserror::Error)]
pub enum EncryptionError {
    #[error("QUEEN_ENCRYPTION_KEY must be 64 hexadecimal characters (32 bytes), {0}")]
    BadKey(&'static str),
    #[error("a sealed payload does not open: wrong QUEEN_ENCRYPTION_KEY, or the bytes were altered")]
    DoesNotOpen,
    #[error("the queue is configured with encryptionEnabled and QUEEN_ENCRYPTION_KEY is not set")]
    NoKey,
}

pub struct Cipher(Aes256Gcm);

/// Seals the messages of one request for the queues that want it, looking
/// each queue's setting up once.
/// It is given where each queue's applied state is (its raft group's view)
/// and the cipher, not the node, so that encryption sits below the node and
/// the reader.
pub struct Sealer<'a> {
    view_of: Box<dyn Fn(&str) -> &'a StateView + Send + 'a>,
    cipher: Option<&'a Cipher>,
    encrypted: HashMap<String, bool>,
}

impl<'a> Sealer<'a> {
    pub fn new(view_of: impl Fn(&str) -> &'a StateView + Send + 'a, cipher: Option<&'a Cipher>) -> Self {
        Self { view_of: Box::new(view_of), cipher, encrypted: HashMap::new() }
    }

    /// Whether `queue` is configured with encryptionEnabled.
    pub fn seals(&mut self, queue: &str) -> bool {
        *self.encrypted.entry(queue.to_string()).or_insert_with(|| {
            let store = (self.view_of)(queue).local();
            store.queue_id(queue).is_some_and(|q| store.traits(q).encrypted)
        })
    }

    /// Seals `message` if `queue` is configured with encryptionEnabled.
    pub fn seal(&mut self, queue: &str, message: &mut Message) -> Result<(), EncryptionError> {
        if self.seals(queue) {
            self.cipher.ok_or(EncryptionError::NoKey)?.seal(message);
        }
        Ok(())
    }
}

impl Cipher {
    pub fn from_hex(text: &str) -> Result<Self, EncryptionError> {
        let bytes = hex::decode(text.trim()).map_err(|_| EncryptionError::BadKey("not hexadecimal"))?;
        if bytes.len() != 32 {
            return Err(EncryptionError::BadKey("not 32 bytes"));
        }
        Ok(Self(Aes256Gcm::new_from_slice(&bytes).expect("a 32-byte key")))
    }

    /// Seals the message's payload in place. A null value (a Kafka
    /// tombstone) has nothing to hide and stays null, unsealed.
    pub fn seal(&self, message: &mut Message) {
        let Some(plain) = &message.value else { return };
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let payload = Payload { msg: plain, aad: message.transaction_id.as_bytes() };
        let sealed = self.0.encrypt(&nonce, payload).expect("AES-GCM seals any payload");
        let mut value = nonce.to_vec();
        value.extend_from_slice(&sealed);
        message.value = Some(value);
        message.encrypted = true;
    }

    /// Opens a sealed payload in place.
    pub fn open(&self, message: &mut Message) -> Result<(), EncryptionError> {
        let sealed = message.value.as_deref().unwrap_or_default();
        if sealed.len() < NONCE_BYTES {
            return Err(EncryptionError::DoesNotOpen);
        }
        let (nonce, sealed) = sealed.split_at(NONCE_BYTES);
        let payload = Payload { msg: sealed, aad: message.transaction_id.as_bytes() };
        let plain = self.0.decrypt(Nonce::from_slice(nonce), payload).map_err(|_| EncryptionError::DoesNotOpen)?;
        message.value = Some(plain);
        message.encrypted = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(value: &[u8]) -> Message {
        Message::new("t1".into(), value.to_vec())
    }

    #[test]
    fn sealed_payloads_open_only_with_the_key_and_on_their_own_message() {
        let cipher = Cipher::from_hex(&"ab".repeat(32)).unwrap();
        let mut m = message(b"{\"card\":\"4111\"}");
        cipher.seal(&mut m);
        assert!(m.encrypted && !m.value_bytes().windows(4).any(|w| w == b"4111"));
        let mut moved = Message { transaction_id: "t2".into(), ..m.clone() };
        cipher.open(&mut m).unwrap();
        assert_eq!(m.value_bytes(), b"{\"card\":\"4111\"}");
        assert!(cipher.open(&mut moved).is_err(), "the transactionId is bound to the payload");
        let other = Cipher::from_hex(&"cd".repeat(32)).unwrap();
        let mut again = message(b"x");
        cipher.seal(&mut again);
        assert!(other.open(&mut again).is_err());
        assert!(Cipher::from_hex("abc").is_err() && Cipher::from_hex(&"zz".repeat(32)).is_err());
    }
}
