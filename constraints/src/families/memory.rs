//! Families 1 and 2: memory scoping. Private memory belongs to one thread and local memory to
//! one work group: a map touching them must run where that memory is visible.

use super::{Gen, Out};
use crate::expr::{Expr, Term};
use crate::space::Family;
use crate::Code;
use mapsat_ir::ast::AddressSpace;

/// (1) A map that writes or reads private memory runs within one thread (S, F or V). Each
/// thread has its own private memory: were the map parallel, its threads would read elements
/// of the buffer that other threads wrote in their own private memory, which they never see.
pub(super) fn private_scope(g: &Gen, out: &mut Out) {
    for (i, m) in g.vars() {
        if g.a.uses_space(m, AddressSpace::Private) {
            out.push(
                Family::PrivateScope,
                &[i],
                format!("map {} accesses private memory: it must run within one thread (S, F or V)", g.label(i)),
                Expr::within_thread(Term::Code(i)),
            );
        }
    }
}

/// (2) A map that writes or reads local memory, in each chain through it, either runs inside a
/// work group that holds the buffer ([`in_work_group`]), or uses the buffer as a work item's own
/// scratch space ([`work_item_scratch`]).
pub(super) fn local_scope(g: &Gen, out: &mut Out) {
    for (i, m) in g.vars() {
        if !g.a.uses_space(m, AddressSpace::Local) {
            continue;
        }
        for chain in g.chains.iter().filter(|c| c.contains(&i)) {
            let pos = chain.iter().position(|&x| x == i).unwrap_or(0);
            let outer = &chain[..pos];
            let mut maps = vec![i];
            maps.extend(outer.iter().copied());
            out.push(
                Family::LocalScope,
                &maps,
                format!(
                    "map {} accesses local memory: it must be local or sequential, inside a mapWrg, and \
                     every work-group dimension of its chain ({}) must be used by a map outside it (local memory is not \
                     shared between work groups: out-of-scope reads); or, as a work item's own scratch space, run \
                     within one work item (S, F or V) of a mapGlb around the buffer",
                    g.label(i),
                    g.names(chain)
                ),
                Expr::Or(vec![in_work_group(i, outer, chain), work_item_scratch(g, i, m)]),
            );
        }
    }
}

/// The paper's rule 2 for map `i` under the maps `outer` of `chain`: it is local or sequential
/// (a `mapWrg` or `mapGlb` would spread the buffer's elements over work groups, and a work
/// group cannot read another's local memory), some outer map is a `mapWrg` (local memory is
/// allocated per work group), and every work-group dimension the chain uses is used outside
/// the map (a `mapWrg(d)` inside it would split the buffer's users over work groups).
fn in_work_group(i: usize, outer: &[usize], chain: &[usize]) -> Expr {
    let mut parts = vec![
        Expr::within_group(Term::Code(i)),
        Expr::Or(outer.iter().map(|&o| Expr::work_group(Term::Eff(o))).collect()),
    ];
    for w in 0..3 {
        let mut alts: Vec<Expr> = outer.iter().map(|&o| Expr::code_is(o, Code::Wrg(w))).collect();
        alts.push(Expr::negate(Expr::any_code(chain, Code::Wrg(w))));
        parts.push(Expr::Or(alts));
    }
    Expr::And(parts)
}

/// mapsat: map `i` (analysed map `m`) runs within one work item, and each local buffer it
/// touches lies inside a `mapGlb`. Code generation gives each work item its own slice of such
/// a buffer, so only the work item's own accesses are safe; the paper's rule is vacuous
/// without work groups.
fn work_item_scratch(g: &Gen, i: usize, m: usize) -> Expr {
    let buffers = g.a.buffers_used(m, AddressSpace::Local).into_iter().map(|b| {
        let around = g.context(g.a.buffers[b].top);
        Expr::Or(around.into_iter().map(|o| Expr::global(Term::Eff(o))).collect())
    });
    Expr::And(std::iter::once(Expr::within_thread(Term::Eff(i))).chain(buffers).collect())
}
