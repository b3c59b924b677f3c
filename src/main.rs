use clap::Parser;

fn main() {
    // `queen cluster ...` starts a local cluster of child processes.
    if std::env::args().nth(1).as_deref() == Some("cluster") {
        let args = queen::ClusterArgs::parse_from(std::env::args().skip(1));
        std::process::exit(queen::run_local_cluster(args));
    }
    queen::serve(queen::Settings::parse());
}
