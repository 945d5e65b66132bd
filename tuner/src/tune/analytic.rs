//! The analytical cost model: a predicted run time from a kernel's counts ([`KernelStats`]) and
//! a device profile's limits and rates, after the roofline and the terms of Sioutas' AutoGPU
//! model and Anderson 2021's appendix (compute with idle lanes and idle compute units, global
//! traffic with coalescing, local-memory traffic, barriers, launch overhead).
//!
//! ```text
//! lanes     = simd_width                           work items that run in lock step
//! lane_util = T / (ceil(T / lanes) * lanes)        idle lanes of the last lock-step group
//! tail      = ceil(G / CU) / (G / CU)              idle compute units in the last wave
//! compute   = lane_ops / gflops / (lane_util * busy) * tail          (lock-step lanes: GPUs)
//!           = (across / lane_util + in_item + scalar_ops * lanes) / gflops * tail    (CPUs)
//! global    = max(footprint / bw, transactions * line / cache_bw) * tail     (footprint fits in the cache)
//!           = max(footprint / bw, transactions * line / (bw * CACHE_REUSE)) * tail   (otherwise)
//! local     = (local + private array accesses) * 4 B / (bw * LOCAL_SPEEDUP) * tail
//! barriers  = barriers_per_group * G * T * BARRIER_FLOPS / gflops * tail
//! groups    = G * group_us / CU
//! time      = launch + groups + max(compute, global) + local + barriers
//! ```
//!
//! `T` is the work-group size, `G` the number of work groups, `busy` the fraction of launched
//! work items that have work. On a CPU (`lock_step = false`) only the statements whose
//! accesses allow it run in vector lanes (`vector_ops`): across the work items of a group
//! (`across`, which a group of fewer work items than lanes leaves partly idle), or along a
//! sequential loop of each work item (`in_item`, which needs no other work item); the others
//! run one work item at a time, and idle work items cost nothing. `footprint` is the bytes of
//! the kernel's global buffers: each is
//! read or written at least once from memory. `transactions` are the lines moved by the
//! accesses as coalesced (see [`KernelStats`]); a cache serves repeated lines: at its measured
//! bandwidth when the profile has one (`cache_bytes`, `cache_bandwidth_gbs`, from `mapsat
//! calibrate`) and the footprint fits in it, else counted by the `CACHE_REUSE` factor. A profile without rates gets rough ones from its limits
//! ([`rates_of`]), which is enough to rank candidates but not to predict seconds.

use super::stats::{KernelStats, Lanes};
use mapsat_ir::profile::{Profile, Rates};
use serde::{Deserialize, Serialize};

/// How many times a line fetched from memory is used again from cache, on average.
pub const CACHE_REUSE: f64 = 4.0;
/// How much faster local memory (and private arrays) are than global memory.
pub const LOCAL_SPEEDUP: f64 = 8.0;
/// The cost of one barrier for one work item, in floating-point operations.
pub const BARRIER_FLOPS: f64 = 32.0;

/// A predicted run time and its terms, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// The predicted time.
    pub total_ms: f64,
    /// Arithmetic.
    pub compute_ms: f64,
    /// Global-memory traffic.
    pub global_ms: f64,
    /// Local and private-array traffic.
    pub local_ms: f64,
    /// Barriers.
    pub barrier_ms: f64,
    /// Launch overhead.
    pub launch_ms: f64,
    /// Scheduling the work groups.
    pub groups_ms: f64,
    /// Work items busy in the last lock-step group (1: none idle).
    pub lane_util: f64,
    /// Compute-unit waves over their ideal number (1: no idle compute unit).
    pub tail: f64,
}

/// The profile's rates, or rough ones from its limits: 1 GHz times the lanes of every compute
/// unit times 2 (multiply-add), 20 GB/s, 20 µs per launch, lanes of the vector width, 64-byte
/// lines.
pub fn rates_of(p: &Profile) -> Rates {
    p.rates.clone().unwrap_or(Rates {
        gflops: f64::from(p.compute_units.max(1)) * f64::from(p.vector_width.max(1)) * 2.0,
        bandwidth_gbs: 20.0,
        launch_us: 20.0,
        simd_width: p.vector_width.max(1),
        line_bytes: 64,
        group_us: 0.0,
        lock_step: true,
        cache_bytes: 0,
        cache_bandwidth_gbs: 0.0,
        l1_bytes: 0,
        l1_bandwidth_gbs: 0.0,
        l2_bytes: 0,
        l2_bandwidth_gbs: 0.0,
    })
}

/// The lanes and line size the counts are made for.
pub fn lanes_of(p: &Profile, reassociate: bool) -> Lanes {
    let r = rates_of(p);
    Lanes { simd: r.simd_width, line: r.line_bytes, reassociate }
}

/// Global-memory time, before the tail: the footprint from memory once, and the lines the
/// accesses move, from the cache at its bandwidth when the footprint fits in it (and the
/// profile knows the cache), else from memory with [`CACHE_REUSE`].
fn global_seconds(s: &KernelStats, r: &Rates) -> f64 {
    let bytes_per_s = r.bandwidth_gbs * 1e9;
    let lines = s.global_transactions * f64::from(r.line_bytes);
    let cached = r.cache_bytes > 0 && r.cache_bandwidth_gbs > 0.0 && s.footprint_bytes <= r.cache_bytes as f64;
    match cached {
        true => (s.footprint_bytes / bytes_per_s).max(lines / (r.cache_bandwidth_gbs * 1e9)),
        false => s.footprint_bytes.max(lines / CACHE_REUSE) / bytes_per_s,
    }
}

