//! The deterministic simulator: one thread, one seed, the planner, the qlog
//! writer and apply over simulated storage that crashes and fails where the
//! seed says, checked after every recovery against what was answered.
//!
//! `cargo test --test sim` runs `QUEEN_SIM_SEEDS` seeds (default 2000) from
//! `QUEEN_SIM_FIRST_SEED` (default 0); `QUEEN_SIM_SEED=N` runs seed N alone,
//! bit for bit as it ran before. `scripts/simulate --seeds N` is the long run.
//! A failing seed prints the line that reproduces it.

mod digest;
mod log_store;
mod node;
mod regressions;
mod run;
mod storage;
mod storage_tests;

use run::{Outcome, Plan, Run};
use std::time::Instant;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| v.parse().unwrap_or_else(|_| panic!("{name}={v} is not a number")))
}

/// Runs one seed; a failure names the seed and how to replay it.
fn run_seed(seed: u64, plan: Plan) -> Outcome {
    match std::panic::catch_unwind(|| Run::new(seed, plan).go()) {
        Ok(outcome) => outcome,
        Err(panic) => {
            eprintln!("simulation failed; replay it with: QUEEN_SIM_SEED={seed} cargo test --test sim seeds");
            std::panic::resume_unwind(panic)
        }
    }
}

/// Seeds that once found a bug, kept so that it stays fixed. Each names
/// what broke.
const REGRESSIONS: &[(u64, &str)] = &[
    (
        20,
        "a boot replayed entries a killed process left unsynced in the page cache, then answered writes after them; \
         a power cut lost both (recovery now fdatasyncs each active file it resumes)",
    ),
    (
        8094,
        "a layout file read right once and flipped on the next two reads was taken as flipped, and the boot refused \
         the directory (a layout file's content is now the one read twice)",
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
fn a_node_that_answers_before_fdatasync_is_caught_within_fifty_seeds() {
    let plan = Plan { answer_before_sync: true, ..Plan::default() };
    let caught = (0..50).find_map(|seed| {
        let run = std::panic::catch_unwind(|| Run::new(seed, plan).go());
        let panic = run.err()?;
        let why = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        Some((seed, why))
    });
    let (seed, why) = caught.expect("fifty seeds of a node that never syncs and no invariant broke");
    assert!(why.contains("invariant violated"), "seed {seed} failed, but not on an invariant: {why}");
    eprintln!("caught at seed {seed}: {why}");
}

#[test]
fn seeds() {
    let (first, count) = match env_u64("QUEEN_SIM_SEED") {
        Some(seed) => (seed, 1),
        None => (env_u64("QUEEN_SIM_FIRST_SEED").unwrap_or(0), env_u64("QUEEN_SIM_SEEDS").unwrap_or(2000)),
    };
    let started = Instant::now();
    let mut total = Outcome::default();
    for seed in first..first + count {
        let o = run_seed(seed, Plan::default());
        total.commits += o.commits;
        total.acked_pushes += o.acked_pushes;
        total.recoveries += o.recoveries;
        total.stops += o.stops;
        total.idle_seals += o.idle_seals;
        total.terms += o.terms;
        total.short_replays += o.short_replays;
        let (t, f) = (&mut total.faults, o.faults);
        t.write_eio += f.write_eio;
        t.write_enospc += f.write_enospc;
        t.sync_eio += f.sync_eio;
        t.read_flips += f.read_flips;
        t.kills += f.kills;
        t.power_cuts += f.power_cuts;
        t.torn_power_cuts += f.torn_power_cuts;
        t.torn_sectors += f.torn_sectors;
    }
    let elapsed = started.elapsed();
    eprintln!(
        "simulated seeds {first}..{}: {count} seeds in {:.1}s ({:.1} ms a seed); {} group commits, {} pushes answered, {} recoveries ({} replayed through a committed index short of the log's end), {} terms led, {} stops on a failed write or sync, {} idle seals by age; faults: {:?}",
        first + count,
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1000.0 / count as f64,
        total.commits,
        total.acked_pushes,
        total.recoveries,
        total.short_replays,
        total.terms,
        total.stops,
        total.idle_seals,
        total.faults
    );
}
