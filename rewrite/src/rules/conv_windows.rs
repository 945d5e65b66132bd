//! A convolution whose weights are kept one filter per output channel (OHWI, `conv.lift`) as a
//! product of its windows with the columns of its weights stored transposed, in a kernel of
//! their own: the form the outer product ([`super::outer`]) takes, as `conv_outer.lift` does by
//! hand.
//!
//! ```text
//! map@A_0(map@A_1(fun(win => map@B(fun(k =>
//!     reduce(h, z, map@C(f, joinNDr(zipNDr(win, k))))), ks))), wins)
//!   =>  let wt = toGlobal(map@B_t(fun(r => map@B_tc(fun(x => x), r)), transpose(map@B_j(J, ks)))) in
//!       split(outW, map@A_1(fun(row => map@B(fun(col =>
//!         reduce(h, z, map@C(f, zip(row, col)))), transpose(wt))), map@A_1_j(J, join(wins))))
//! ```
//!
//! where `J` is `fun(x => joinNDr(x))`, the window or filter flattened (`r` its rank). Also for
//! one map over 1-D windows (`map@A(fun(win => ..), wins)`, no `join` and no `split`), and with
//! `zipNDr(k, win)` (then `zip(col, row)`).
//!
//! At the program's body only (the `let` is a kernel boundary), for `ks` a parameter. Sound
//! because `joinNDr(zipNDr(a, b))` is `zip(joinNDr(a), joinNDr(b))` (both list the pairs in
//! row-major order; `zipNDr` needs equal shapes), `map(map(g), xss)` is
//! `split(m, map(g, join(xss)))` for rows of `m`, `transpose(transpose(x))` is `x` and
//! `toGlobal` only says where the copy is kept; `h`, `z` and `f` are closed (the body is), so
//! they move as they are. The flattened map over the windows keeps the label of the inner map,
//! whose tile size divides its length.

use super::vectorize::numeric;
use super::{derived, Build, Ctx, Rule};
use crate::lang::Lift;
use egg::Id;
use mapsat_ir::ast::{AddressSpace, Prim};
use mapsat_ir::Type;

/// `conv-windows` (module doc).
pub struct ConvWindows;

impl Rule for ConvWindows {
    fn name(&self) -> &'static str {
        "conv-windows"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        if cx.params.root.is_none_or(|r| cx.eg.find(r) != cx.eg.find(c)) {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (outer, f, wins) in cx.maps(c) {
            // Two maps over a 2-D grid of windows, or one over a row of them.
            let mut nests: Vec<(String, Id, bool)> =
                cx.partial_maps(f).into_iter().map(|(inner, g)| (inner, g, true)).collect();
            nests.push((outer.clone(), f, false));
            for (a, g, two) in nests {
                out.extend(cx.lambdas(g).into_iter().filter_map(|body| rewritten(cx, &a, body, wins, two)));
            }
        }
        out
    }
}

/// The product of the windows `wins` with the weights, for the body of the map over windows.
fn rewritten(cx: &Ctx, a: &str, body: Id, wins: Id, two: bool) -> Option<Build> {
    let grid = cx.elem(wins)?;
    let (win, out_w) = match two {
        true => grid.as_array().map(|(w, n)| (w.clone(), Some(n.clone())))?,
        false => (grid, None),
    };
    let (flat, scalar) = flattened(&win)?;
    numeric(&scalar)?;
    for (b, h, ks) in cx.maps(body) {
        let Some(param) = as_param(cx, ks) else { continue };
        let Some((filter, filters)) = cx.eg.analysis.params.get(param as usize).and_then(Type::as_array) else {
            continue;
        };
        if *filter != win {
            continue;
        }
        for dot in cx.lambdas(h) {
            for (op, init, xs) in cx.reduces(dot) {
                for (c, g, zs) in cx.maps(xs) {
                    let closed = [op, init, g].iter().all(|k| cx.data(*k).free.is_empty());
                    let Some(win_first) = closed.then(|| pairs_of(cx, zs, rank(&win)?)).flatten() else { continue };
                    let parts = Parts { a, b: &b, c: &c, op, init, g, param, wins, win: &win, flat: &flat, filters };
                    return Some(build(&parts, &scalar, out_w, win_first));
                }
            }
        }
    }
    None
}

/// What [`build`] puts together.
struct Parts<'a> {
    a: &'a str,
    b: &'a str,
    c: &'a str,
    op: Id,
    init: Id,
    g: Id,
    param: u32,
    wins: Id,
    win: &'a Type,
    flat: &'a Type,
    filters: &'a mapsat_ir::Size,
}

