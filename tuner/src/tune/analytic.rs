//! The analytical cost model: a predicted run time from a kernel's counts ([`KernelStats`]) and
//! a device profile's limits and rates, after the roofline and the terms of Sioutas' AutoGPU
//! model and Anderson 2021's appendix (compute with idle lanes and idle compute units, global
//! traffic with coalescing, local-memory traffic, barriers, launch overhead).
//!
//! ```text
//! lanes     = simd_width                           work items that run in lock step
//! lane_util = X / (ceil(X / lanes) * lanes)        idle lanes of the last lock-step group
//!   X       = T (lock-step lanes: GPUs), the group's extent along local id 0 (CPUs)
//! tail      = ceil(G / CU) / (G / CU)              idle compute units in the last wave
//! compute   = lane_ops / gflops / (lane_util * busy) * tail          (lock-step lanes: GPUs)
//!           = (across / lane_util + in_item + scalar_ops * lanes) / gflops * tail    (CPUs)
//! outer     = cache_bw                  (footprint fits in the cache: `cache_bytes`)
//!           = bw * CACHE_REUSE          (otherwise)
//! first     = min(transactions, group_lines * G)                    lines each group reads first
//! across    = clamp(item_lines * G * T - first, 0, transactions - first)  read again by the group's items
//! within    = transactions - first - across                          read again by a work item
//! rate(ws)  = l1_bw if ws <= l1_bytes, else l2_bw if ws <= l2_bytes, else outer
//! sharing   = group_lines                           (lock-step lanes: GPUs)
//!           = min(bundle_lines, group_lines)        (CPUs)
//! global    = max(footprint / bw, line * (first / outer + across / rate(sharing * line)
//!                                        + within / rate(min(item_lines, group_lines) * line))) * tail
//! occupancy = resident * T / cu_items          (lock-step lanes with the profile's `cu_items`; else 1)
//!   resident = work groups a compute unit holds: min over cu_items / T, cu_registers /
//!              (registers * T) and cu_local_bytes / local bytes (at least 1)
//!   registers = private bytes / 4 + BASE_REGISTERS
//! global   /= min(1, occupancy / LATENCY_OCCUPANCY)      memory latency not hidden by other groups
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
//! accesses as coalesced (see [`KernelStats`]). `group_lines` and `item_lines` are the
//! distinct lines one work group and one work item touch (their working sets): a group reads
//! its working set once from the outer cache (the cache that serves global memory, at its
//! measured bandwidth when the profile has one, `cache_bytes`, `cache_bandwidth_gbs` from
//! `mapsat calibrate`, and the footprint fits in it; else from memory, counted by the
//! `CACHE_REUSE` factor); lines it reads again come from the first level of the compute unit's
//! caches that holds the working set of the scope that reads them again (`l1_bytes`,
//! `l2_bytes` and their bandwidths), else from the outer cache as well: a work item's for its
//! own reads again; for reads across the work items of a group, the group's on a GPU (its work
//! items run at once), on a CPU that of `simd` consecutive work items (`bundle_lines`: a work
//! group runs on one core, its work items one bundle of vector lanes after the other, so a
//! line they share is read again after one bundle's working set). A profile without these levels charges every line at the outer rate. A profile
//! without rates gets rough ones from its limits ([`rates_of`]), which is enough to rank
//! candidates but not to predict seconds.

use super::stats::{KernelStats, Lanes};
use mapsat_ir::profile::{Profile, Rates};
use serde::{Deserialize, Serialize};

