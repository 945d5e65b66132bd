//! The launch shape: the number of dimensions, the global size and the work-group size, from
//! the extents of the parallel maps and the caller's local size; and the nesting rules the
//! parallel maps must follow to share one launch.
//!
//! With work groups (`mapWrg`/`mapLcl`), the global size is the number of groups (the largest
//! `mapWrg(d)` extent) times the local size, which is the caller's or the largest divisor of the
//! largest `mapLcl(d)` extent within a budget of 256 work items and the target's limit per
//! dimension (64 in z without a target: CUDA's). With `mapGlb` only, the global
//! size is the largest extent rounded up to a multiple of the local size (the caller's, or in
//! dimension 0 the largest divisor of the extent up to 64 (64 when that divisor is below 32),
//! in dimensions 1 and 2 one work item, unless that needs more groups than the target launches
//! (its `max_groups`, else CUDA's 65,535 in y and z): then the fewest work items that fit;
//! extra threads skip the stride loop). `mapGlb` and `mapWrg`/`mapLcl` cannot share one launch.
//! A given local size must have one work item in the dimensions no map uses.

use super::names::map_name;
use super::types::{array_len, signature};
use super::{Lower, R};
use crate::error::{CodegenError, CodegenErrorKind as K};
use crate::kir::{Launch, LoopKind};
use mapsat_ir::ast::{MapKind, Node, NodeId, Prim, Span};
use mapsat_ir::check::TypeInfo;
use mapsat_ir::Program;

/// The maps of a program with their extents: used to compute the launch shape.
pub(super) struct MapInfo {
    kind: MapKind,
    name: String,
    extent: i64,
    span: Span,
}

/// Every map of the program with its extent (the length of the array it maps over).
pub(super) fn collect_maps(p: &Program, info: &TypeInfo) -> R<Vec<MapInfo>> {
    let mut out = Vec::new();
    for (i, n) in p.nodes.iter().enumerate() {
        if let Node::Prim(Prim::Map { kind, label }) = n {
            let Some(t) = info.of(NodeId(i as u32)) else { continue };
            let (args, _) = signature(t);
            let Some(xs) = args.get(1) else { continue };
            let (extent, _) = array_len(xs)?;
            out.push(MapInfo { kind: *kind, name: map_name(*kind, label), extent, span: p.span(NodeId(i as u32)) });
        }
    }
    Ok(out)
}

/// A launch-shape error at a map.
fn launch_err(m: &MapInfo, reason: String) -> CodegenError {
    CodegenError::new(K::Launch { map: m.name.clone(), reason }, Some(m.span))
}

/// The work items per dimension a default local size stays within when the target gives no
/// limits: CUDA's block limits, also those of NVIDIA's and AMD's OpenCL devices (z is 64).
const DEFAULT_MAX_ITEMS: [i64; 3] = [1024, 1024, 64];

