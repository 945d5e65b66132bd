//! Map fusion and fission, and β-reduction (which cleans up after fusion).

use super::{Build, Ctx, Rule};
use crate::lang::Lift;
use egg::Id;

/// `map-fusion`:
///
/// ```text
/// map@A(f, map@B(g, xs))  =>  map@A(fun(x => f(g(x))), xs)
/// ```
///
/// Always sound (the IR is pure): both sides apply `g` then `f` to each element. `f` and `g` move
/// under the new binder `x`, so their free variables are shifted by one (closed ones are reused
/// as they are, the others through their representatives).
pub struct MapFusion;

impl Rule for MapFusion {
    fn name(&self) -> &'static str {
        "map-fusion"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for (label, f, ys) in cx.maps(c) {
            for (_, g, xs) in cx.maps(ys) {
                let (Some(f1), Some(g1)) = (cx.shifted(f, 1), cx.shifted(g, 1)) else { continue };
                let x = Build::var(0, cx.elem(xs));
                let body = Build::app(f1, Build::app(g1, x));
                out.push(Build::map(&label, Build::lam(body), Build::Class(xs)));
            }
        }
        out
    }
}

/// `map-fission`:
///
/// ```text
/// map@A(fun(x => F(G)), xs)  =>  map@A(F', map@A_f(fun(x => G), xs))
/// ```
///
/// where `F'` is `F` moved out of the binder. Sound when `x` is not free in `F` (read from the
/// may-free analysis; `F` is then the same function for every element), and only applied when
/// `G` is not `x` itself (that would only add an identity map) and `F` is not a `toX`
/// (which must wrap the map or reduce application it writes).
///
/// With `nested_only` (the rule `map-fission-nest`), only where `F` is itself a map
/// (`map@A(fun(x => map@B(f, G)), xs)`): the form that exposes a map nest to interchange,
/// without splitting every scalar expression of a body (the stage phase uses it).
pub struct MapFission {
    /// Only where `F` is a map applied to its function.
    pub nested_only: bool,
}

impl Rule for MapFission {
    fn name(&self) -> &'static str {
        if self.nested_only {
            "map-fission-nest"
        } else {
            "map-fission"
        }
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for (label, f, xs) in cx.maps(c) {
            for body in cx.lambdas(f) {
                for n in &cx.eg[body].nodes {
                    let Lift::App([ff, g]) = n else { continue };
                    if cx.data(*ff).free.contains(&0) || is_var0(cx, *g) || cx.is_to(*ff) {
                        continue;
                    }
                    if self.nested_only && cx.partial_maps(*ff).is_empty() {
                        continue;
                    }
                    out.extend(map_fission(cx, &label, *ff, *g, xs));
                }
            }
        }
        out
    }
}

/// The right-hand side of [`MapFission`] for `map@label(fun(x => ff(g)), xs)`:
/// `map@label(ff', map@label_f(fun(x => g), xs))`, `ff'` moved out of the binder (`None` when it
/// uses it).
pub fn map_fission(cx: &Ctx, label: &str, ff: Id, g: Id, xs: Id) -> Option<Build> {
    let ff1 = cx.shifted(ff, -1)?;
    let inner = Build::map(&format!("{label}_f"), Build::lam(Build::Class(g)), Build::Class(xs));
    Some(Build::map(label, ff1, inner))
}

/// True when class `g` is the variable 0.
fn is_var0(cx: &Ctx, g: Id) -> bool {
    cx.eg[g].nodes.iter().any(|n| matches!(n, Lift::Var(0, _)))
}

/// `beta`:
///
/// ```text
/// (fun(x => body))(arg)  =>  body[x := arg]
/// ```
///
/// Sound in a pure language; computed on representatives ([`crate::binders::beta`]): `arg` is
/// shifted under the binders of `body` it crosses, and `body`'s other free variables are lowered.
/// Not applied to a constant function (`body` does not use `x`) of an `arg` with free
/// variables: the application's class would join the closed class of the result, and the
/// may-free analysis cannot tell extraction where the application's variables are bound
/// (`fun(c => 0.0)(x)` made a literal's class hold a term with `x` free).
pub struct Beta;

impl Rule for Beta {
    fn name(&self) -> &'static str {
        "beta"
    }

    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build> {
        let mut out = Vec::new();
        for n in &cx.eg[c].nodes {
            let Lift::App([f, a]) = n else { continue };
            for body in cx.lambdas(*f) {
                // A constant function applied to a term with free variables: the result is
                // closed where the application is not, and merging them would let extraction
                // pick the application in a place its variables are not bound.
                if !cx.data(body).free.contains(&0) && !cx.data(*a).closed() {
                    continue;
                }
                if let Some(b) = cx.beta(body, *a) {
                    out.push(b);
                }
            }
        }
        out
    }
}
