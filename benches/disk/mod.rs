//! What the benchmarks measure of the disk they run on, in the same run as
//! the figures set beside it: fdatasync'd sequential-write bandwidth and
//! fdatasync latency.
#![allow(dead_code)]

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// Incompressible bytes, so zstd stores them raw and the disk sees every byte.
pub fn payload(size: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

pub fn disk_bandwidth(path: &Path, chunk: usize, total: usize) -> f64 {
    let mut f = OpenOptions::new().create(true).write(true).truncate(true).open(path).unwrap();
    let buf = payload(chunk, 1);
    let start = Instant::now();
    for _ in 0..total / chunk {
        f.write_all(&buf).unwrap();
        f.sync_data().unwrap();
    }
    let bw = total as f64 / start.elapsed().as_secs_f64();
    std::fs::remove_file(path).unwrap();
    bw
}

pub fn fdatasync_latency(path: &Path, n: usize) -> (Duration, Duration) {
    let mut f = OpenOptions::new().create(true).write(true).truncate(true).open(path).unwrap();
    let buf = payload(4096, 2);
    let mut lat: Vec<Duration> = (0..n)
        .map(|_| {
            let t = Instant::now();
            f.write_all(&buf).unwrap();
            f.sync_data().unwrap();
            t.elapsed()
        })
        .collect();
    std::fs::remove_file(path).unwrap();
    lat.sort();
    (lat[n / 2], lat[n * 99 / 100])
}
