//! The deterministic simulator: one thread, one seed, the qlog on simulated
//! storage that crashes and fails on the seed's say.

mod storage;
mod storage_tests;