/// The `let` of the transposed weights and the product (module doc).
fn build(p: &Parts, scalar: &Type, out_w: Option<mapsat_ir::Size>, win_first: bool) -> Build {
    // The copy `wt: [[S]O]K`, its rows `[S]O`, of the flattened filters `[[S]K]O`.
    let (_, k) = p.flat.as_array().expect("a flattened window is an array");
    let row_ty = Type::array(scalar.clone(), p.filters.clone());
    let wt_ty = Type::array(row_ty.clone(), k.clone());
    let weights = Build::map(&derived(p.b, "_j"), flatten(p.win), Build::Node(Lift::Param(p.param), vec![]));
    let copy = Build::lam(Build::map(
        &derived(p.b, "_tc"),
        Build::lam(Build::var(0, Some(scalar.clone()))),
        Build::var(0, Some(row_ty)),
    ));
    let value = Build::map(&derived(p.b, "_t"), copy, Build::call(Prim::Transpose, vec![weights]));
    let value = Build::call(Prim::To(AddressSpace::Global), vec![value]);
    // Under `row` and `col`: the row is variable 1, the column 0; under `row`, `wt` is 1.
    let (row, col) = (Build::var(1, Some(p.flat.clone())), Build::var(0, Some(p.flat.clone())));
    let pairs = match win_first {
        true => Build::call(Prim::Zip(2), vec![row, col]),
        false => Build::call(Prim::Zip(2), vec![col, row]),
    };
    let dot = Build::call(
        Prim::Reduce { seq: false },
        vec![Build::Class(p.op), Build::Class(p.init), Build::map(p.c, Build::Class(p.g), pairs)],
    );
    let columns = Build::call(Prim::Transpose, vec![Build::var(1, Some(wt_ty))]);
    let per_row = Build::lam(Build::map(p.b, Build::lam(dot), columns));
    let windows = match out_w {
        Some(_) => Build::call(Prim::Join, vec![Build::Class(p.wins)]),
        None => Build::Class(p.wins),
    };
    let rows = Build::map(&derived(p.a, "_j"), flatten(p.win), windows);
    let mut product = Build::map(p.a, per_row, rows);
    if let Some(n) = out_w {
        product = Build::call(Prim::Split(n), vec![product]);
    }
    Build::Node(Lift::Let([Id::from(0usize); 2]), vec![value, product])
}

/// `fun(x => joinNDr(x))` for `x` of type `win`.
fn flatten(win: &Type) -> Build {
    let mut x = Build::var(0, Some(win.clone()));
    for _ in 1..rank(win).unwrap_or(1) {
        x = Build::call(Prim::Join, vec![x]);
    }
    Build::lam(x)
}

/// The rank of an array type of scalars.
fn rank(t: &Type) -> Option<usize> {
    t.as_array().map(|(e, _)| 1 + rank(e).unwrap_or(0))
}

/// A window type flattened (`[S](n1 * .. * nr)`, of rank 2 or more), and its scalar `S`.
fn flattened(win: &Type) -> Option<(Type, Type)> {
    let (mut t, mut len) = win.as_array().map(|(e, n)| (e.clone(), n.clone()))?;
    let mut dims = 1;
    while let Some((e, n)) = t.clone().as_array().map(|(e, n)| (e.clone(), n.clone())) {
        len = len.mul(&n);
        t = e;
        dims += 1;
    }
    (dims >= 2).then(|| (Type::array(t.clone(), len), t))
}

/// The parameter class `c` is, if it is one.
fn as_param(cx: &Ctx, c: Id) -> Option<u32> {
    cx.eg[c].nodes.iter().find_map(|n| if let Lift::Param(i) = n { Some(*i) } else { None })
}

/// For class `c` = `joinNDr(zipNDr(x, y))` under the window (variable 1) and the filter (0):
/// `Some(true)` for `zipNDr(win, k)`, `Some(false)` for `zipNDr(k, win)`.
fn pairs_of(cx: &Ctx, c: Id, r: usize) -> Option<bool> {
    let mut zipped = vec![c];
    for _ in 1..r {
        zipped =
            zipped.iter().flat_map(|z| cx.calls(*z)).filter(|(p, _)| *p == Prim::Join).map(|(_, a)| a[0]).collect();
    }
    let var = |k: u32| move |x: Id| cx.eg[x].nodes.iter().any(|n| matches!(n, Lift::Var(j, _) if *j == k));
    zipped.into_iter().find_map(|z| {
        if zip_nd(cx, z, &var(1), &var(0), r) {
            Some(true)
        } else {
            zip_nd(cx, z, &var(0), &var(1), r).then_some(false)
        }
    })
}

/// True when class `c` is `zipNDd(x, y)` as the parser expands it, with `x` and `y` classes
/// `first` and `second` accept.
fn zip_nd(cx: &Ctx, c: Id, first: &dyn Fn(Id) -> bool, second: &dyn Fn(Id) -> bool, d: usize) -> bool {
    let zip = |z: Id| cx.calls(z).into_iter().any(|(p, a)| p == Prim::Zip(2) && first(a[0]) && second(a[1]));
    if d <= 1 {
        return zip(c);
    }
    let field = |i: u32| move |x: Id| cx.calls(x).into_iter().any(|(p, a)| p == Prim::Get(i) && cx.is_var0(a[0]));
    cx.maps(c)
        .into_iter()
        .any(|(_, f, xs)| zip(xs) && cx.lambdas(f).into_iter().any(|b| zip_nd(cx, b, &field(0), &field(1), d - 1)))
}
