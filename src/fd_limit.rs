//! The process's descriptor limit: raised at boot from its soft value to
//! its hard one, since every queue's log and every connection takes a
//! descriptor, and the common soft limit of 1,024 is far below what the
//! system allows.

/// The most qlog files kept open when `QUEEN_QLOG_OPEN_FILES` is unset.
const MAX_DEFAULT_OPEN_FILES: u64 = 65536;

/// Raises the soft `RLIMIT_NOFILE` to the hard limit, logs both, and
/// answers the soft limit in force.
pub fn raise_to_hard() -> u64 {
    let Ok((soft, hard)) = rlimit::Resource::NOFILE.get() else {
        tracing::warn!("could not read the descriptor limit (RLIMIT_NOFILE)");
        return 1024;
    };
    if soft >= hard {
        tracing::info!(soft, hard, "descriptor limit (RLIMIT_NOFILE)");
        return soft;
    }
    match rlimit::Resource::NOFILE.set(hard, hard) {
        Ok(()) => {
            tracing::info!(from = soft, to = hard, "raised the soft descriptor limit (RLIMIT_NOFILE) to the hard one");
            hard
        }
        Err(e) => {
            tracing::warn!(soft, hard, error = %e, "could not raise the soft descriptor limit (RLIMIT_NOFILE)");
            soft
        }
    }
}

/// How many qlog files stay open: the setting, or half the descriptor
/// limit, so connections, the store and the rest keep the other half.
pub fn open_files(setting: Option<u64>, limit: u64) -> usize {
    let n = setting.unwrap_or((limit / 2).clamp(1, MAX_DEFAULT_OPEN_FILES));
    usize::try_from(n).unwrap_or(usize::MAX)
}