/// The launch shape from the map extents and the caller's local size; a local size chosen
/// here stays within the target's work items per dimension, `max_items` (else
/// [`DEFAULT_MAX_ITEMS`]).
#[allow(clippy::needless_range_loop)]
pub(super) fn launch_shape(
    maps: &[MapInfo],
    local: Option<&[i64]>,
    max_group: Option<i64>,
    max_items: Option<[i64; 3]>,
    max_groups: Option<[u64; 3]>,
) -> R<Launch> {
    // Without a target's grid limits, CUDA's in y and z.
    let grid =
        max_groups.map_or([i64::MAX, CUDA_MAX_GROUPS, CUDA_MAX_GROUPS], |g| g.map(|x| x.min(i64::MAX as u64) as i64));
    let caps = max_items.unwrap_or(DEFAULT_MAX_ITEMS).map(|c| c.max(1));
    let glb: Vec<&MapInfo> = maps.iter().filter(|m| matches!(m.kind, MapKind::Glb(_))).collect();
    let grp: Vec<&MapInfo> = maps.iter().filter(|m| matches!(m.kind, MapKind::Wrg(_) | MapKind::Lcl(_))).collect();
    if let (Some(g), Some(w)) = (glb.first(), grp.first()) {
        return Err(launch_err(
            w,
            format!("the kernel also uses `{}`; mapGlb and mapWrg/mapLcl cannot share one launch", g.name),
        ));
    }
    for m in maps {
        if m.kind.dim().is_some_and(|d| d > 2) {
            return Err(launch_err(m, "dimensions are 0, 1 and 2".into()));
        }
    }
    if let Some(l) = local {
        if l.is_empty() || l.len() > 3 || l.iter().any(|&x| x <= 0) {
            let why = format!("bad local size {l:?}: 1 to 3 positive numbers");
            return Err(CodegenError::from(K::LaunchLimit(why)));
        }
        let total = l.iter().try_fold(1i64, |a, &x| a.checked_mul(x));
        // Without a target's limit, no device runs more than 2^31 - 1 work items in a group.
        let max = max_group.unwrap_or(i32::MAX as i64);
        if total.is_none_or(|t| t > max) {
            let why = format!("local size {l:?} has more than {max} work items (the target's limit)");
            return Err(CodegenError::from(K::LaunchLimit(why)));
        }
    }
    // A given size would be dropped: a kernel without a parallel map runs in one work item.
    if let (true, true, Some(l)) = (glb.is_empty(), grp.is_empty(), local) {
        if l.iter().product::<i64>() > 1 {
            return Err(CodegenError::from(K::OneWorkItem(l.to_vec())));
        }
    }
    let used = maps.iter().filter_map(|m| m.kind.dim()).map(|d| d as u32 + 1).max().unwrap_or(1);
    // Work items in a dimension no map uses would each compute the same values.
    let mut in_use = [false; 3];
    maps.iter().filter_map(|m| m.kind.dim()).for_each(|d| in_use[d as usize] = true);
    if let Some(l) = local {
        if let Some((dim, &items)) = l.iter().enumerate().find(|(d, n)| **n > 1 && !in_use[*d]) {
            return Err(CodegenError::from(K::IdleDimension { local: l.to_vec(), dim, items }));
        }
    }
    let max_ext = |pred: &dyn Fn(MapKind) -> bool| -> [i64; 3] {
        let mut e = [1i64; 3];
        for m in maps.iter().filter(|m| pred(m.kind)) {
            if let Some(d) = m.kind.dim() {
                e[d as usize] = e[d as usize].max(m.extent);
            }
        }
        e
    };
    let mut global = [1i64; 3];
    let mut loc = [1i64; 3];
    if !grp.is_empty() {
        let groups = max_ext(&|k| matches!(k, MapKind::Wrg(_)));
        let lcl = max_ext(&|k| matches!(k, MapKind::Lcl(_)));
        // A dimension without mapWrg has one work group (`groups` is 1 there): mapLcl without
        // any mapWrg runs in a single work group (the space's rule 4 leaves it out as a
        // preference, `--mapping` lowers it as written).
        match local {
            Some(l) => {
                for d in 0..3 {
                    loc[d] = l.get(d).copied().unwrap_or(1);
                }
            }
            None => {
                let mut budget = 256i64;
                for d in 0..3 {
                    loc[d] = largest_divisor_at_most(lcl[d], budget.min(caps[d]));
                    budget /= loc[d];
                }
            }
        }
        for d in 0..3 {
            global[d] = groups[d].checked_mul(loc[d]).ok_or_else(|| {
                CodegenError::new(
                    K::LaunchLimit(format!("{} groups of {} work items overflow", groups[d], loc[d])),
                    None,
                )
            })?;
        }
    } else if !glb.is_empty() {
        let ext = max_ext(&|k| matches!(k, MapKind::Glb(_)));
        for d in 0..3 {
            loc[d] = match local {
                Some(l) => l.get(d).copied().unwrap_or(1),
                None if d == 0 => {
                    let wide = wide_local(ext[0], 64.min(caps[0]).min(max_group.unwrap_or(64).max(1)));
                    // More work items where the groups would be more than the target launches.
                    match groups(ext[0], wide) > grid[0] {
                        true => tall_local(ext[0], caps[0].min(max_group.unwrap_or(1024)), grid[0]).max(wide),
                        false => wide,
                    }
                }
                // The fewest work items that fit, up to the target's group size; where the
                // dimensions before leave too few, they take one each (the grid comes first).
                None => {
                    let group = max_group.unwrap_or(1024);
                    let most = group / loc[..d].iter().product::<i64>().max(1);
                    let fewest = tall_local(ext[d], most.min(caps[d]), grid[d]);
                    let alone = || tall_local(ext[d], group.min(caps[d]), grid[d]);
                    match groups(ext[d], fewest) > grid[d] {
                        true if groups(ext[d], alone()) <= grid[d] => {
                            loc[..d].fill(1);
                            alone()
                        }
                        _ => fewest,
                    }
                }
            };
        }
        for d in 0..3 {
            // Round up: the extra threads skip the stride loop.
            global[d] = (ext[d] / loc[d] + i64::from(ext[d] % loc[d] != 0)).checked_mul(loc[d]).ok_or_else(|| {
                CodegenError::new(
                    K::LaunchLimit(format!("{} work items rounded up to {} overflow", ext[d], loc[d])),
                    None,
                )
            })?;
        }
    }
    Ok(Launch { dims: used.max(local.map_or(1, |l| l.len() as u32)), global, local: loc })
}

