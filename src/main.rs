//! The `mapsat` command line.

mod cli;

use std::process::ExitCode;

/// mimalloc instead of the system's allocator: lowering, printing and checking candidates
/// allocate many small trees, and glibc's malloc took a third of the tuner's time building
/// them (`cargo bench --bench tune`, issue #8).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The stack of the thread that runs the command: the passes over a program (parsing,
/// elaboration, checking, printing, lowering) recurse along its tree, whose depth the parser
/// bounds (200 levels of nesting, chains of 2,000 terms); this leaves room for the deepest
/// program it accepts, in debug builds too. Only the pages used are committed.
pub(crate) const STACK_SIZE: usize = 512 << 20;

fn main() -> ExitCode {
    match std::thread::Builder::new().name("mapsat".into()).stack_size(STACK_SIZE).spawn(cli::main) {
        Ok(h) => h.join().unwrap_or(ExitCode::from(101)),
        Err(_) => cli::main(),
    }
}