/// Predicts a kernel's run time on a device (see the module documentation).
pub fn predict(s: &KernelStats, p: &Profile) -> Prediction {
    let r = rates_of(p);
    let lanes = f64::from(r.simd_width.max(1));
    let t = s.threads_per_group.max(1.0);
    let g = s.groups.max(1.0);
    let cu = f64::from(p.compute_units.max(1));
    let lane_util = t / ((t / lanes).ceil() * lanes);
    let tail = (g / cu).ceil() / (g / cu);
    let flops_per_s = r.gflops * 1e9;
    let bytes_per_s = r.bandwidth_gbs * 1e9;
    let busy = s.busy_fraction.max(1e-3);
    let compute = if r.lock_step {
        s.lane_ops / flops_per_s / (lane_util * busy) * tail
    } else {
        let scalar = (s.lane_ops - s.vector_ops).max(0.0);
        let across = (s.vector_ops - s.vector_ops_in_item).max(0.0);
        (across / lane_util + s.vector_ops_in_item + scalar * lanes) / flops_per_s * tail
    };
    let groups = g * r.group_us * 1e-6 / cu;
    let global = global_seconds(s, &r) * tail;
    let local = (s.local_accesses + s.private_accesses) * 4.0 / (bytes_per_s * LOCAL_SPEEDUP) * tail;
    let barrier = s.barriers_per_group * g * t * BARRIER_FLOPS / flops_per_s * tail;
    let launch = r.launch_us * 1e-6;
    let ms = |x: f64| x * 1e3;
    Prediction {
        total_ms: ms(launch + groups + compute.max(global) + local + barrier),
        compute_ms: ms(compute),
        global_ms: ms(global),
        local_ms: ms(local),
        barrier_ms: ms(barrier),
        launch_ms: ms(launch),
        groups_ms: ms(groups),
        lane_util,
        tail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(src: &str, local: Vec<i64>, p: &Profile) -> KernelStats {
        let prog = mapsat_ir::parse(src).unwrap();
        let opts = mapsat_codegen::Options { local: Some(local), ..Default::default() };
        KernelStats::of(&mapsat_codegen::lower(&prog, &opts).unwrap(), lanes_of(p, false))
    }

    #[test]
    fn idle_lanes_and_idle_compute_units_cost_time() {
        let p = Profile::builtin("h100").unwrap();
        let src = "size N = 1048576\ndef f(xs: [f32]N) = mapGlb(0, fun(x => x * x * x * x * x * x * x * x), xs)";
        let full = predict(&stats(src, vec![256], &p), &p);
        let one_lane = predict(&stats(src, vec![1], &p), &p);
        assert!(one_lane.compute_ms > 30.0 * full.compute_ms, "{one_lane:?} vs {full:?}");
        assert_eq!(full.lane_util, 1.0);
        // 2 work groups on 132 compute units: 66 times the ideal.
        let few = "size N = 512\ndef f(xs: [f32]N) = mapGlb(0, fun(x => x * 2.0), xs)";
        let pr = predict(&stats(few, vec![256], &p), &p);
        assert!((pr.tail - 66.0).abs() < 1e-9, "{pr:?}");
    }

    #[test]
    fn lines_of_a_footprint_that_fits_in_the_cache_move_at_its_bandwidth() {
        let mut p = Profile::builtin("pocl-cpu").unwrap();
        let src = "size N = 256, M = 256\ndef f(a: [[f32]M]N) = mapGlb(0, fun(r => reduceSeq(add, 0.0, r)), a)";
        let s = stats(src, vec![64], &p);
        let rates = p.rates.clone().unwrap();
        let line = f64::from(rates.line_bytes);
        p.rates = Some(Rates { cache_bytes: 0, cache_bandwidth_gbs: 0.0, ..rates.clone() });
        let unknown = predict(&s, &p).global_ms;
        let from_memory =
            s.footprint_bytes.max(s.global_transactions * line / CACHE_REUSE) / (rates.bandwidth_gbs * 1e6);
        assert!((unknown - from_memory).abs() < 1e-9 * from_memory, "{unknown} vs {from_memory}");
        // 256 KiB fit in a 1 MiB cache: the lines at the cache's bandwidth.
        p.rates = Some(Rates { cache_bytes: 1 << 20, cache_bandwidth_gbs: 400.0, ..rates.clone() });
        let cached = predict(&s, &p).global_ms;
        let lines = s.global_transactions * line / 400e6;
        assert!((cached - lines.max(s.footprint_bytes / (rates.bandwidth_gbs * 1e6))).abs() < 1e-9, "{cached}");
        // Not in a 64 KiB one.
        p.rates = Some(Rates { cache_bytes: 1 << 16, cache_bandwidth_gbs: 400.0, ..rates });
        assert_eq!(predict(&s, &p).global_ms, unknown);
    }

    #[test]
    fn strided_reads_move_more_lines() {
        let p = Profile::builtin("pocl-cpu").unwrap();
        // Threads over columns read consecutive elements; threads over rows read a row each.
        let cols =
            "size N = 256, M = 256\ndef f(a: [[f32]M]N) = mapGlb(0, fun(c => reduceSeq(add, 0.0, c)), transpose(a))";
        let rows = "size N = 256, M = 256\ndef f(a: [[f32]M]N) = mapGlb(0, fun(r => reduceSeq(add, 0.0, r)), a)";
        let (c, r) = (stats(cols, vec![64], &p), stats(rows, vec![64], &p));
        assert!(r.global_transactions > 4.0 * c.global_transactions, "{r:?} vs {c:?}");
        assert!(predict(&r, &p).global_ms > predict(&c, &p).global_ms);
    }
}