/// How many times a line fetched from memory is used again from cache, on average.
pub const CACHE_REUSE: f64 = 4.0;
/// How much faster local memory (and private arrays) are than global memory.
pub const LOCAL_SPEEDUP: f64 = 8.0;
/// The cost of one barrier for one work item, in floating-point operations.
pub const BARRIER_FLOPS: f64 = 32.0;
/// Registers a work item uses besides its private memory (indices, addresses, loop counters):
/// an estimate, not measured.
pub const BASE_REGISTERS: f64 = 16.0;
/// The occupancy (resident work items over the most a compute unit holds) below which a
/// lock-step device no longer hides global-memory latency with other work: memory time grows
/// as occupancy falls below it. An estimate after the usual guidance for NVIDIA GPUs (a
/// quarter to a half of the resident warps saturate memory for streaming kernels), not
/// measured by mapsat.
pub const LATENCY_OCCUPANCY: f64 = 0.25;

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
    /// Resident work items over the most a compute unit holds ([`occupancy`]; 1 where the
    /// profile does not say).
    #[serde(default = "one")]
    pub occupancy: f64,
}

fn one() -> f64 {
    1.0
}

/// The fraction of a compute unit's work items a kernel keeps resident: as many work groups as
/// fit by work items (`cu_items`), registers (`cu_registers`, at the private bytes of a work item
/// in 32-bit registers plus [`BASE_REGISTERS`]) and local memory (`cu_local_bytes`), at least
/// one; 1 when the profile gives no `cu_items`.
pub fn occupancy(s: &KernelStats, r: &Rates) -> f64 {
    if r.cu_items == 0 {
        return 1.0;
    }
    let t = s.threads_per_group.max(1.0);
    let items = r.cu_items as f64;
    let mut groups = (items / t).floor();
    if r.cu_registers > 0 {
        let registers = (s.private_bytes / 4.0).ceil() + BASE_REGISTERS;
        groups = groups.min((r.cu_registers as f64 / (registers * t)).floor());
    }
    if r.cu_local_bytes > 0 && s.local_bytes > 0.0 {
        groups = groups.min((r.cu_local_bytes as f64 / s.local_bytes).floor());
    }
    (groups.max(1.0) * t / items).min(1.0)
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
        cu_items: 0,
        cu_registers: 0,
        cu_local_bytes: 0,
    })
}

/// The lanes and line size the counts are made for.
pub fn lanes_of(p: &Profile, reassociate: bool) -> Lanes {
    let r = rates_of(p);
    Lanes { simd: r.simd_width, line: r.line_bytes, reassociate }
}

/// The lines of a kernel's global accesses by where they are served from (see the module
/// documentation): first reads of each work group's working set, reads again across the work
/// items of a group, reads again within a work item.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reuse {
    /// Lines each work group reads first, from the outer cache or memory.
    pub first: f64,
    /// Lines read again by other work items of the same group.
    pub across: f64,
    /// Lines a work item reads again.
    pub within: f64,
}

/// Splits the transactions of `s` (see [`Reuse`]).
pub fn reuse_of(s: &KernelStats) -> Reuse {
    let lines = s.global_transactions.max(0.0);
    let first = (s.group_lines * s.groups.max(1.0)).min(lines);
    let items = s.groups.max(1.0) * s.threads_per_group.max(1.0);
    let across = (s.item_lines * items - first).clamp(0.0, lines - first);
    Reuse { first, across, within: lines - first - across }
}

/// Bytes per second of lines read again by a scope whose working set is `bytes`: the first
/// cache level it fits in (the profile's `l1_bytes`, `l2_bytes`), else `outer`.
fn level_rate(r: &Rates, bytes: f64, outer: f64) -> f64 {
    let levels = [(r.l1_bytes, r.l1_bandwidth_gbs), (r.l2_bytes, r.l2_bandwidth_gbs)];
    levels.iter().find(|(size, bw)| *size > 0 && *bw > 0.0 && bytes <= *size as f64).map_or(outer, |(_, bw)| bw * 1e9)
}