/// CUDA's limit on the blocks of a grid in y and z.
const CUDA_MAX_GROUPS: i64 = 65_535;

/// The work groups of `local` work items that cover `extent`.
fn groups(extent: i64, local: i64) -> i64 {
    extent / local + i64::from(extent % local != 0)
}

/// Work items per group in dimension 1 or 2 of a `mapGlb` launch without a given local size
/// (and in dimension 0 when [`wide_local`]'s are too few): 1, unless the extent needs more than
/// `max_groups` groups (the target's, else CUDA's 65,535 in y and z); then the fewest work
/// items, within `budget`, that bring the groups under it (a divisor of the extent when one is
/// as small as twice that).
fn tall_local(extent: i64, budget: i64, max_groups: i64) -> i64 {
    if extent <= max_groups {
        return 1;
    }
    let fits = |v: i64| groups(extent, v) <= max_groups;
    let Some(least) = (2..=budget.max(1)).find(|&v| fits(v)) else { return 1 };
    (least..=(2 * least).min(budget)).find(|&v| extent % v == 0).unwrap_or(least)
}

/// Work items per group in dimension 0 of a `mapGlb` launch without a given local size: the
/// largest divisor of the extent up to `cap` (every thread then has an index, no test), unless
/// that is below half of `cap` for an extent longer than `cap`: then `cap`, the global size
/// rounded up (a prime length had groups of one work item, which leave a GPU's warps nearly
/// idle and, at 2^31 items, exceed CUDA's grid).
fn wide_local(extent: i64, cap: i64) -> i64 {
    let divisor = largest_divisor_at_most(extent, cap);
    match extent > cap && 2 * divisor < cap {
        true => cap,
        false => divisor,
    }
}

/// The largest divisor of `n` that is at most `cap` (1 at least).
fn largest_divisor_at_most(n: i64, cap: i64) -> i64 {
    (1..=cap.min(n).max(1)).rev().find(|d| n % d == 0).unwrap_or(1)
}

