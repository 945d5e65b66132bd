//! Family 11: device limits, and the local sizes `ls0..ls2` (tuning parameters) they bound.

use super::{Gen, Out};
use crate::expr::{Expr, Term};
use crate::space::Family;
use crate::Code;
use mapsat_ir::ast::AddressSpace;
use mapsat_ir::profile::Profile;

/// The rules of family 11; returns the candidate values of each local size (none when
/// `needs_local_sizes` is false: then the space has no tuning parameter).
pub(super) fn device_limits(g: &Gen, out: &mut Out, needs_local_sizes: bool) -> Vec<Vec<i64>> {
    let ls_domains = if needs_local_sizes { local_sizes(g, out) } else { Vec::new() };
    if let Some(prof) = &g.options.profile {
        if !ls_domains.is_empty() {
            work_group_size(out, prof);
        }
        if prof.max_dims < 3 {
            ndrange_dims(g, out, prof);
        }
        if let Some(max) = prof.max_groups {
            groups(g, out, prof, max);
        }
        memory(g, out, prof);
    }
    ls_domains
}

/// The local size of each dimension `d` takes a candidate value: a divisor of some map's
/// length or a power of two, at most the device's largest work-item size in `d` (1024 without
/// a profile; a larger local size cannot be launched), and [`fits`] its `mapLcl(d)` loops.
/// Candidates are also at most the work-group size limit, which a work group of that many
/// work items in one dimension would pass.
fn local_sizes(g: &Gen, out: &mut Out) -> Vec<Vec<i64>> {
    let max_item = g.options.profile.as_ref().map(|p| p.max_work_item_sizes).unwrap_or([1024; 3]);
    let max_group = g.options.profile.as_ref().map_or(i64::MAX, |p| p.max_work_group_size.min(i64::MAX as u64) as i64);
    let mut ls_domains = Vec::new();
    for (d, &max_d) in max_item.iter().enumerate() {
        let max_d = max_d as i64;
        let mut cand: Vec<i64> =
            (0..g.len()).filter_map(|i| g.info(i).extent).flat_map(|n| g.local_divisors(n)).collect();
        // The powers of two up to the limit (which may be as large as i64 allows).
        cand.extend((0..63).map(|k| 1i64 << k).take_while(|p| *p <= max_d));
        cand.retain(|&v| v >= 1 && v <= max_d.min(max_group));
        cand.sort_unstable();
        cand.dedup();
        ls_domains.push(cand.clone());
        out.push_search_only(
            Family::DeviceLimits,
            format!("local size ls{d} is a candidate value (a divisor of a map's length, or a power of two)"),
            Expr::In(Term::Ls(d), cand),
        );
        out.push(
            Family::DeviceLimits,
            &[],
            format!("local size ls{d} at most {max_d}"),
            Expr::negate(Expr::Lt(Term::Const(max_d), Term::Ls(d))),
        );
        out.push(
            Family::DeviceLimits,
            &[],
            format!("local size ls{d} is 1, or at most the length of the longest mapLcl({d}) loop"),
            fits(g, d as u8),
        );
    }
    ls_domains
}

/// `ls{d}` is 1, or at most the length of the longest `mapLcl(d)` loop: more threads would only
/// idle in every loop, and duplicate every mapping's local-size solutions. It need not divide
/// a loop's length: code generation hands out the iterations round by round (the threads past
/// the end skip the last round), and asks it only of the loops a barrier lies in (family 10).
/// A tile copied with its halo (10 iterations) and then computed (8 iterations) may take 8 or
/// 10 threads, not only the 2 that divide both.
fn fits(g: &Gen, d: u8) -> Expr {
    let mut any = vec![Expr::Eq(Term::Ls(d as usize), Term::Const(1))];
    for i in 0..g.len() {
        let lcl = Expr::code_is(i, Code::Lcl(d));
        any.push(match g.info(i).extent {
            Some(n) => Expr::And(vec![lcl, Expr::negate(Expr::Lt(Term::Const(n), Term::Ls(d as usize)))]),
            None => lcl,
        });
    }
    Expr::Or(any)
}

/// The work-group size `ls0*ls1*ls2` is at most the device's: a larger one fails to launch.
fn work_group_size(out: &mut Out, prof: &Profile) {
    out.push(
        Family::DeviceLimits,
        &[],
        format!("work-group size ls0*ls1*ls2 at most {} ({})", prof.max_work_group_size, prof.name),
        Expr::negate(Expr::Lt(
            Term::Const(prof.max_work_group_size as i64),
            Term::Mul(vec![Term::Ls(0), Term::Ls(1), Term::Ls(2)]),
        )),
    );
}

