//! Register blocking: a block of a map's outputs computed in one pass of their reduction
//! (Lift's `apply1DRegisterBlocking`: split-join, then the map-reduce interchange).

use super::tiling::is_var0;
use super::{Build, Ctx, Rule};
use crate::binders;
use crate::lang::Lift;
use egg::{Id, RecExpr};
use mapsat_ir::ast::Prim;
use mapsat_ir::{Size, Type};

/// `register-block`:
///
/// ```text
/// map@B(fun(col => reduce(h, z, zip(r, col))), ys)
///   =>  join(map@B(fun(blk =>
///         reduce(fun(acc, p => map@B_a(fun(q => h(q.0, (p.0, q.1))), zip(acc, p.1))),
///           map@B_z(fun(c => z), blk),
///           zip(r, transpose(blk)))),
///         split(n, ys)))
/// ```
///
/// Sound when `col` is not free in `h`, `z` and `r` (may-free analysis) and `n` divides the length
/// of `ys` (the map's new tile size if it has one, else a split factor). Each block `blk` of `n`
/// columns is reduced in lockstep: after step `k` the accumulator's `j`-th element is the fold of
/// `h` from `z` over `(r[i], blk[j][i])` for `i <= k`, which is what the `j`-th column's own
/// reduction computes (the map-reduce interchange, `map(reduce) => reduce(map) . transpose`). The
/// accumulator is an array of `n` values, which `toPrivate` keeps in registers
/// ([`crate::staging::stage_private`]); `r[k]` is read once per block instead of once per column.
/// `h` is applied by β-reduction when it is a two-parameter lambda, and the components of the
/// pair it is given are then read directly (`(a, b).0 => a`); a lambda applied in its body (a
/// fused map's function) is β-reduced too.
pub struct RegisterBlock;

impl Rule for RegisterBlock {
    fn name(&self) -> &'static str {
        "register-block"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for (label, g, ys) in cx.maps(c) {
            let (Some(len), Some(col)) = (cx.length(ys), cx.elem(ys)) else { continue };
            for body in cx.lambdas(g) {
                for (h, z, xs) in cx.reduces(body) {
                    let uses_col = |c: Id| cx.data(c).free.contains(&0);
                    if uses_col(h) || uses_col(z) {
                        continue;
                    }
                    for (p, args) in cx.calls(xs) {
                        if p != Prim::Zip(2) || !is_var0(cx, args[1]) || uses_col(args[0]) {
                            continue;
                        }
                        let Some(parts) = Parts::new(cx, &label, &col, (h, z, args[0])) else { continue };
                        for n in cx.map_factors(&label, len) {
                            out.extend(parts.build(cx, &n, ys));
                        }
                    }
                }
            }
        }
        out
    }
}

/// The matched parts of one register blocking and their types.
struct Parts<'a> {
    label: &'a str,
    /// A column (an element of `ys`).
    col: &'a Type,
    h: Id,
    z: Id,
    r: Id,
    /// The accumulator's element type (that of `z`).
    acc: Type,
    /// The element types of `r` and of a column.
    r_elem: Type,
    col_elem: Type,
}

impl<'a> Parts<'a> {
    fn new(cx: &Ctx, label: &'a str, col: &'a Type, (h, z, r): (Id, Id, Id)) -> Option<Parts<'a>> {
        let acc = cx.data(z).ty.known()?.clone();
        let r_elem = cx.elem(r)?;
        let col_elem = col.as_array()?.0.clone();
        Some(Parts { label, col, h, z, r, acc, r_elem, col_elem })
    }

    /// The right-hand side for block size `n`.
    fn build(&self, cx: &Ctx, n: &Size, ys: Id) -> Option<Build> {
        let map = |suffix: &str, f: Build, xs: Build| Build::map(&format!("{}{suffix}", self.label), f, xs);
        let blk = || Build::var(0, Some(Type::array(self.col.clone(), n.clone())));
        // Under blk, c.
        let init = map("_z", Build::lam(cx.shifted(self.z, 1)?), blk());
        let accs = Type::array(self.acc.clone(), n.clone());
        let p_ty = Type::Tuple(vec![self.r_elem.clone(), Type::array(self.col_elem.clone(), n.clone())]);
        let q_ty = Type::Tuple(vec![self.acc.clone(), self.col_elem.clone()]);
        // Under blk, acc, p, q: `h(q.0, (p.0, q.1))`.
        let step = Build::Expr(self.step(cx, &p_ty, &q_ty)?);
        let acc_p = Build::call(
            Prim::Zip(2),
            vec![Build::var(1, Some(accs)), Build::call(Prim::Get(1), vec![Build::var(0, Some(p_ty))])],
        );
        let f = Build::lam(Build::lam(map("_a", Build::lam(step), acc_p)));
        let xs = Build::call(Prim::Zip(2), vec![Build::Class(self.r), Build::call(Prim::Transpose, vec![blk()])]);
        let reduce = Build::call(Prim::Reduce { seq: false }, vec![f, init, xs]);
        let blocks =
            Build::map(self.label, Build::lam(reduce), Build::call(Prim::Split(n.clone()), vec![Build::Class(ys)]));
        Some(Build::call(Prim::Join, vec![blocks]))
    }

    /// `h(q.0, (p.0, q.1))` under `blk, acc, p, q`, β-reduced when `h` is a two-parameter lambda.
    fn step(&self, cx: &Ctx, p_ty: &Type, q_ty: &Type) -> Option<RecExpr<Lift>> {
        let (_, h) = cx.repr.find_best(self.h);
        let h = binders::shift(&h, 3, 0)?;
        let mut a = RecExpr::default();
        get(&mut a, 0, 0, q_ty);
        let mut b = RecExpr::default();
        let p0 = get(&mut b, 0, 1, p_ty);
        let q1 = get(&mut b, 1, 0, q_ty);
        let tuple = b.add(Lift::Prim(Prim::Tuple(2)));
        let t = b.add(Lift::app(tuple, p0));
        b.add(Lift::app(t, q1));
        Some(project(&reduce_lambdas(&project(&apply2(&h, &a, &b)))))
    }
}

