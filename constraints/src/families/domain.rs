//! Family 0: the codes a map may take at all.

use super::{Gen, Out};
use crate::expr::Expr;
use crate::space::Family;
use crate::Code;

/// The domain of every variable: every code, but `F` only for a map perfectly nested in its
/// outer map; each exclusion is also stated as a constraint, so that it can be explained.
pub(super) fn domains(g: &Gen, out: &mut Out) -> Vec<Vec<i64>> {
    let mut domains = Vec::new();
    for i in 0..g.len() {
        let mut dom: Vec<i64> = Code::ALL.iter().map(|c| c.to_int()).collect();
        // Fusion turns `map@A(fun(r => map@B(g, r)))` into one map over the joined array: it
        // exists only when `B` is all of `A`'s function. Without this rule a mapping could
        // fuse a map that has no outer map, or one whose outer map does more than run it, and
        // applying it (`Space::apply`) would fail.
        let parent = g.parents[i];
        if !(g.info(i).perfectly_nested && parent.is_some()) {
            dom.retain(|&c| c != Code::Fused.to_int());
            let why = if parent.is_none() {
                "it has no outer map"
            } else {
                "it is not perfectly nested in its outer map (the outer map's function is this map over the outer element, and this map's function does not use that element)"
            };
            out.push(
                Family::Domain,
                &[i],
                format!("map {} cannot be fused (F): {why}", g.label(i)),
                Expr::negate(Expr::code_is(i, Code::Fused)),
            );
        }
        domains.push(dom);
    }
    domains
}
