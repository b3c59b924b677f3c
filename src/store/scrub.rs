//! The scrub: walks the whole checkpoint every `QUEEN_STORE_SCRUB_EVERY_S` at
//! `QUEEN_STORE_SCRUB_ROWS_PER_S`, to find damage on one node before a
//! restart finds it. A corrupt value ends the process.

use super::checkpoint::{CheckpointFile, KEYSPACES};
use std::sync::Arc;
use std::time::Duration;

pub fn start(file: Arc<CheckpointFile>, every: Duration, rows_per_s: usize) {
    if every.is_zero() || rows_per_s == 0 {
        return;
    }
    std::thread::Builder::new()
        .name("store-scrub".into())
        .spawn(move || loop {
            std::thread::sleep(every);
            let mut rows = 0u64;
            for keyspace in KEYSPACES {
                let mut after: Option<Vec<u8>> = None;
                loop {
                    match file.scrub_step(keyspace, after.as_deref(), rows_per_s) {
                        Ok(Some(last)) => {
                            after = Some(last);
                            rows += rows_per_s as u64;
                            std::thread::sleep(Duration::from_secs(1));
                        }
                        Ok(None) => break,
                        Err(e) => crate::fatal::exit(&format!("store scrub: {e}")),
                    }
                }
            }
            tracing::info!(rows, "store scrub pass complete");
        })
        .expect("spawn the scrub thread");
}