impl Lower<'_> {
    /// Refuses a parallel map nested where it cannot run: a dimension used twice, a `mapWrg`
    /// or `mapGlb` inside one thread, a `mapLcl` under a sequential loop inside a `mapLcl`. A
    /// `mapLcl` outside every `mapWrg` runs in each work group (in a single one when the kernel
    /// has no `mapWrg`).
    pub(super) fn check_nesting(&self, kind: MapKind, name: &str, span: Option<Span>) -> R<()> {
        let err = |reason: String| CodegenError::new(K::Launch { map: name.to_string(), reason }, span);
        for l in &self.loops {
            match (kind, l.kind) {
                (MapKind::Glb(a), LoopKind::Global(b))
                | (MapKind::Wrg(a), LoopKind::Group(b))
                | (MapKind::Lcl(a), LoopKind::Local(b))
                    if a == b =>
                {
                    return Err(err(format!("dimension {a} is already used by the enclosing `{}`", l.origin)))
                }
                (MapKind::Wrg(_), LoopKind::Local(_) | LoopKind::Global(_) | LoopKind::Seq | LoopKind::Vec)
                | (MapKind::Glb(_), LoopKind::Local(_) | LoopKind::Seq | LoopKind::Vec) => {
                    return Err(err(format!("it is nested in `{}`, which already runs in one thread", l.origin)))
                }
                (MapKind::Lcl(_), LoopKind::Global(_) | LoopKind::Seq | LoopKind::Vec)
                    if !matches!(l.kind, LoopKind::Seq) =>
                {
                    return Err(err(format!("it is nested in `{}`", l.origin)))
                }
                (MapKind::Glb(_), LoopKind::Group(_)) => {
                    return Err(err(format!("it is nested in the work-group map `{}`", l.origin)))
                }
                _ => {}
            }
        }
        if matches!(kind, MapKind::Lcl(_)) {
            if let Some(l) = self.loops.iter().find(|l| matches!(l.kind, LoopKind::Seq | LoopKind::Vec)) {
                if self.loops.iter().any(|o| matches!(o.kind, LoopKind::Local(_))) {
                    return Err(err(format!("it is nested in the sequential `{}` inside a mapLcl", l.origin)));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapglb_dimension_0_takes_a_divisor_unless_it_is_small() {
        // A divisor of at least half the cap: every thread has an index.
        assert_eq!(wide_local(4096, 64), 64);
        assert_eq!(wide_local(96, 64), 48);
        assert_eq!(wide_local(61, 64), 61);
        // A prime length took groups of one work item; now 64, the global size rounded up.
        assert_eq!(wide_local(97, 64), 64);
        assert_eq!(wide_local(1_000_003, 64), 64);
        assert_eq!(wide_local((1 << 31) - 1, 64), 64);
        // A smaller cap (a device's limit in x) is kept.
        assert_eq!(wide_local(97, 16), 16);
        assert_eq!(wide_local(97, 1), 1);
    }

    /// Without a given local size, a `mapGlb` launch takes enough work items per group for
    /// the target's grid (`max_groups`): it took its usual ones, and code generation refused
    /// the launch, where a larger group fits.
    #[test]
    fn the_default_work_group_fits_the_targets_grid() {
        let glb = |d: u8, extent: i64| MapInfo {
            kind: MapKind::Glb(d),
            name: format!("m{d}"),
            extent,
            span: Span::default(),
        };
        let l = launch_shape(&[glb(0, 256)], None, None, None, Some([1, 1, 1])).unwrap();
        assert_eq!((l.global[0], l.local[0]), (256, 256));
        let l = launch_shape(&[glb(1, 16), glb(0, 16)], None, None, None, Some([1, 1, 1])).unwrap();
        assert_eq!((l.global, l.local), ([16, 16, 1], [16, 16, 1]));
        let l =
            launch_shape(&[glb(1, 10_000_000), glb(0, 2)], None, None, None, Some([1 << 31, 65535, 65535])).unwrap();
        assert!(l.global[1] / l.local[1] <= 65535, "{l:?}");
        // Without a grid limit, as before.
        let l = launch_shape(&[glb(0, 256)], None, None, None, None).unwrap();
        assert_eq!(l.local[0], 64);
        // A given work group with work items in a dimension no map uses is refused (they each
        // computed the same values); ones of one work item there are not.
        let e = launch_shape(&[glb(0, 256)], Some(&[2, 2]), None, None, None).unwrap_err();
        assert!(e.to_string().contains("2 work items in dimension 1, which no parallel map uses"), "{e}");
        assert!(launch_shape(&[glb(0, 256)], Some(&[2, 1, 1]), None, None, None).is_ok());
        let e = launch_shape(&[glb(2, 256)], Some(&[4, 1, 2]), None, None, None).unwrap_err();
        assert!(e.to_string().contains("4 work items in dimension 0"), "{e}");
        // Where x's usual work items leave y too few for the grid, x takes one (20 million rows
        // of 64 were refused).
        let l = launch_shape(&[glb(1, 20_000_000), glb(0, 64)], None, None, None, None).unwrap();
        assert!(l.global[1] / l.local[1] <= 65535 && l.local[0] * l.local[1] <= 1024, "{l:?}");
    }

    /// A work-group size for a kernel without a parallel map is refused (it was dropped: the
    /// launch was one work item whatever was given), except one of a single work item.
    #[test]
    fn a_kernel_without_a_parallel_map_takes_no_work_group_size() {
        let seq = MapInfo { kind: MapKind::Seq, name: "mapSeq@A".into(), extent: 8, span: Span::default() };
        let maps = [seq];
        let e = launch_shape(&maps, Some(&[4]), None, None, None).unwrap_err();
        assert!(e.to_string().contains("no parallel map, so one work item runs it"), "{e}");
        for local in [None, Some(&[1, 1][..])] {
            let l = launch_shape(&maps, local, None, None, None).unwrap();
            assert_eq!((l.global, l.local), ([1, 1, 1], [1, 1, 1]));
        }
    }
}