/// No more work groups in a dimension than the device launches (CUDA's grid: 65,535 blocks in
/// y and z): a `mapWrg(d)` runs one group per iteration, so its length is at most the limit. A
/// `mapGlb(d)` is bound only by the largest launch, `limit` groups of the device's most work
/// items in `d`: its kernel has no `mapLcl` (they cannot share a launch), so the local sizes of
/// the space are not its work group; code generation chooses it (and `explain` under a profile
/// checks the launch it chooses).
fn groups(g: &Gen, out: &mut Out, prof: &Profile, max: [u64; 3]) {
    for i in 0..g.len() {
        let Some(n) = g.info(i).extent else { continue };
        for (d, &m) in max.iter().enumerate() {
            let m = i64::try_from(m).unwrap_or(i64::MAX);
            if n <= m {
                continue;
            }
            let label = g.label(i);
            out.push(
                Family::DeviceLimits,
                &[i],
                format!("map {label} of length {n} as mapWrg({d}): {n} work groups, {} launches at most {m} in dimension {d}", prof.name),
                Expr::negate(Expr::code_is(i, Code::Wrg(d as u8))),
            );
            let items = i64::try_from(prof.max_work_item_sizes[d]).unwrap_or(i64::MAX);
            if n / items + i64::from(n % items != 0) > m {
                out.push(
                    Family::DeviceLimits,
                    &[i],
                    format!("map {label} of length {n} as mapGlb({d}): more than {m} work groups of {items} work items, the most {} launches in dimension {d}", prof.name),
                    Expr::negate(Expr::code_is(i, Code::Glb(d as u8))),
                );
            }
        }
    }
}

/// No map uses an NDRange dimension the device does not have: such a kernel cannot be
/// launched.
fn ndrange_dims(g: &Gen, out: &mut Out, prof: &Profile) {
    for i in 0..g.len() {
        let bad = Code::ALL
            .iter()
            .filter(|c| matches!(c, Code::Lcl(d) | Code::Wrg(d) | Code::Glb(d) if *d as u32 >= prof.max_dims))
            .map(|c| c.to_int())
            .collect();
        out.push(
            Family::DeviceLimits,
            &[i],
            format!("map {}: {} has {} NDRange dimensions", g.label(i), prof.name, prof.max_dims),
            Expr::negate(Expr::In(Term::Code(i), bad)),
        );
    }
}

/// The `toLocal` buffers fit in a work group's local memory, and the `toPrivate` buffers in a
/// thread's private memory, at the analysed sizes: a kernel asking for more fails to build or
/// to launch (or spills private memory to global memory). Whether a buffer fits does not
/// depend on the mapping: the constraint is a constant, false when it does not fit.
fn memory(g: &Gen, out: &mut Out, prof: &Profile) {
    if let Some((maps, t)) = footprint(g, AddressSpace::Local) {
        out.push(
            Family::DeviceLimits,
            &maps,
            format!(
                "local memory: the toLocal buffers take {t} bytes at these sizes; {} has {} per work group",
                prof.name, prof.local_mem_bytes
            ),
            Expr::Bool(t <= prof.local_mem_bytes as i64),
        );
    }
    if let Some((maps, t)) = footprint(g, AddressSpace::Private) {
        out.push(
            Family::DeviceLimits,
            &maps,
            format!(
                "private memory: the toPrivate buffers take {t} bytes per thread at these sizes; {} has {}",
                prof.name, prof.private_mem_bytes
            ),
            Expr::Bool(t <= prof.private_mem_bytes as i64),
        );
    }
}

/// The variables writing the allocated buffers of `space` and the buffers' total size in bytes
/// (`None` when there is no such buffer, or a size is unknown).
fn footprint(g: &Gen, space: AddressSpace) -> Option<(Vec<usize>, i64)> {
    let buffers: Vec<_> = g.a.buffers.iter().filter(|b| !b.merged && b.space() == space).collect();
    if buffers.is_empty() {
        return None;
    }
    let total: i64 = buffers.iter().map(|b| b.bytes).sum::<Option<i64>>()?;
    Some((buffers.iter().filter_map(|b| g.var_of(b.top)).collect(), total))
}
