//! All binder handling: free variables, shifting and β-reduction of de Bruijn terms.
//!
//! Following shine, substitution and shifting are computed on *terms* (a class's representative,
//! extracted from the e-graph) and the result is added back, instead of being represented by
//! explicit substitution e-nodes (which make the e-graph blow up, see the research notes). The
//! e-graph side only needs the may-free variable sets of [`crate::analysis`], computed here node by
//! node. Another e-graph (slotted, with names instead of indices) would replace this module.

use crate::lang::Lift;
use egg::Language as _;
use egg::{Id, RecExpr};
use std::collections::BTreeSet;

/// The free de Bruijn indices of a node given those of its children (indices relative to the
/// node: a lambda's body's index 0 is bound by the lambda).
pub fn node_free(node: &Lift, child: impl Fn(Id) -> BTreeSet<u32>) -> BTreeSet<u32> {
    match node {
        Lift::Var(k, _) => BTreeSet::from([*k]),
        Lift::Param(_) | Lift::Lit(_) | Lift::Prim(_) => BTreeSet::new(),
        Lift::App([f, a]) => child(*f).union(&child(*a)).copied().collect(),
        Lift::Lam(_, [b]) => unbind(&child(*b)),
        Lift::Let([v, b]) => child(*v).union(&unbind(&child(*b))).copied().collect(),
    }
}

/// The free variables of a binder's body as seen outside the binder.
fn unbind(free: &BTreeSet<u32>) -> BTreeSet<u32> {
    free.iter().filter(|&&k| k > 0).map(|k| k - 1).collect()
}

/// The free de Bruijn indices of a term.
pub fn free_vars(expr: &RecExpr<Lift>) -> BTreeSet<u32> {
    let mut sets: Vec<BTreeSet<u32>> = Vec::with_capacity(expr.len());
    for node in expr.as_ref() {
        let s = node_free(node, |c| sets[usize::from(c)].clone());
        sets.push(s);
    }
    sets.pop().unwrap_or_default()
}

/// The root of a term.
fn root(expr: &RecExpr<Lift>) -> Option<Id> {
    expr.as_ref().len().checked_sub(1).map(Id::from)
}

/// What replaces a free variable: given its index outside the term and the binders crossed.
type VarFn<'a> = dyn FnMut(u32, u32, &mut RecExpr<Lift>) -> Option<Id> + 'a;

/// Copies the term at `id` into `out`, replacing each free variable (index `k >= depth`, where
/// `depth` binders were crossed) by what `var` returns for `(k - depth, depth)`.
fn rebuild(expr: &RecExpr<Lift>, id: Id, depth: u32, out: &mut RecExpr<Lift>, var: &mut VarFn) -> Option<Id> {
    let node = &expr[id];
    let new = match node {
        Lift::Var(k, _) if *k >= depth => return var(*k - depth, depth, out),
        Lift::Var(..) | Lift::Param(_) | Lift::Lit(_) | Lift::Prim(_) => node.clone(),
        Lift::App([f, a]) => {
            let f = rebuild(expr, *f, depth, out, var)?;
            let a = rebuild(expr, *a, depth, out, var)?;
            Lift::App([f, a])
        }
        Lift::Lam(ann, [b]) => Lift::Lam(ann.clone(), [rebuild(expr, *b, depth + 1, out, var)?]),
        Lift::Let([v, b]) => {
            let v = rebuild(expr, *v, depth, out, var)?;
            let b = rebuild(expr, *b, depth + 1, out, var)?;
            Lift::Let([v, b])
        }
    };
    Some(out.add(new))
}

