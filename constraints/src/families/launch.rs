//! Family 12: one launch shape for the whole program. mapsat's code generator emits one kernel
//! with one NDRange, so every map must fit that single launch.

use super::{Gen, Out};
use crate::expr::{Expr, Term};
use crate::space::Family;
use crate::Code;

/// The rules of family 12, in generation order.
pub(super) fn one_launch(g: &Gen, out: &mut Out) {
    global_or_grouped(g, out);
    for i in 0..g.len() {
        let outer = g.outer(i);
        if outer.is_empty() {
            continue;
        }
        groups_outermost(g, out, i, &outer);
        if outer.len() >= 2 {
            one_local_level(g, out, i, &outer);
        }
    }
}

/// A kernel indexes its threads either by global ids (`mapGlb`) or by work-group and local ids
/// (`mapWrg`, `mapLcl`), not both: the two need different launch shapes (any global size, or
/// a whole number of work groups), and one kernel has one.
fn global_or_grouped(g: &Gen, out: &mut Out) {
    let all: Vec<usize> = (0..g.len()).collect();
    out.push(
        Family::Launch,
        &all,
        "one kernel uses either global thread ids (mapGlb) or work-group and local ids (mapWrg, mapLcl), \
         not both"
            .to_string(),
        Expr::negate(Expr::And(vec![
            Expr::Or(all.iter().map(|&i| Expr::global(Term::Eff(i))).collect()),
            Expr::Or(all.iter().map(|&i| Expr::grouped(Term::Eff(i))).collect()),
        ])),
    );
}

/// Map `i` is not a `mapWrg` or `mapGlb` inside one of its `outer` maps that runs within a
/// work group (S, F, V or `mapLcl`). Such a loop runs inside one thread or one work group:
/// the work-group or global map in it would spread over threads that are not there to run it.
fn groups_outermost(g: &Gen, out: &mut Out, i: usize, outer: &[usize]) {
    let mut maps = outer.to_vec();
    maps.push(i);
    out.push(
        Family::Launch,
        &maps,
        format!(
            "map {} is nested in {}: a mapWrg or mapGlb is not nested in a sequential, vectorized or \
             local map (it would run in one thread)",
            g.label(i),
            g.names(outer)
        ),
        Expr::negate(Expr::And(vec![
            Expr::negate(Expr::within_group(Term::Eff(i))),
            Expr::Or(outer.iter().map(|&o| Expr::within_group(Term::Eff(o))).collect()),
        ])),
    );
}

/// Map `i` is not a `mapLcl` inside a sequential map (of its `outer` maps) when the work
/// group's threads already run an outer `mapLcl`. Each thread of the outer `mapLcl` would run
/// the sequential loop, and the inner `mapLcl` in it would need the whole work group again:
/// local parallelism nested in itself, which one level of local ids cannot express.
fn one_local_level(g: &Gen, out: &mut Out, i: usize, outer: &[usize]) {
    let mut maps = outer.to_vec();
    maps.push(i);
    out.push(
        Family::Launch,
        &maps,
        format!(
            "map {} is nested in {}: no mapLcl nested in a sequential map in a work group whose \
             threads already run an outer mapLcl",
            g.label(i),
            g.names(outer)
        ),
        Expr::negate(Expr::And(vec![
            Expr::local(Term::Eff(i)),
            // A map fused into its outer map is that map's loop, checked by its own instance.
            Expr::negate(Expr::code_is(i, Code::Fused)),
            Expr::Or(outer.iter().map(|&o| Expr::within_thread(Term::Eff(o))).collect()),
            Expr::Or(outer.iter().map(|&o| Expr::local(Term::Eff(o))).collect()),
        ])),
    );
}
