//! The `mapsat` command line.

mod cli;

use std::process::ExitCode;

/// mimalloc instead of the system's allocator: lowering, printing and checking candidates
/// allocate many small trees, and glibc's malloc took a third of the tuner's time building
/// them (`cargo bench --bench tune`, issue #8).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Runs the command on a thread with the passes' stack ([`mapsat::limits::STACK_SIZE`]).
fn main() -> ExitCode {
    match std::thread::Builder::new().name("mapsat".into()).stack_size(mapsat::limits::STACK_SIZE).spawn(cli::main) {
        Ok(h) => h.join().unwrap_or(ExitCode::from(101)),
        Err(_) => cli::main(),
    }
}