/// The type annotation of free variable `k` (relative to the root), found anywhere in the term.
fn var_type(expr: &RecExpr<Lift>, id: Id, depth: u32, k: u32) -> Option<mapsat_ir::Type> {
    match &expr[id] {
        Lift::Var(j, t) if *j == k + depth => t.clone(),
        Lift::Var(..) | Lift::Param(_) | Lift::Lit(_) | Lift::Prim(_) => None,
        Lift::App([f, a]) => var_type(expr, *f, depth, k).or_else(|| var_type(expr, *a, depth, k)),
        Lift::Lam(_, [b]) => var_type(expr, *b, depth + 1, k),
        Lift::Let([v, b]) => var_type(expr, *v, depth, k).or_else(|| var_type(expr, *b, depth + 1, k)),
    }
}

/// Shifts the free variables of `expr` with index at least `cutoff` by `d` (the term moves under
/// `d` more binders, or out of `-d` binders). `None` when a variable would become negative, i.e.
/// the term uses a binder it is moved out of: the caller's "not free" condition was violated.
pub fn shift(expr: &RecExpr<Lift>, d: i64, cutoff: u32) -> Option<RecExpr<Lift>> {
    let mut out = RecExpr::default();
    let r = root(expr)?;
    let types: Vec<Option<mapsat_ir::Type>> =
        (0..=free_vars(expr).last().copied().unwrap_or(0)).map(|k| var_type(expr, r, 0, k)).collect();
    rebuild(expr, r, 0, &mut out, &mut |k, depth, out| {
        let ty = types.get(k as usize).cloned().flatten();
        let k2 = if k >= cutoff { i64::from(k) + d } else { i64::from(k) };
        let k2 = u32::try_from(k2).ok()?;
        Some(out.add(Lift::Var(k2 + depth, ty)))
    })?;
    Some(out)
}

/// β-reduction of `(fun => body) arg`: `body` with variable 0 replaced by `arg` (shifted under the
/// binders it crosses) and its other free variables lowered by one.
pub fn beta(body: &RecExpr<Lift>, arg: &RecExpr<Lift>) -> Option<RecExpr<Lift>> {
    let mut out = RecExpr::default();
    let r = root(body)?;
    let types: Vec<Option<mapsat_ir::Type>> =
        (0..=free_vars(body).last().copied().unwrap_or(0)).map(|k| var_type(body, r, 0, k)).collect();
    rebuild(body, r, 0, &mut out, &mut |k, depth, out| {
        if k == 0 {
            let moved = shift(arg, i64::from(depth), 0)?;
            Some(append(out, &moved))
        } else {
            let ty = types.get(k as usize).cloned().flatten();
            Some(out.add(Lift::Var(k - 1 + depth, ty)))
        }
    })?;
    Some(out)
}

/// Appends a whole term to `out`, returning its root there.
pub fn append(out: &mut RecExpr<Lift>, expr: &RecExpr<Lift>) -> Id {
    let mut ids: Vec<Id> = Vec::with_capacity(expr.len());
    for node in expr.as_ref() {
        let n = node.clone().map_children(|c| ids[usize::from(c)]);
        ids.push(out.add(n));
    }
    ids.last().copied().unwrap_or_else(|| out.add(Lift::Lit(mapsat_ir::ast::Lit::Bool(false))))
}

/// `h(a, b)`: β-reduced when `h` is `fun(x, y => body)`, else the application.
pub fn apply2(h: &RecExpr<Lift>, a: &RecExpr<Lift>, b: &RecExpr<Lift>) -> RecExpr<Lift> {
    if let Some(r) = root(h) {
        if let Lift::Lam(_, [inner]) = &h[r] {
            if let Lift::Lam(_, [body]) = &h[*inner] {
                let body = subterm(h, *body);
                // The outer parameter is variable 1 in the body: substitute the inner one first
                // with `b` moved under the outer binder, then the outer one with `a`.
                let reduced = shift(b, 1, 0).and_then(|b1| beta(&body, &b1)).and_then(|once| beta(&once, a));
                if let Some(r) = reduced {
                    return r;
                }
            }
        }
    }
    let mut out = RecExpr::default();
    let f = append(&mut out, h);
    let a = append(&mut out, a);
    let fa = out.add(Lift::app(f, a));
    let b = append(&mut out, b);
    out.add(Lift::app(fa, b));
    out
}

