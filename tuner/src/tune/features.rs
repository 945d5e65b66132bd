//! The learned model's input: a fixed-length vector per candidate, computed from the lowered
//! kernel (counts of [`KernelStats`]), the launch, the mapping's codes, the device's limits and
//! the analytical model's terms (AutoTVM's and Ansor's kinds of features, `log2(1 + x)` scaled).
//!
//! The vector does not depend on the program's size or map labels, so a model trained on one
//! program ranks the candidates of another (transfer). Its layout is versioned:
//! [`FEATURES_VERSION`] is stored with every saved model and checked when one is loaded.

use super::analytic::Prediction;
use super::stats::KernelStats;
use mapsat_codegen::kir::Launch;
use mapsat_constraints::Code;
use mapsat_ir::profile::Profile;

/// The version of the feature layout; bump it whenever [`NAMES`] changes, or what a feature
/// counts (2: loads, selections and bounds tests a block repeats are counted once; 3: the
/// working sets of a work group, a bundle of work items and a work item, the analytical global
/// term serves lines read again from the cache level they fit in, private arrays promoted to
/// scalars are registers, not private accesses, and a store to a value declared in a loop's
/// body is no sum vectorized along that loop; 4: no statement runs in vector lanes across work
/// items inside a parallel loop of several indices per work item, and a CPU's lanes hold the
/// work items along local id 0 only; 5: the analytical model's occupancy, and its global term
/// grows with low occupancy on lock-step devices whose profile gives a compute unit's figures).
pub const FEATURES_VERSION: u32 = 5;

/// The name of each feature, in order.
pub const NAMES: [&str; 62] = [
    "threads_per_group",
    "groups",
    "groups_per_cu",
    "threads",
    "local_x",
    "local_y",
    "local_z",
    "global_x",
    "global_y",
    "global_z",
    "busy_fraction",
    "lane_util",
    "tail",
    "occupancy",
    "lane_ops",
    "flops",
    "redundancy",
    "global_loads",
    "global_stores",
    "broadcast_fraction",
    "coalesced_fraction",
    "strided_fraction",
    "global_transactions",
    "global_bytes",
    "transactions_per_thread",
    "flops_per_global_byte",
    "flops_per_transaction",
    "local_accesses",
    "private_accesses",
    "vector_fraction",
    "barriers_per_group",
    "barrier_sites",
    "depth",
    "seq_iterations_per_thread",
    "level0_extent",
    "level1_extent",
    "level2_extent",
    "level3_extent",
    "level4_extent",
    "level5_extent",
    "level0_kind",
    "level1_kind",
    "level2_kind",
    "level3_kind",
    "level4_kind",
    "level5_kind",
    "local_bytes",
    "local_bytes_of_limit",
    "private_bytes",
    "private_bytes_of_limit",
    "footprint_bytes",
    "group_working_set_lines",
    "bundle_working_set_lines",
    "item_working_set_lines",
    "predicted_ms",
    "compute_ms",
    "global_ms",
    "local_ms",
    "barrier_ms",
    "codes_within_thread",
    "codes_local",
    "codes_group_or_global",
];

fn lg(x: f64) -> f64 {
    (1.0 + x.max(0.0)).log2()
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// The feature vector of one candidate (see the module documentation).
pub fn features(s: &KernelStats, launch: &Launch, pred: &Prediction, codes: &[Code], p: &Profile) -> Vec<f64> {
    let global_accesses = s.global_loads + s.global_stores;
    let threads = launch.global.iter().product::<i64>() as f64;
    let n = codes.len().max(1) as f64;
    let share = |f: &dyn Fn(&Code) -> bool| codes.iter().filter(|c| f(c)).count() as f64 / n;
    let mut v = vec![
        lg(s.threads_per_group),
        lg(s.groups),
        ratio(s.groups, f64::from(p.compute_units.max(1))).min(64.0),
        lg(threads),
        lg(launch.local[0] as f64),
        lg(launch.local[1] as f64),
        lg(launch.local[2] as f64),
        lg(launch.global[0] as f64),
        lg(launch.global[1] as f64),
        lg(launch.global[2] as f64),
        s.busy_fraction,
        pred.lane_util,
        lg(pred.tail),
        pred.occupancy,
        lg(s.lane_ops),
        lg(s.flops),
        lg(ratio(s.lane_ops, s.flops)),
        lg(s.global_loads),
        lg(s.global_stores),
        ratio(s.global_broadcast, global_accesses),
        ratio(s.global_coalesced, global_accesses),
        ratio(s.global_strided, global_accesses),
        lg(s.global_transactions),
        lg(s.global_bytes),
        lg(ratio(s.global_transactions, threads)),
        lg(ratio(s.lane_ops, s.global_bytes)),
        lg(ratio(s.lane_ops, s.global_transactions)),
        lg(s.local_accesses),
        lg(s.private_accesses),
        ratio(s.vector_accesses, global_accesses + s.local_accesses + s.private_accesses),
        lg(s.barriers_per_group),
        lg(s.barrier_sites),
        s.depth,
        lg(s.seq_iterations_per_thread),
    ];
    v.extend(s.level_extents.iter().map(|&e| lg(e)));
    v.extend(s.level_kinds.iter().copied());
    v.extend([
        lg(s.local_bytes),
        ratio(s.local_bytes, p.local_mem_bytes as f64),
        lg(s.private_bytes),
        ratio(s.private_bytes, p.private_mem_bytes as f64),
        lg(s.footprint_bytes),
        lg(s.group_lines),
        lg(s.bundle_lines),
        lg(s.item_lines),
        lg(pred.total_ms * 1e3),
        lg(pred.compute_ms * 1e3),
        lg(pred.global_ms * 1e3),
        lg(pred.local_ms * 1e3),
        lg(pred.barrier_ms * 1e3),
        share(&|c| matches!(c, Code::Seq | Code::Fused | Code::Vec)),
        share(&|c| matches!(c, Code::Lcl(_))),
        share(&|c| matches!(c, Code::Wrg(_) | Code::Glb(_))),
    ]);
    debug_assert_eq!(v.len(), NAMES.len());
    v
}