/// Global-memory time, before the tail: the footprint from memory once, and the lines the
/// accesses move: those a work group reads first from the outer cache at its bandwidth when
/// the footprint fits in it (and the profile knows the cache), else from memory with
/// [`CACHE_REUSE`]; those read again from the first cache level the reading scope's working
/// set fits in (a work group's for reads across its work items, a work item's for its own),
/// else as the first reads.
fn global_seconds(s: &KernelStats, r: &Rates) -> f64 {
    let bytes_per_s = r.bandwidth_gbs * 1e9;
    let line = f64::from(r.line_bytes);
    let cached = r.cache_bytes > 0 && r.cache_bandwidth_gbs > 0.0 && s.footprint_bytes <= r.cache_bytes as f64;
    let outer = match cached {
        true => r.cache_bandwidth_gbs * 1e9,
        false => bytes_per_s * CACHE_REUSE,
    };
    let u = reuse_of(s);
    // The working set between two reads of a line the work items of a group share: the whole
    // group's where they run at once (lock step), else that of the work items that run
    // together in vector lanes, the next ones reading it again.
    let sharing = match r.lock_step {
        true => s.group_lines,
        false => s.bundle_lines.min(s.group_lines),
    };
    let group = level_rate(r, sharing * line, outer);
    let item = level_rate(r, s.item_lines.min(s.group_lines) * line, outer);
    let lines = u.first * line / outer + u.across * line / group + u.within * line / item;
    (s.footprint_bytes / bytes_per_s).max(lines)
}

