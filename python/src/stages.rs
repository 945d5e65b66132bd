//! The tune of a program of several kernels from Python, as JSON: each kernel's summary and
//! the best sequence ([`mapsat::tuning::best_sequence`]).

use mapsat::ir::{Program, Sizes};
use mapsat::tuning::KernelTune;
use serde_json::{json, Map, Value};

/// The summary of a tune of `program`'s kernels at `sizes` (`kernels`, in launch order, and
/// each one's JSON summary `each`): the best sequence (the mapping of the whole program, each
/// kernel's work group by name, the tunable sizes), its time (the sum of the kernels') and
/// GFLOP/s; `best` is null when a kernel has no correct candidate.
pub(crate) fn tuned(program: &Program, sizes: &Sizes, kernels: &[KernelTune], each: Vec<Value>) -> Value {
    let best = mapsat::tuning::best_sequence(kernels.iter().map(|k| &k.summary));
    let best_json = best.as_ref().map(|b| {
        let local: Map<String, Value> = b.local.iter().map(|(k, l)| (k.clone(), json!(l))).collect();
        json!({ "mapping": b.mapping, "local": local, "tuning": b.tuning })
    });
    json!({
        "program": program.name,
        "sizes": sizes,
        "best": best_json,
        "best_ms": best.as_ref().map_or(0.0, |b| b.ms),
        "best_gflops": best.as_ref().map_or(0.0, |b| b.gflops),
        "kernels": each,
    })
}
