//! Loop splitting by the moduli of its indices: a clean-up pass run before the others.
//!
//! A sequential loop over a joined array (`reduceSeq` over `joinND3(window)`, a copy of a
//! flattened tile) indexes it through divisions and remainders of its variable: `i / 96`,
//! `i / 32 % 3`, `i % 32` for 3 x 3 x 32 elements. Each iteration then divides, and its pad
//! guards change from one iteration to the next, so the device compiler neither hoists them nor
//! vectorizes the innermost run of contiguous elements. When the moduli `m1 | m2 | ... | extent`
//! form a chain, the loop becomes a nest (`i = a * 96 + b * 32 + c`, `a < 3`, `b < 3`, `c < 32`)
//! and the simplifier of [`crate::index`] turns every `i / 96` into `a`, `i / 32 % 3` into `b`
//! and `i % 32` into `c`. The loop runs the same iterations in the same order.

use crate::index::{Atom, Index, Ranges};
use crate::kir::*;
use crate::visit::{for_each_index, map_indices};
use std::collections::BTreeSet;

/// Splits every sequential loop whose indices use a chain of moduli of its variable.
pub(crate) fn split_loops(k: &mut Kernel) {
    let body = std::mem::take(&mut k.body);
    k.body = stmts(k, body);
}

fn stmts(k: &mut Kernel, body: Vec<Stmt>) -> Vec<Stmt> {
    body.into_iter().map(|s| stmt(k, s)).collect()
}

fn stmt(k: &mut Kernel, s: Stmt) -> Stmt {
    match s {
        Stmt::Loop { var, kind, extent, stride, trips, origin, body } => {
            let body = stmts(k, body);
            let plain = kind == LoopKind::Seq && trips == Trips::Loop && stride == 1;
            let chain = if plain { moduli(&body, var, extent) } else { Vec::new() };
            if chain.is_empty() {
                return Stmt::Loop { var, kind, extent, stride, trips, origin, body };
            }
            nest(k, var, extent, &chain, origin, body)
        }
        Stmt::Block(b) => Stmt::Block(stmts(k, b)),
        s => s,
    }
}

/// The moduli `m` of `var` (in `var / m` or `var % m`) that form a divisibility chain ending
/// in `extent`, increasing.
fn moduli(body: &[Stmt], var: VarId, extent: i64) -> Vec<i64> {
    let mut found = BTreeSet::new();
    for_each_index(body, |i| collect(i, var, &mut found));
    let mut chain: Vec<i64> = Vec::new();
    for m in found {
        let divides_previous = chain.last().is_none_or(|p| m % p == 0);
        if m > 1 && m < extent && extent % m == 0 && divides_previous {
            chain.push(m);
        }
    }
    chain
}

fn collect(i: &Index, var: VarId, out: &mut BTreeSet<i64>) {
    for (a, _) in &i.terms {
        match a {
            Atom::Div(e, m) | Atom::Rem(e, m) => {
                if **e == Index::var(var) {
                    out.insert(*m);
                }
                collect(e, var, out);
            }
            Atom::Clamp(e, ..) => collect(e, var, out),
            Atom::Var(_) | Atom::Wide(_) => {}
        }
    }
}

/// The loop over `var` as a nest of loops, outermost first, with `var` replaced in `body`.
fn nest(k: &mut Kernel, var: VarId, extent: i64, chain: &[i64], origin: String, body: Vec<Stmt>) -> Stmt {
    // Extents, outermost first: extent / m_last, ..., m2 / m1, m1.
    let mut bounds: Vec<i64> = chain.iter().rev().copied().collect();
    bounds.push(1);
    let mut levels: Vec<(VarId, i64, i64)> = Vec::new(); // (variable, extent, weight)
    let mut above = extent;
    for (j, &weight) in bounds.iter().enumerate() {
        let v = fresh_var(k, var, j);
        levels.push((v, above / weight, weight));
        above = weight;
    }
    let mut ranges = Ranges::default();
    let mut value = Index::default();
    for &(v, n, w) in &levels {
        ranges.set(v, 0, n - 1);
        value = value.add(&Index::var(v).scale(w));
    }
    let subst = |v: VarId| (v == var).then(|| value.clone());
    let mut body = body;
    map_indices(&mut body, |i| i.rebuild(&subst, &ranges));
    for (depth, &(v, n, _)) in levels.iter().enumerate().rev() {
        let origin = if depth == 0 { origin.clone() } else { format!("{origin} (split)") };
        body = vec![Stmt::Loop { var: v, kind: LoopKind::Seq, extent: n, stride: 1, trips: Trips::Loop, origin, body }];
    }
    body.pop().unwrap_or(Stmt::Block(Vec::new()))
}

/// A new variable named after `var` (`i` gives `i_0`, `i_1`, ...; a name in use is skipped).
fn fresh_var(k: &mut Kernel, var: VarId, level: usize) -> VarId {
    let base = k.var_name(var).into_owned();
    let taken = |n: &str| k.vars.iter().any(|v| v == n) || k.buffers.iter().any(|b| b.name == n);
    let mut name = format!("{base}_{level}");
    let mut extra = 0;
    while taken(&name) {
        extra += 1;
        name = format!("{base}_{level}_{extra}");
    }
    k.vars.push(name);
    VarId(k.vars.len() as u32 - 1)
}

#[cfg(test)]
mod tests {
    use crate::{lower, print, Dialect, Options};

    fn kernel(src: &str) -> String {
        let p = mapsat_ir::parse(src).expect("parses");
        print(&lower(&p, &Options::default()).expect("lowers"), Dialect::OpenCl).expect("prints")
    }

    #[test]
    fn a_reduction_over_a_joined_transpose_becomes_a_nest_without_divisions() {
        // Element i of join(transpose(x)) is x[i % 3][i / 3]: the loop becomes i = a * 3 + b.
        let k = kernel(
            "size N = 8\ndef s(xs: [[[f32]4]3]N) = \
             mapGlb@A(0, fun(x => reduceSeq(fun(a, v => a + v), 0.0, join(transpose(x)))), xs)",
        );
        assert!(k.contains("for (int i_0 = 0; i_0 < 4; i_0++)"), "{k}");
        assert!(k.contains("for (int i_1 = 0; i_1 < 3; i_1++)"), "{k}");
        assert!(k.contains("xs[i_x * 12 + i_1 * 4 + i_0]"), "{k}");
        assert!(!k.contains(" / ") && !k.contains(" % "), "{k}");
    }

    #[test]
    fn a_loop_without_divisions_is_left_alone() {
        let k = kernel(
            "size N = 8\ndef s(xs: [[[f32]4]3]N) = \
             mapGlb@A(0, fun(x => reduceSeq(fun(a, v => a + v), 0.0, join(x))), xs)",
        );
        assert!(k.contains("for (int i = 0; i < 12; i++)") && !k.contains("(split)"), "{k}");
    }
}