/// Adds `v<k>.i` (variable `k` of type `ty`, component `i`) to `e`.
fn get(e: &mut RecExpr<Lift>, i: u32, k: u32, ty: &Type) -> Id {
    let g = e.add(Lift::Prim(Prim::Get(i)));
    let v = e.add(Lift::Var(k, Some(ty.clone())));
    e.add(Lift::app(g, v))
}

/// `h(a, b)`: β-reduced when `h` is `fun(x, y => body)`, else the application.
fn apply2(h: &RecExpr<Lift>, a: &RecExpr<Lift>, b: &RecExpr<Lift>) -> RecExpr<Lift> {
    let root = |e: &RecExpr<Lift>| Id::from(e.as_ref().len() - 1);
    if let Lift::Lam(_, [inner]) = &h[root(h)] {
        if let Lift::Lam(_, [body]) = &h[*inner] {
            let body = subterm(h, *body);
            // The outer parameter is variable 1 in the body: substitute the inner one first
            // with `b` moved under the outer binder, then the outer one with `a`.
            let reduced = binders::shift(b, 1, 0)
                .and_then(|b1| binders::beta(&body, &b1))
                .and_then(|once| binders::beta(&once, a));
            if let Some(r) = reduced {
                return r;
            }
        }
    }
    let mut out = RecExpr::default();
    let f = binders::append(&mut out, h);
    let a = binders::append(&mut out, a);
    let fa = out.add(Lift::app(f, a));
    let b = binders::append(&mut out, b);
    out.add(Lift::app(fa, b));
    out
}

/// `e` with every component of a pair built in place read directly: `(a, b).0 => a`,
/// `(a, b).1 => b` (sound for any `a` and `b`: the interpreter evaluates both, and neither has
/// effects).
fn project(e: &RecExpr<Lift>) -> RecExpr<Lift> {
    rebuild(e, |out, n| component(out, &n).unwrap_or_else(|| out.add(n)))
}

/// `e` with each lambda applied to an argument β-reduced (`fun(x => b)(a) => b[a/x]`), once
/// bottom-up (a redex a reduction makes is left as it is).
fn reduce_lambdas(e: &RecExpr<Lift>) -> RecExpr<Lift> {
    rebuild(e, |out, n| {
        let reduced = match &n {
            Lift::App([f, a]) => match &out[*f] {
                Lift::Lam(_, [body]) => binders::beta(&subterm(out, *body), &subterm(out, *a)),
                _ => None,
            },
            _ => None,
        };
        match reduced {
            Some(r) => binders::append(out, &r),
            None => out.add(n),
        }
    })
}

/// `e` rebuilt bottom-up: `step` adds each node (its children already rebuilt) to the output and
/// returns the node that stands for it.
fn rebuild(e: &RecExpr<Lift>, mut step: impl FnMut(&mut RecExpr<Lift>, Lift) -> Id) -> RecExpr<Lift> {
    let mut out: RecExpr<Lift> = RecExpr::default();
    let mut ids: Vec<Id> = Vec::with_capacity(e.as_ref().len());
    for node in e.as_ref() {
        let n = egg::Language::map_children(node.clone(), |c| ids[usize::from(c)]);
        ids.push(step(&mut out, n));
    }
    out
}

/// For `get(i)(tuple(a)(b))` in `out`, the component (`a` or `b`).
fn component(out: &RecExpr<Lift>, n: &Lift) -> Option<Id> {
    let Lift::App([g, t]) = n else { return None };
    let Lift::Prim(Prim::Get(i)) = &out[*g] else { return None };
    let Lift::App([ta, b]) = &out[*t] else { return None };
    let Lift::App([tuple, a]) = &out[*ta] else { return None };
    if out[*tuple] != Lift::Prim(Prim::Tuple(2)) {
        return None;
    }
    match i {
        0 => Some(*a),
        1 => Some(*b),
        _ => None,
    }
}

/// The subterm of `e` rooted at `id`, as a term of its own.
fn subterm(e: &RecExpr<Lift>, id: Id) -> RecExpr<Lift> {
    let mut out = RecExpr::default();
    let mut map = std::collections::BTreeMap::new();
    copy(e, id, &mut out, &mut map);
    out
}

fn copy(e: &RecExpr<Lift>, id: Id, out: &mut RecExpr<Lift>, done: &mut std::collections::BTreeMap<Id, Id>) -> Id {
    if let Some(&n) = done.get(&id) {
        return n;
    }
    let node = egg::Language::map_children(e[id].clone(), |c| copy(e, c, out, done));
    let n = out.add(node);
    done.insert(id, n);
    n
}
