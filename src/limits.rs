//! What the command line and the Python package share about running mapsat's passes: the
//! stack they run on, the largest program text, time limits in seconds.

use crate::error::Error;
use std::cell::Cell;
use std::sync::mpsc;
use std::time::Duration;

thread_local! {
    /// Set on the threads [`spawn_deep`] and [`deep`] start.
    static DEEP: Cell<bool> = const { Cell::new(false) };
}

/// The stack of the thread that runs a command: the passes over a program (parsing,
/// elaboration, checking, printing, lowering) recurse along its tree, whose depth the parser
/// bounds (200 levels of nesting, chains of 2,000 terms); this leaves room for the deepest
/// program it accepts, in debug builds too. Only the pages used are committed.
pub const STACK_SIZE: usize = 512 << 20;

/// The largest program text read (the largest example is a few KB): `/dev/zero`, or a data
/// file given by mistake, would otherwise be read until memory runs out.
pub const MAX_SOURCE_BYTES: u64 = 16 << 20;

/// Runs `f` on a thread of its own with [`STACK_SIZE`] of stack; its result arrives on the
/// receiver (which disconnects without one if `f` panics). Whoever stops waiting leaves the
/// thread to its end: a kernel cannot be stopped.
pub fn spawn_deep<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<mpsc::Receiver<T>, Error> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .stack_size(STACK_SIZE)
        .spawn(move || {
            DEEP.with(|d| d.set(true));
            let _ = tx.send(f());
        })
        .map_err(|e| Error::Rejected(format!("error: cannot start a thread: {e}")))?;
    Ok(rx)
}

/// Runs `f` with [`STACK_SIZE`] of stack and waits for it: on this thread when it is one that
/// [`spawn_deep`] or `deep` started, else on a thread of its own. What [`crate::Source`]'s
/// methods run on, so that research code may call them from any thread (a thread's usual 2 MiB
/// overflowed on a chain of 1,000 additions, which aborts the process). A panic in `f` is an
/// internal error.
pub fn deep<T: Send>(f: impl FnOnce() -> Result<T, Error> + Send) -> Result<T, Error> {
    if DEEP.with(Cell::get) {
        return f();
    }
    std::thread::scope(|s| {
        let run = move || {
            DEEP.with(|d| d.set(true));
            f()
        };
        let thread = std::thread::Builder::new().stack_size(STACK_SIZE).spawn_scoped(s, run);
        let thread = thread.map_err(|e| Error::Rejected(format!("error: cannot start a thread: {e}")))?;
        thread
            .join()
            .unwrap_or_else(|_| Err(Error::Rejected("internal error: mapsat panicked (please report it)".into())))
    })
}

/// A time limit given in seconds (`what` names it in errors): positive and at most what a
/// `Duration` holds, or infinite: no limit ([`Duration::MAX`], which waits forever).
pub fn seconds(what: &str, s: f64) -> Result<Duration, Error> {
    match Duration::try_from_secs_f64(s) {
        Ok(d) if !d.is_zero() => Ok(d),
        Err(_) if s == f64::INFINITY => Ok(Duration::MAX),
        Err(_) if s.is_finite() && s > 0.0 => {
            Err(Error::Usage(format!("{what} {s:e} is too large (at most about 1.8e19 seconds, or inf for no limit)")))
        }
        // Positive, but less than a nanosecond.
        Ok(_) if s > 0.0 => Err(Error::Usage(format!("{what} {s:e} is too small (at least 1e-9 seconds)"))),
        _ => Err(Error::Usage(format!("{what} must be a positive number of seconds, got {s}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::seconds;

    #[test]
    fn time_limits_are_positive_and_said_briefly() {
        assert_eq!(seconds("--timeout", 1.5).unwrap().as_millis(), 1500);
        assert_eq!(seconds("--timeout", f64::INFINITY).unwrap(), std::time::Duration::MAX);
        for (s, want) in [
            (0.0, "must be a positive number"),
            (-1.0, "must be a positive number"),
            (f64::NEG_INFINITY, "must be a positive number"),
            (f64::NAN, "must be a positive number"),
            (1e300, "--timeout 1e300 is too large"),
            (1e-300, "--timeout 1e-300 is too small"),
        ] {
            let e = seconds("--timeout", s).unwrap_err().to_string();
            assert!(e.contains(want), "{s}: {e}");
        }
    }
}
