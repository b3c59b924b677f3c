//! The one way Queen stops on damage it will not guess around: a `FATAL` line
//! that names the cause, then exit.

/// Exit code for a refusal to boot or a runtime integrity failure.
pub const FATAL_EXIT_CODE: i32 = 70;

pub fn exit(cause: &str) -> ! {
    eprintln!("FATAL {cause}");
    std::process::exit(FATAL_EXIT_CODE)
}
