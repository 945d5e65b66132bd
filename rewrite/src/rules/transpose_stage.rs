//! A matrix read by columns stored transposed once, in a kernel of its own: the weights of a
//! fully-connected layer as PyTorch keeps them (`w: [[f32]K]N`, one row per output), whose
//! output columns the outer product ([`super::outer`]) wants contiguous, as `conv_outer.lift`
//! does by hand for a convolution's OHWI weights.
//!
//! ```text
//! body[w]  =>  let wt = toGlobal(map@B_t(fun(r => map@B_tc(fun(x => x), r)), transpose(w))) in
//!              body[w := transpose(wt)]
//! ```
//!
//! Each such matrix alone, and all of them at once (two layers of a network: one `let` each,
//! outermost first).
//!
//! At the program's body only (a `toGlobal` `let` there is a kernel boundary,
//! [`mapsat_ir::stages`]), for a parameter `w: [[S]K]N` (`S` numeric) that some map over the
//! columns of a matrix product reads as its columns: `map@B(fun(col => .. reduce(h, z,
//! zip(row, col)) ..), w)` under a map over rows, or the same over `zip(w, bias)`. Sound
//! because `transpose(transpose(w))` is `w` and `toGlobal` only says where the copy is kept;
//! the body is closed, so the new binder shifts none of its variables. The copy costs one pass over `w` per run; the tuner measures
//! both kernels, so the variant wins only where the product's faster form pays for it.

use super::epilogue::column_folds;
use super::vectorize::numeric;
use super::{derived, Build, Ctx, Rule};
use crate::lang::Lift;
use egg::{Id, Language as _, RecExpr};
use mapsat_ir::ast::{AddressSpace, Prim};
use mapsat_ir::Type;

/// `transpose-stage` (module doc).
pub struct TransposeStage;

impl Rule for TransposeStage {
    fn name(&self) -> &'static str {
        "transpose-stage"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        if cx.params.root.is_none_or(|r| cx.eg.find(r) != cx.eg.find(c)) {
            return Vec::new();
        }
        let body = cx.repr(c);
        let mut found = Vec::new();
        for (i, label) in read_by_columns(cx) {
            let Some(Type::Array(row, n)) = cx.eg.analysis.params.get(i as usize) else { continue };
            let Some((s, k)) = row.as_array().filter(|(s, _)| numeric(s).is_some()) else { continue };
            let row = Type::array(s.clone(), n.clone());
            found.push(Copied { param: i, label, scalar: s.clone(), wt: Type::array(row.clone(), k.clone()), row });
        }
        // Each matrix alone, and (the smallest form of the body has none yet) all at once.
        let mut out: Vec<Build> = found.iter().map(|w| staged(&body, std::slice::from_ref(w))).collect();
        if found.len() > 1 {
            out.push(staged(&body, &found));
        }
        out
    }
}

/// A parameter `w: [[S]K]N` to store transposed: its position, the label of a map reading its
/// columns, `S`, and the types of a row of its copy (`[S]N`) and of the copy (`[[S]N]K`).
struct Copied {
    param: u32,
    label: String,
    scalar: Type,
    row: Type,
    wt: Type,
}

/// `let wt_1 = .. in .. let wt_k = .. in body[w_j := transpose(wt_j)]` for the closed `body`.
fn staged(body: &RecExpr<Lift>, ws: &[Copied]) -> Build {
    let mut rebuilt = RecExpr::default();
    let root = Id::from(body.as_ref().len() - 1);
    substitute(body, root, 0, ws, &mut rebuilt);
    let mut out = Build::Expr(rebuilt);
    for w in ws.iter().rev() {
        let copy = Build::lam(Build::map(
            &derived(&w.label, "_tc"),
            Build::lam(Build::var(0, Some(w.scalar.clone()))),
            Build::var(0, Some(w.row.clone())),
        ));
        let value = Build::map(&derived(&w.label, "_t"), copy, Build::call(Prim::Transpose, vec![param(w.param)]));
        let value = Build::call(Prim::To(AddressSpace::Global), vec![value]);
        out = Build::Node(Lift::Let([Id::from(0usize); 2]), vec![value, out]);
    }
    out
}