/// Predicts a kernel's run time on a device (see the module documentation).
pub fn predict(s: &KernelStats, p: &Profile) -> Prediction {
    let r = rates_of(p);
    let lanes = f64::from(r.simd_width.max(1));
    let t = s.threads_per_group.max(1.0);
    let g = s.groups.max(1.0);
    let cu = f64::from(p.compute_units.max(1));
    // Lock-step lanes take consecutive work items of the whole group; a CPU's driver
    // vectorizes across the work items along the fastest-varying local id only.
    let x = if r.lock_step { t } else { s.lane_threads.max(1.0) };
    let lane_util = x / ((x / lanes).ceil() * lanes);
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
    let occupancy = occupancy(s, &r);
    let hidden = match r.lock_step {
        true => (occupancy / LATENCY_OCCUPANCY).min(1.0),
        false => 1.0,
    };
    let global = global_seconds(s, &r) * tail / hidden;
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
        occupancy,
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
    fn a_cpu_fills_its_lanes_with_the_work_items_along_local_id_0_only() {
        let p = Profile::builtin("pocl-cpu").unwrap();
        let lanes = i64::from(rates_of(&p).simd_width);
        assert!(lanes >= 4, "{lanes}");
        // `lanes` x `lanes` elements in groups of `lanes` work items, one element each: a
        // group is a row of `m` elements times `r` rows.
        let grid = |m: i64, r: i64| {
            let n = lanes * lanes / m;
            let src = format!(
                "size N = {n}, M = {m}\ndef f(a: [[f32]M]N) = \
                 mapWrg(0, fun(t => mapLcl(1, fun(row => mapLcl(0, fun(x => x * 2.0), row)), t)), split({r}, a))"
            );
            predict(&stats(&src, vec![m, r], &p), &p)
        };
        let wide = grid(lanes, 1);
        let tall = grid(1, lanes);
        assert_eq!(wide.lane_util, 1.0);
        assert_eq!(tall.lane_util, 1.0 / lanes as f64, "{tall:?}");
        assert!(tall.compute_ms > wide.compute_ms, "{tall:?} vs {wide:?}");
    }

    #[test]
    fn lines_of_a_footprint_that_fits_in_the_cache_move_at_its_bandwidth() {
        let mut p = Profile::builtin("pocl-cpu").unwrap();
        let src = "size N = 256, M = 256\ndef f(a: [[f32]M]N) = mapGlb(0, fun(r => reduceSeq(add, 0.0, r)), a)";
        let s = stats(src, vec![64], &p);
        // No cache levels of the compute unit's own: every line from the outer cache.
        let rates = Rates { l1_bytes: 0, l2_bytes: 0, ..p.rates.clone().unwrap() };
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

    /// A CPU-like profile with two cache levels of its own: 1 KiB at 400 GB/s, 16 KiB at
    /// 200 GB/s, behind a 1 MiB cache at 100 GB/s and memory at 10 GB/s.
    fn levels() -> Profile {
        let mut p = Profile::builtin("pocl-cpu").unwrap();
        let r = p.rates.clone().unwrap();
        p.rates = Some(Rates {
            bandwidth_gbs: 10.0,
            line_bytes: 64,
            cache_bytes: 1 << 20,
            cache_bandwidth_gbs: 100.0,
            l1_bytes: 1 << 10,
            l1_bandwidth_gbs: 400.0,
            l2_bytes: 1 << 14,
            l2_bandwidth_gbs: 200.0,
            ..r
        });
        p
    }

    /// Counts of a kernel of 4 groups of 8 work items moving 1000 lines over a 640-byte
    /// footprint, with the working sets given (in lines) of a group, of the work items in
    /// vector lanes together, and of a work item.
    fn moving(group_lines: f64, bundle_lines: f64, item_lines: f64) -> KernelStats {
        KernelStats {
            groups: 4.0,
            threads_per_group: 8.0,
            global_transactions: 1000.0,
            footprint_bytes: 640.0,
            group_lines,
            bundle_lines,
            item_lines,
            ..KernelStats::default()
        }
    }

    /// Milliseconds to move `lines` 64-byte lines at `gbs` GB/s.
    fn ms(lines: f64, gbs: f64) -> f64 {
        lines * 64.0 / (gbs * 1e6)
    }

    #[test]
    fn lines_read_again_come_from_the_cache_level_the_working_set_fits_in() {
        let p = levels();
        // Groups of 10 lines (640 B, in the 1 KiB level), items of 4: the groups read 40
        // lines first from the outer cache, 4 x 32 - 40 = 88 again across items, the other 872
        // within an item, both at the first level's rate.
        let s = moving(10.0, 4.0, 4.0);
        assert_eq!(reuse_of(&s), Reuse { first: 40.0, across: 88.0, within: 872.0 });
        let fits = predict(&s, &p).global_ms;
        assert!((fits - (ms(40.0, 100.0) + ms(960.0, 400.0))).abs() < 1e-12, "{fits}");
        // Groups of 100 lines (6400 B: the second level), items of 10 (640 B: the first).
        let s = moving(100.0, 10.0, 10.0);
        assert_eq!(reuse_of(&s), Reuse { first: 400.0, across: 0.0, within: 600.0 });
        let l2 = predict(&s, &p).global_ms;
        assert!((l2 - (ms(400.0, 100.0) + ms(600.0, 400.0))).abs() < 1e-12, "{l2}");
        // Groups of 100 lines, items of 20 (1280 B: beyond the first level): 400 first, 240
        // across, 360 within, both at the second level's rate.
        let s = moving(100.0, 20.0, 20.0);
        assert_eq!(reuse_of(&s), Reuse { first: 400.0, across: 240.0, within: 360.0 });
        let both = predict(&s, &p).global_ms;
        assert!((both - (ms(400.0, 100.0) + ms(600.0, 200.0))).abs() < 1e-12, "{both}");
        assert!(fits < l2 && l2 < both, "{fits} {l2} {both}");
        // Working sets beyond both levels: every line at the outer cache's rate, as a profile
        // that knows no levels charges them.
        let s = moving(1000.0, 500.0, 500.0);
        let outer = predict(&s, &p).global_ms;
        assert!((outer - ms(1000.0, 100.0)).abs() < 1e-12, "{outer}");
        let mut unknown = p.clone();
        unknown.rates = unknown.rates.map(|r| Rates { l1_bytes: 0, l2_bytes: 0, ..r });
        assert_eq!(predict(&moving(10.0, 4.0, 4.0), &unknown).global_ms, outer);
    }

    #[test]
    fn lines_work_items_share_are_read_again_after_a_bundle_on_a_cpu_and_a_group_on_a_gpu() {
        // Groups of 100 lines (6400 B: the second level), 15 lines (960 B: the first) for the
        // work items in lanes together and for one: 400 lines first, 15 x 32 - 400 = 80 across
        // work items, 520 within one.
        let s = moving(100.0, 15.0, 15.0);
        assert_eq!(reuse_of(&s), Reuse { first: 400.0, across: 80.0, within: 520.0 });
        // A CPU (the profile's `lock_step = false`): the next bundle reads the shared lines
        // again from the first level.
        let cpu = levels();
        let t = predict(&s, &cpu).global_ms;
        assert!((t - (ms(400.0, 100.0) + ms(600.0, 400.0))).abs() < 1e-12, "{t}");
        // Lock-step lanes: the whole group runs at once, its working set is in the second level.
        let mut gpu = cpu.clone();
        gpu.rates = gpu.rates.map(|r| Rates { lock_step: true, ..r });
        let t = predict(&s, &gpu).global_ms;
        assert!((t - (ms(400.0, 100.0) + ms(80.0, 200.0) + ms(520.0, 400.0))).abs() < 1e-12, "{t}");
    }

    #[test]
    fn a_shared_vector_that_fits_the_first_level_makes_a_matrix_vector_product_faster() {
        // Each work item multiplies a row of `a` by `x`: the rows are read once, `x` by every
        // work item of a group again.
        let src = |m: i64| {
            format!(
                "size N = 64, M = {m}\ndef f(a: [[f32]M]N, x: [f32]M) = \
                 mapGlb(0, fun(r => reduceSeq(fun(acc, p => acc + p.0 * p.1), 0.0, zip(r, x))), a)"
            )
        };
        let p = levels();
        let small = stats(&src(64), vec![8], &p);
        // A group: 8 rows of 64 floats (4 lines each), x (4 lines), 8 results (1 line); an
        // item: its row, x and its result.
        assert_eq!((small.group_lines, small.item_lines), (8.0 * 4.0 + 4.0 + 1.0, 4.0 + 4.0 + 1.0));
        // 4096 floats per row: the group's 8 rows and x are beyond 16 KiB.
        let big = stats(&src(4096), vec![8], &p);
        assert_eq!((big.group_lines, big.item_lines), (8.0 * 256.0 + 256.0 + 1.0, 256.0 + 256.0 + 1.0));
        let per_line = |s: &KernelStats| predict(s, &p).global_ms / s.global_transactions;
        assert!(per_line(&small) < per_line(&big) / 2.0, "{} vs {}", per_line(&small), per_line(&big));
    }

    #[test]
    fn registers_and_local_memory_limit_occupancy_and_low_occupancy_slows_memory() {
        let p = Profile::builtin("h100").unwrap();
        let r = rates_of(&p);
        assert_eq!((r.cu_items, r.cu_registers, r.cu_local_bytes), (2048, 65536, 233472));
        let stats = |private_bytes: f64, local_bytes: f64| KernelStats {
            groups: 1024.0,
            threads_per_group: 256.0,
            global_transactions: 1e6,
            footprint_bytes: 1e6,
            private_bytes,
            local_bytes,
            ..KernelStats::default()
        };
        // 16 registers: 8 groups of 256 by work items (16 by registers): all resident.
        assert_eq!(occupancy(&stats(0.0, 0.0), &r), 1.0);
        // 240 + 16 registers: 65536 / (256 * 256) = 1 group, 256 of 2048 work items.
        assert_eq!(occupancy(&stats(960.0, 0.0), &r), 0.125);
        // 48 KiB of local memory: 233472 / 49152 = 4 groups, half the work items.
        assert_eq!(occupancy(&stats(0.0, 49152.0), &r), 0.5);
        // Below LATENCY_OCCUPANCY (0.25) global memory time grows: 0.125 doubles it.
        let (full, low) = (predict(&stats(0.0, 0.0), &p), predict(&stats(960.0, 0.0), &p));
        assert_eq!(low.occupancy, 0.125);
        assert!((low.global_ms - 2.0 * full.global_ms).abs() < 1e-9 * full.global_ms, "{low:?} vs {full:?}");
        // A CPU profile has no occupancy term.
        let cpu = Profile::builtin("pocl-cpu").unwrap();
        assert_eq!(predict(&stats(960.0, 0.0), &cpu).occupancy, 1.0);
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
