//! The kill -9 harness the crash tests share: writers keep a ledger of every
//! acknowledged write while the node is killed at random moments and
//! restarted on the same directory, and after every restart a verifier holds
//! the ledger against what the node stores.

use super::{push_body, Node};
use rand::{Rng, SeedableRng};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Debug;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;

/// Every acknowledged write by its unique name, with where it was
/// acknowledged, and the names in each request whose answer never came.
pub struct Ledger<At> {
    pub acked: HashMap<String, At>,
    pub unanswered: Vec<Vec<String>>,
}

impl<At> Default for Ledger<At> {
    fn default() -> Self {
        Self { acked: HashMap::new(), unanswered: Vec::new() }
    }
}

impl<At: PartialEq + Debug> Ledger<At> {
    /// Every acknowledged write is stored where it was acknowledged, and
    /// every request that was never answered is stored wholly or not at all.
    pub fn check(&self, found: &HashMap<String, At>) {
        for (name, at) in &self.acked {
            assert_eq!(found.get(name), Some(at), "acknowledged write {name} is not where it was acknowledged");
        }
        for names in &self.unanswered {
            let present = names.iter().filter(|n| found.contains_key(*n)).count();
            assert!(
                present == 0 || present == names.len(),
                "an unanswered request is partly stored: {present} of {}",
                names.len()
            );
        }
    }
}

/// How a crash test runs: how many kills, how many writers, how long the
/// writers run before each kill, and the seed that picks it.
pub struct Rounds {
    pub kills: usize,
    pub writers: usize,
    pub pause_ms: Range<u64>,
    pub seed: u64,
}

/// Starts `writer(node, ledger, round, w)` for every writer, kills the node
/// after a random pause, restarts it, and runs `verify` on the ledger so
/// far; `rounds.kills` times. Answers the restarted node and the ledger.
pub async fn kill_rounds<At: Send + 'static>(
    mut node: Node,
    rounds: Rounds,
    writer: impl Fn(&Node, Arc<Mutex<Ledger<At>>>, usize, usize) -> JoinHandle<()>,
    verify: impl AsyncFn(&Node, &Ledger<At>),
) -> (Node, Ledger<At>) {
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let mut rng = rand::rngs::StdRng::seed_from_u64(rounds.seed);
    for round in 0..rounds.kills {
        let writers: Vec<_> = (0..rounds.writers).map(|w| writer(&node, ledger.clone(), round, w)).collect();
        tokio::time::sleep(Duration::from_millis(rng.gen_range(rounds.pause_ms.clone()))).await;
        node.kill9();
        for w in writers {
            w.await.unwrap();
        }
        node = node.restart().await;
        let snapshot = std::mem::take(&mut *ledger.lock().unwrap());
        verify(&node, &snapshot).await;
        *ledger.lock().unwrap() = snapshot;
    }
    let ledger = std::mem::take(&mut *ledger.lock().unwrap());
    (node, ledger)
}

/// A push from a writer racing a kill: each item's answer, or none when the
/// node died before it answered. Any other answer fails the test.
pub async fn push_until_killed(
    client: &reqwest::Client,
    url: &str,
    items: &[(String, String, String, Value)],
) -> Option<Vec<Value>> {
    match client.post(url).json(&push_body(items)).send().await {
        Ok(r) if r.status().as_u16() == 201 => r.json::<Vec<Value>>().await.ok(),
        Ok(r) => panic!("push answered {}: {:?}", r.status(), r.text().await),
        Err(_) => None,
    }
}
