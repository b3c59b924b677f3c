//! Share sessions (KIP-932): what a share group member fetches from this
//! broker, by (group, member), so a ShareFetch names only the partitions
//! that changed. Epoch 0 opens a session (replacing one the member had),
//! each later request carries the epoch the last one left, and -1 closes
//! it. ShareFetch and ShareAcknowledge share the epoch. A session belongs
//! to the connection that opened it: when that connection closes, the
//! session ends with it, as in Kafka's share session cache, and the caller
//! gives back the member's records. Kept in memory: a broker that restarts
//! answers SHARE_SESSION_NOT_FOUND and the member opens a new one.

use protocol::ResponseError;
use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

/// A topic id and partition.
pub type SharePartition = ([u8; 16], i32);

/// A client connection, numbered by the listener (`connection.rs`).
pub type ConnectionId = u64;

/// Kafka's `group.share.max.share.sessions`.
const MAX_SESSIONS: usize = 2000;

struct Session {
    epoch: i32,
    partitions: BTreeSet<SharePartition>,
    /// The connection that opened the session.
    connection: ConnectionId,
}

#[derive(Default)]
pub struct ShareSessions {
    sessions: Mutex<HashMap<(String, String), Session>>,
}

fn next(epoch: i32) -> i32 {
    if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

impl ShareSessions {
    /// A ShareFetch's step of the member's session: epoch 0 opens it with
    /// `add` on `connection`, a later epoch adds `add` and drops `forget`,
    /// -1 closes it. Answers the partitions the session fetches now.
    pub fn fetch(
        &self,
        key: (String, String),
        epoch: i32,
        add: &[SharePartition],
        forget: &[SharePartition],
        connection: ConnectionId,
    ) -> Result<Vec<SharePartition>, ResponseError> {
        let mut sessions = self.sessions.lock().expect("share sessions lock");
        match epoch {
            -1 => {
                sessions.remove(&key);
                Ok(Vec::new())
            }
            0 => {
                if !sessions.contains_key(&key) && sessions.len() >= MAX_SESSIONS {
                    return Err(ResponseError::ShareSessionLimitReached);
                }
                let partitions: BTreeSet<SharePartition> = add.iter().copied().collect();
                let answer = partitions.iter().copied().collect();
                sessions.insert(key, Session { epoch: 1, partitions, connection });
                Ok(answer)
            }
            epoch => {
                let session = sessions.get_mut(&key).ok_or(ResponseError::ShareSessionNotFound)?;
                if session.epoch != epoch {
                    return Err(ResponseError::InvalidShareSessionEpoch);
                }
                session.partitions.extend(add.iter().copied());
                for p in forget {
                    session.partitions.remove(p);
                }
                session.epoch = next(epoch);
                Ok(session.partitions.iter().copied().collect())
            }
        }
    }

    /// A ShareAcknowledge's step of the member's session: a later epoch
    /// moves it on, -1 closes it; 0 is no epoch an acknowledgement may carry.
    pub fn acknowledge(&self, key: (String, String), epoch: i32) -> Result<(), ResponseError> {
        let mut sessions = self.sessions.lock().expect("share sessions lock");
        match epoch {
            -1 => {
                sessions.remove(&key);
                Ok(())
            }
            0 => Err(ResponseError::InvalidShareSessionEpoch),
            epoch => {
                let session = sessions.get_mut(&key).ok_or(ResponseError::ShareSessionNotFound)?;
                if session.epoch != epoch {
                    return Err(ResponseError::InvalidShareSessionEpoch);
                }
                session.epoch = next(epoch);
                Ok(())
            }
        }
    }

    /// Ends the sessions `connection` opened, answering their (group,
    /// member) keys; a session its member opened again on another
    /// connection is that one's now and stays.
    pub fn close_connection(&self, connection: ConnectionId) -> Vec<(String, String)> {
        let mut sessions = self.sessions.lock().expect("share sessions lock");
        let ended: Vec<(String, String)> =
            sessions.iter().filter(|(_, s)| s.connection == connection).map(|(k, _)| k.clone()).collect();
        for key in &ended {
            sessions.remove(key);
        }
        ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> (String, String) {
        ("g".into(), "m".into())
    }

    #[test]
    fn epochs_follow_one_another_across_fetches_and_acknowledgements() {
        let s = ShareSessions::default();
        let p = ([1; 16], 0);
        assert_eq!(s.fetch(key(), 0, &[p], &[], 1), Ok(vec![p]));
        assert_eq!(s.fetch(key(), 2, &[], &[], 1), Err(ResponseError::InvalidShareSessionEpoch));
        assert_eq!(s.fetch(key(), 1, &[], &[], 1), Ok(vec![p]));
        assert_eq!(s.acknowledge(key(), 2), Ok(()));
        assert_eq!(s.fetch(key(), 3, &[], &[p], 1), Ok(vec![]));
        assert_eq!(s.acknowledge(key(), -1), Ok(()));
        assert_eq!(s.fetch(key(), 5, &[], &[], 1), Err(ResponseError::ShareSessionNotFound));
        assert_eq!(s.acknowledge(key(), 0), Err(ResponseError::InvalidShareSessionEpoch));
    }

    #[test]
    fn a_closed_connection_ends_the_sessions_it_opened_and_no_other() {
        let s = ShareSessions::default();
        let p = ([1; 16], 0);
        let other = ("g".to_string(), "n".to_string());
        s.fetch(key(), 0, &[p], &[], 7).unwrap();
        s.fetch(other.clone(), 0, &[p], &[], 7).unwrap();
        // The second member opened its session again on a new connection.
        s.fetch(other.clone(), 0, &[p], &[], 8).unwrap();
        assert_eq!(s.close_connection(7), vec![key()]);
        assert_eq!(s.fetch(key(), 1, &[], &[], 7), Err(ResponseError::ShareSessionNotFound));
        assert_eq!(s.fetch(other, 1, &[], &[], 8), Ok(vec![p]));
        assert!(s.close_connection(7).is_empty());
    }
}
