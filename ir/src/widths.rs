//! Vector widths written as size variables: `asVector(vw, xs)` and `vectorFromScalar(vw, x)`
//! with `size vw in 2..16 = 4`, so that `mapsat tune` chooses the width for the device (16 for
//! a CPU with 512-bit vectors, 4 for a GPU) as it chooses a tile size.
//!
//! A primitive's [`Width`] holds its lanes at the program's defaults (set by the parser).
//! [`specialize`] sets them at other sizes; every stage that is given sizes (the checker and the
//! interpreter at concrete sizes, the constraint space, code generation, the tuner at each
//! point) specializes the program first, so that the rest of the compiler sees only widths that
//! are numbers.

use crate::ast::{Node, Prim, Program, Width};
use crate::Sizes;
use std::borrow::Cow;
use std::collections::BTreeSet;

/// The vector widths there are (those of OpenCL C).
pub const LANES: [u32; 5] = [2, 3, 4, 8, 16];

/// `w` as a vector width, or why it is none.
pub fn lanes(w: i64) -> Result<u32, String> {
    u32::try_from(w)
        .ok()
        .filter(|w| LANES.contains(w))
        .ok_or_else(|| format!("vector width must be 2, 3, 4, 8 or 16, not {w}"))
}

/// The size variables `p` uses as vector widths.
pub fn vars(p: &Program) -> BTreeSet<String> {
    p.nodes
        .iter()
        .filter_map(|n| match n {
            Node::Prim(Prim::AsVector(w) | Prim::VectorFromScalar(w)) => w.var.clone(),
            _ => None,
        })
        .collect()
}

/// `p` with the widths written as size variables set to their values in `sizes` (the
/// program's defaults where `sizes` has none), and those variables' defaults set to them; `p`
/// itself when it has no such width. An error when a value is no vector width.
pub fn specialize<'p>(p: &'p Program, sizes: &Sizes) -> Result<Cow<'p, Program>, String> {
    let vars = vars(p);
    if vars.is_empty() {
        return Ok(Cow::Borrowed(p));
    }
    let mut q = p.clone();
    for d in q.sizes.iter_mut().filter(|d| vars.contains(&d.name)) {
        let w = sizes.get(&d.name).or(d.default).ok_or_else(|| format!("size `{}` has no value", d.name))?;
        lanes(w).map_err(|e| format!("size `{}`: {e}", d.name))?;
        d.default = Some(w);
    }
    let value = |v: &str| q.sizes.iter().find(|d| d.name == v).and_then(|d| d.default);
    let mut nodes = std::mem::take(&mut q.nodes);
    for n in nodes.iter_mut() {
        if let Node::Prim(Prim::AsVector(w) | Prim::VectorFromScalar(w)) = n {
            if let Some(v) = w.var.clone() {
                let lanes = value(&v).and_then(|x| u32::try_from(x).ok()).unwrap_or(w.lanes);
                *w = Width { lanes, var: Some(v) };
            }
        }
    }
    q.nodes = nodes;
    Ok(Cow::Owned(q))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::{eval, random_inputs};

    const SRC: &str = "size N = 48, vw in 2..16 = 4\ndef f(a: [f32]N, s: f32) : [f32]N = \
                       asScalar(map(fun(v => vectorFromScalar(vw, s) * v + v), asVector(vw, a)))";

    fn widths(p: &Program) -> Vec<u32> {
        p.nodes
            .iter()
            .filter_map(|n| match n {
                Node::Prim(Prim::AsVector(w) | Prim::VectorFromScalar(w)) => Some(w.lanes),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_width_variable_takes_its_value_at_the_given_sizes() {
        let p = crate::parse(SRC).unwrap();
        assert_eq!(vars(&p), BTreeSet::from(["vw".to_string()]));
        assert_eq!(widths(&p), [4, 4]);
        let at = |v: i64| specialize(&p, &Sizes::from_iter([("vw".to_string(), v)]));
        let q = at(16).unwrap();
        assert_eq!(widths(&q), [16, 16]);
        assert_eq!(q.sizes.iter().find(|d| d.name == "vw").unwrap().default, Some(16));
        // The defaults where the sizes say nothing; no copy for a program without variables.
        assert_eq!(widths(&specialize(&p, &Sizes::new()).unwrap()), [4, 4]);
        let lit = crate::parse("size N = 8\ndef f(a: [f32]N) = asScalar(map(fun(v => v), asVector(4, a)))").unwrap();
        assert!(matches!(specialize(&lit, &Sizes::new()).unwrap(), Cow::Borrowed(_)));
        assert_eq!(at(5).unwrap_err(), "size `vw`: vector width must be 2, 3, 4, 8 or 16, not 5");
    }

    #[test]
    fn every_width_computes_the_same_result() {
        let p = crate::parse(SRC).unwrap();
        let sizes = |v: i64| Sizes::from_iter([("N".to_string(), 48), ("vw".to_string(), v)]);
        let inputs = random_inputs(&p, &sizes(4), 3).unwrap();
        let expected = eval(&p, &sizes(4), &inputs).unwrap();
        for w in [2, 3, 8, 16] {
            assert_eq!(eval(&p, &sizes(w), &inputs).unwrap(), expected, "vw = {w}");
        }
        // A width that does not divide N is a type error at those sizes, not a wrong result.
        let bad = Sizes::from_iter([("N".to_string(), 20), ("vw".to_string(), 8)]);
        assert!(crate::check::check_with_sizes(&p, &bad).is_err());
        assert!(eval(&p, &bad, &random_inputs(&p, &bad, 3).unwrap()).is_err());
    }
}
