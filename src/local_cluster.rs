//! `queen cluster`: a cluster on loopback in one command, for trying it and
//! for tests. It starts nodes 1..N as child processes of this binary, node
//! i on each base port + i - 1 with its data in `DIR/node-i` and its log in
//! `DIR/node-i.log`, prints their addresses, restarts nothing by itself,
//! and stops them all on Ctrl-C or SIGTERM.

use clap::Parser;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

#[derive(Parser, Debug)]
#[command(name = "queen cluster", about = "Starts a cluster of Queen nodes on loopback, as child processes")]
pub struct ClusterArgs {
    /// How many nodes (three or five make a cluster that survives one or two failures).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=9))]
    pub nodes: u64,
    /// The directory every node's data and log go under.
    #[arg(long)]
    pub dir: PathBuf,
    /// Node 1's HTTP port; node i listens on this + i - 1.
    #[arg(long, default_value_t = 6632)]
    pub http_port: u16,
    /// Node 1's Kafka port; node i listens on this + i - 1.
    #[arg(long, default_value_t = 9092)]
    pub kafka_port: u16,
    /// Node 1's raft port; node i listens on this + i - 1.
    #[arg(long, default_value_t = 7400)]
    pub raft_port: u16,
}

/// The token the nodes share: QUEEN_RAFT_TOKEN when set, else one made on
/// the first run and kept in `DIR/raft-token`, so the nodes of a later run
/// on the same directory still admit each other.
fn token(args: &ClusterArgs) -> std::io::Result<String> {
    if let Some(t) = std::env::var("QUEEN_RAFT_TOKEN").ok().filter(|t| !t.is_empty()) {
        return Ok(t);
    }
    let path = args.dir.join("raft-token");
    match std::fs::read_to_string(&path) {
        Ok(t) if !t.trim().is_empty() => Ok(t.trim().to_string()),
        _ => {
            let t = uuid::Uuid::new_v4().simple().to_string();
            std::fs::write(&path, &t)?;
            Ok(t)
        }
    }
}

fn port(base: u16, i: u64) -> u16 {
    base + (i - 1) as u16
}

/// Runs the cluster until Ctrl-C or SIGTERM; answers the exit code.
pub fn run(args: ClusterArgs) -> i32 {
    if let Err(e) = std::fs::create_dir_all(&args.dir) {
        eprintln!("FATAL {}: {e}", args.dir.display());
        return 70;
    }
    let token = match token(&args) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("FATAL {}: {e}", args.dir.join("raft-token").display());
            return 70;
        }
    };
    let peers: Vec<String> = (1..=args.nodes)
        .map(|i| {
            let (raft, http, kafka) = (port(args.raft_port, i), port(args.http_port, i), port(args.kafka_port, i));
            format!("{i}=127.0.0.1:{raft}/127.0.0.1:{http}/127.0.0.1:{kafka}")
        })
        .collect();
    let peers = peers.join(",");
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("FATAL cannot find this binary to start the nodes: {e}");
            return 70;
        }
    };
    let mut children: Vec<(u64, Child)> = Vec::new();
    for i in 1..=args.nodes {
        let log = args.dir.join(format!("node-{i}.log"));
        let log = match std::fs::OpenOptions::new().create(true).append(true).open(&log) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("FATAL {}: {e}", log.display());
                stop(&mut children);
                return 70;
            }
        };
        let kafka = format!("127.0.0.1:{}", port(args.kafka_port, i));
        let spawned = Command::new(&exe)
            .env("QUEEN_RAFT_DIR", args.dir.join(format!("node-{i}")))
            .env("QUEEN_HTTP_ADDR", format!("127.0.0.1:{}", port(args.http_port, i)))
            .env("QUEEN_KAFKA_ADDR", &kafka)
            .env("QUEEN_KAFKA_ADVERTISED", &kafka)
            .env("QUEEN_RAFT_ADDR", format!("127.0.0.1:{}", port(args.raft_port, i)))
            .env("QUEEN_RAFT_NODE_ID", i.to_string())
            .env("QUEEN_RAFT_PEERS", &peers)
            .env("QUEEN_RAFT_TOKEN", &token)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn();
        match spawned {
            Ok(child) => children.push((i, child)),
            Err(e) => {
                eprintln!("FATAL starting node {i}: {e}");
                stop(&mut children);
                return 70;
            }
        }
        println!(
            "node {i}: http://127.0.0.1:{}  kafka 127.0.0.1:{}  raft 127.0.0.1:{}  data {}  log {}",
            port(args.http_port, i),
            port(args.kafka_port, i),
            port(args.raft_port, i),
            args.dir.join(format!("node-{i}")).display(),
            args.dir.join(format!("node-{i}.log")).display()
        );
    }
    println!("{} nodes started; Ctrl-C or SIGTERM stops them all", args.nodes);
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("FATAL the runtime that waits for signals did not start: {e}");
            stop(&mut children);
            return 70;
        }
    };
    runtime.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
        }
    });
    stop(&mut children);
    0
}

/// SIGTERM to every node, then waits for each to stop.
fn stop(children: &mut [(u64, Child)]) {
    for (_, child) in children.iter() {
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    }
    for (i, child) in children.iter_mut() {
        match child.wait() {
            Ok(status) => println!("node {i} stopped ({status})"),
            Err(e) => eprintln!("node {i}: {e}"),
        }
    }
}
