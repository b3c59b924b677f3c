//! The cluster simulator: N nodes of openraft over Queen's log storage and
//! state machine, each on simulated storage that crashes and fails, joined
//! by a simulated network that loses, delays, reorders and partitions,
//! all on one thread of a tokio runtime whose time is paused (it moves only
//! when every task waits), so a seed replays. openraft's random draws come
//! from the seed too (`queen::replicate::raft::runtime`).
//!
//! `cargo test --test sim_cluster` runs `QUEEN_SIM_SEEDS` seeds (default
//! 24, about a second each in debug) from `QUEEN_SIM_FIRST_SEED` (default 0); `QUEEN_SIM_SEED=N` runs seed
//! N alone; `QUEEN_SIM_TRACE=1` tells what happens. `scripts/simulate
//! --cluster --seeds N` is the long run. A failing seed prints the line that
//! replays it.

#[path = "../sim/digest.rs"]
mod digest;
#[path = "../sim/storage.rs"]
#[allow(dead_code)]
mod storage;

mod checks;
mod fenced;
mod ledger;
mod network;
mod node;
mod proposer;
mod run;
mod workload;

use run::{Outcome, Plan, Run};
use std::cell::RefCell;
use std::sync::Once;
use std::time::Instant;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| v.parse().unwrap_or_else(|_| panic!("{name}={v} is not a number")))
}

thread_local! {
    /// The panics of this thread's tasks, which tokio catches: the run
    /// reports them (`Run::check_running`).
    pub static PANICS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Keeps every panic's message in `PANICS`, and a dead process's task
/// ending (`fenced::DEAD`) out of the output.
fn keep_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let report = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() == Some(&fenced::DEAD) {
                return;
            }
            let message = info
                .payload()
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            PANICS.with(|p| p.borrow_mut().push(format!("{message} (at {:?})", info.location())));
            report(info);
        }));
    });
}

/// Runs one seed on a runtime of its own; a failure names the seed and how
/// to replay it.
fn run_seed(seed: u64, plan: Plan) -> Outcome {
    keep_panics();
    let run = std::panic::catch_unwind(|| {
        PANICS.with(|p| p.borrow_mut().clear());
        queen::replicate::raft::runtime::seed_this_thread(Some(seed));
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().expect("a runtime");
        let outcome = runtime.block_on(async { Run::new(seed, plan).go().await });
        queen::replicate::raft::runtime::seed_this_thread(None);
        outcome
    });
    match run {
        Ok(outcome) => outcome,
        Err(panic) => {
            queen::replicate::raft::runtime::seed_this_thread(None);
            eprintln!(
                "cluster simulation failed; replay it with: QUEEN_SIM_SEED={seed} cargo test --test sim_cluster seeds"
            );
            std::panic::resume_unwind(panic)
        }
    }
}

/// Seeds that once found a bug, kept so that it stays fixed. Each names
/// what broke. (A seed replays its draws, but not always the order in
/// which tasks woken together run: docs/architecture.md.)
const REGRESSIONS: &[(u64, &str)] = &[
    (
        14,
        "the leader, killed with entries it had sent and not yet written, restarted and led on in its term \
     (openraft's leader restore): it wrote other entries under the same log ids, and the followers kept theirs \
     (the cluster's config now sets enable_leader_restore off)",
    ),
    (
        5,
        "openraft's answer stream ended before every entry handed over was answered, and the proposer's task \
         polled it again and panicked: its commands were never answered and the leader never planned again \
         (the proposer now fuses the stream)",
    ),
];

#[test]
fn regression_seeds() {
    for (seed, bug) in REGRESSIONS {
        eprintln!("seed {seed}: {bug}");
        run_seed(*seed, Plan::default());
    }
}

#[test]
fn seeds() {
    let (first, count) = match env_u64("QUEEN_SIM_SEED") {
        Some(seed) => (seed, 1),
        None => (env_u64("QUEEN_SIM_FIRST_SEED").unwrap_or(0), env_u64("QUEEN_SIM_SEEDS").unwrap_or(24)),
    };
    let started = Instant::now();
    for seed in first..first + count {
        let at = Instant::now();
        let o = run_seed(seed, Plan::default());
        eprintln!("seed {seed}: {} nodes, {:.1}s: {o:?}", o.nodes, at.elapsed().as_secs_f64());
    }
    eprintln!(
        "simulated cluster seeds {first}..{}: {count} seeds in {:.1}s",
        first + count,
        started.elapsed().as_secs_f64()
    );
}