/// `e` with each lambda applied to an argument β-reduced (`fun(x => b)(a) => b[a/x]`), once
/// bottom-up (a redex a reduction makes is left as it is).
pub fn reduce_lambdas(e: &RecExpr<Lift>) -> RecExpr<Lift> {
    rebuild_nodes(e, |out, n| {
        let reduced = match &n {
            Lift::App([f, a]) => match &out[*f] {
                Lift::Lam(_, [body]) => beta(&subterm(out, *body), &subterm(out, *a)),
                _ => None,
            },
            _ => None,
        };
        match reduced {
            Some(r) => append(out, &r),
            None => out.add(n),
        }
    })
}

/// `e` rebuilt bottom-up: `step` adds each node (its children already rebuilt) to the output and
/// returns the node that stands for it.
pub fn rebuild_nodes(e: &RecExpr<Lift>, mut step: impl FnMut(&mut RecExpr<Lift>, Lift) -> Id) -> RecExpr<Lift> {
    let mut out: RecExpr<Lift> = RecExpr::default();
    let mut ids: Vec<Id> = Vec::with_capacity(e.as_ref().len());
    for node in e.as_ref() {
        let n = node.clone().map_children(|c| ids[usize::from(c)]);
        ids.push(step(&mut out, n));
    }
    out
}

/// The subterm of `e` rooted at `id`, as a term of its own.
pub fn subterm(e: &RecExpr<Lift>, id: Id) -> RecExpr<Lift> {
    fn copy(e: &RecExpr<Lift>, id: Id, out: &mut RecExpr<Lift>, done: &mut std::collections::BTreeMap<Id, Id>) -> Id {
        if let Some(&n) = done.get(&id) {
            return n;
        }
        let node = e[id].clone().map_children(|c| copy(e, c, out, done));
        let n = out.add(node);
        done.insert(id, n);
        n
    }
    let mut out = RecExpr::default();
    copy(e, id, &mut out, &mut std::collections::BTreeMap::new());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(e: &mut RecExpr<Lift>, k: u32) -> Id {
        e.add(Lift::Var(k, None))
    }

    #[test]
    fn shift_moves_free_variables_only() {
        // fun => v0 v1  : free {0}; shifted by 2: fun => v0 v3.
        let mut e = RecExpr::default();
        let a = var(&mut e, 0);
        let b = var(&mut e, 1);
        let app = e.add(Lift::app(a, b));
        e.add(Lift::Lam(None, [app]));
        assert_eq!(free_vars(&e), BTreeSet::from([0]));
        let s = shift(&e, 2, 0).unwrap();
        assert_eq!(free_vars(&s), BTreeSet::from([2]));
        assert!(shift(&e, -1, 0).is_none(), "moving out a used binder is refused");
    }

    #[test]
    fn beta_substitutes_and_lowers() {
        // body = v0 v1, arg = v0: result v0 v0 (the outer variable 1 becomes 0).
        let mut body = RecExpr::default();
        let a = var(&mut body, 0);
        let b = var(&mut body, 1);
        body.add(Lift::app(a, b));
        let mut arg = RecExpr::default();
        var(&mut arg, 0);
        let r = beta(&body, &arg).unwrap();
        assert_eq!(free_vars(&r), BTreeSet::from([0]));
        assert_eq!(r.len(), 3);
    }

    #[test]
    fn beta_under_binder_shifts_the_argument() {
        // body = fun => v1 (the outer variable), arg = v5: fun => v6.
        let mut body = RecExpr::default();
        let v = var(&mut body, 1);
        body.add(Lift::Lam(None, [v]));
        let mut arg = RecExpr::default();
        var(&mut arg, 5);
        let r = beta(&body, &arg).unwrap();
        assert_eq!(r[Id::from(0usize)], Lift::Var(6, None));
    }
}
