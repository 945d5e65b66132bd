//! The interpreter's memory budget: a program whose inputs and result do not fit in the memory
//! the interpreter may use is refused before anything is allocated, with a message, instead of
//! aborting the process when an allocation fails; so is an intermediate array beyond it (64 MiB
//! and more are checked), before it is allocated.
//!
//! The budget is half of the memory the system says is available (`MemAvailable` in
//! `/proc/meminfo`; the other half is left for intermediates), or `MAPSAT_INTERP_MEMORY` bytes
//! when that variable is set. Where neither is known there is no budget, and large allocations
//! still fail with an error rather than an abort (`Buffer::try_with_capacity`).

use super::EvalError;
use crate::ast::Program;
use crate::Sizes;

/// The number of bytes the interpreter may use for inputs and result, when known; an error
/// when `MAPSAT_INTERP_MEMORY` is set to something else than a positive number of bytes.
pub(crate) fn budget() -> Result<Option<u64>, EvalError> {
    if let Some(v) = std::env::var_os("MAPSAT_INTERP_MEMORY") {
        let text = v.to_string_lossy();
        return match text.trim().parse::<u64>() {
            Ok(b) if b > 0 => Ok(Some(b)),
            _ => Err(EvalError::BadBudget(text.into_owned())),
        };
    }
    Ok(available())
}

/// Half the memory `/proc/meminfo` says is available.
fn available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024) / 2)
}

/// The `n` values of `it` in a vector, or an error when its memory cannot be had: a plain
/// `collect` aborts the process (an address-space limit, `ulimit -v`, is not in the budget's
/// figure).
pub fn try_collect<T>(n: usize, it: impl Iterator<Item = T>) -> Result<Vec<T>, EvalError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| EvalError::Alloc((n as u64).saturating_mul(size_of::<T>() as u64)))?;
    v.extend(it);
    Ok(v)
}

/// `n` copies of `x` ([`try_collect`]).
pub fn try_filled<T: Clone>(x: T, n: usize) -> Result<Vec<T>, EvalError> {
    try_collect(n, std::iter::repeat_n(x, n))
}

/// Intermediate arrays smaller than this are not checked against the budget (reading it costs
/// a file read).
const CHECKED_FROM: usize = 64 << 20;

/// Refuses an intermediate array of `bytes` bytes larger than the budget, before it is
/// allocated.
pub(crate) fn check_intermediate(bytes: usize) -> Result<(), String> {
    if bytes < CHECKED_FROM {
        return Ok(());
    }
    match budget().map_err(|e| e.to_string())? {
        Some(b) if bytes as u64 > b => Err(format!(
            "an intermediate array of {bytes} bytes exceeds the {b} bytes the interpreter may use \
             (half the available memory, or MAPSAT_INTERP_MEMORY)"
        )),
        _ => Ok(()),
    }
}

/// The bytes of `p`'s inputs at `sizes`, and of its result when `with_result` (found by the
/// checker, which recurses over the program: the caller runs it where the stack allows);
/// `None` when the program does not check at these sizes (the evaluation reports that itself).
fn need(p: &Program, sizes: &Sizes, with_result: bool) -> Option<u64> {
    let subst = sizes.iter().map(|(k, v)| (k.to_string(), crate::Size::constant(v))).collect();
    let mut types: Vec<crate::Type> = p.params.iter().map(|q| q.ty.substitute(&subst)).collect();
    if with_result {
        types.push(crate::check::check_with_sizes(p, sizes).ok()?.result);
    }
    let mut total: u64 = 0;
    for t in &types {
        let (_, bytes) = crate::bounds::footprint(t).ok()??;
        total = total.saturating_add(bytes as u64);
    }
    Some(total)
}

/// Refuses `p` at `sizes` when its inputs (and its result, when `with_result`) need more than
/// the budget.
pub(crate) fn check(p: &Program, sizes: &Sizes, with_result: bool) -> Result<(), EvalError> {
    let budget = budget()?;
    let (Some(need), Some(budget)) = (need(p, sizes, with_result), budget) else { return Ok(()) };
    if need > budget {
        return Err(EvalError::OutOfMemory { need, budget });
    }
    Ok(())
}