/// True when class `v` is a copy of a transpose, the value of the `let` this rule adds:
/// `map(fun(r => map(fun(x => x), r)), transpose(w))` ([`super::stages::LetInline`] keeps it).
pub fn transposed_copy(cx: &Ctx, v: Id) -> bool {
    let copies = |f: Id, inner: &dyn Fn(Id) -> bool| cx.lambdas(f).into_iter().any(inner);
    let identity = |b: Id| cx.is_var0(b);
    let row_copy = |b: Id| cx.maps(b).into_iter().any(|(_, g, xs)| cx.is_var0(xs) && copies(g, &identity));
    cx.maps(v).into_iter().any(|(_, f, xs)| {
        let transposed = cx.calls(xs).iter().any(|(p, _)| *p == Prim::Transpose);
        transposed && copies(f, &row_copy)
    })
}

/// The parameter `i` as a term.
fn param(i: u32) -> Build {
    Build::Node(Lift::Param(i), vec![])
}

/// The parameters some map over the columns of a matrix product reads as its columns, each
/// with that map's label (the first met).
fn read_by_columns(cx: &Ctx) -> Vec<(u32, String)> {
    let mut out: Vec<(u32, String)> = Vec::new();
    for class in cx.eg.classes() {
        for (label, g, ys) in cx.maps(class.id) {
            // The columns: `w`, or `w` zipped with others (a bias, `zip(w, bias)`, `zip(bias, w)`).
            let zipped = cx.calls(ys).into_iter().filter(|(p, _)| matches!(p, Prim::Zip(_))).flat_map(|(_, a)| a);
            let matrix = |i: &u32| {
                cx.eg
                    .analysis
                    .params
                    .get(*i as usize)
                    .is_some_and(|t| t.as_array().is_some_and(|(row, _)| row.as_array().is_some()))
            };
            let Some(i) = std::iter::once(ys).chain(zipped).filter_map(|c| as_param(cx, c)).find(matrix) else {
                continue;
            };
            // Under `col`, the row is variable 1: a dot product of the row with the column.
            let dot = column_folds(cx, g, true)
                .into_iter()
                .any(|(_, fold, _)| !fold.col_first && cx.data(fold.r).free.contains(&1));
            if dot && !out.iter().any(|(j, _)| *j == i) {
                out.push((i, label));
            }
        }
    }
    out
}

/// The parameter class `c` is, if it is one.
fn as_param(cx: &Ctx, c: Id) -> Option<u32> {
    cx.eg[c].nodes.iter().find_map(|n| if let Lift::Param(i) = n { Some(*i) } else { None })
}

/// Node `id` of the closed term `e`, `depth` binders down, added to `out` with each parameter
/// of `ws` read as `transpose(wt)`, the `wt`s bound just outside the term in that order (the
/// last innermost).
fn substitute(e: &RecExpr<Lift>, id: Id, depth: u32, ws: &[Copied], out: &mut RecExpr<Lift>) -> Id {
    match &e[id] {
        Lift::Param(i) if ws.iter().any(|w| w.param == *i) => {
            let j = ws.iter().position(|w| w.param == *i).unwrap_or_default();
            let wt = out.add(Lift::Var(depth + (ws.len() - 1 - j) as u32, Some(ws[j].wt.clone())));
            let t = out.add(Lift::Prim(Prim::Transpose));
            out.add(Lift::App([t, wt]))
        }
        Lift::Lam(ann, [b]) => {
            let b = substitute(e, *b, depth + 1, ws, out);
            out.add(Lift::Lam(ann.clone(), [b]))
        }
        Lift::Let([v, b]) => {
            let v = substitute(e, *v, depth, ws, out);
            let b = substitute(e, *b, depth + 1, ws, out);
            out.add(Lift::Let([v, b]))
        }
        n => {
            let n = n.clone().map_children(|c| substitute(e, c, depth, ws, out));
            out.add(n)
        }
    }
}
