//! The e-class analysis: may-free variables, type, smallest term size.
//!
//! - `free`: the de Bruijn indices that may be free in some term of the class (a union on
//!   merge). Every "x not free in f" side condition reads it: a may-free set errs on the side of
//!   refusing a rewrite (egg issue #234: an intersection would allow unsound ones).
//! - `ty`: the class's type with symbolic sizes ([`crate::infer`]); conditional rules read array
//!   lengths and ranks from it.
//! - `size`: the size of the smallest term of the class, for the term-size guard.

use crate::binders;
use crate::infer::{self, Ty};
use crate::lang::Lift;
use egg::Language as _;
use egg::{Analysis, DidMerge, EGraph, Id};
use mapsat_ir::Type;
use std::collections::BTreeSet;

/// The e-graph of a program.
pub type LiftGraph = EGraph<Lift, Meta>;

/// What the analysis knows of the whole program: its parameters' types and the sizes.
#[derive(Clone, Debug, Default)]
pub struct Meta {
    /// Types of the program's parameters.
    pub params: Vec<Type>,
    /// Every size variable's value: in debug builds, merged classes must have the same type at
    /// these sizes (a merge of different types is an unsound rule).
    pub sizes: mapsat_ir::Sizes,
}

/// Per e-class facts.
#[derive(Clone, Debug)]
pub struct Data {
    /// May-free de Bruijn indices.
    pub free: BTreeSet<u32>,
    /// The type, as far as known.
    pub ty: Ty,
    /// Number of nodes of the smallest term.
    pub size: usize,
}

impl Data {
    /// True when the class has no free variable (it can move under or out of binders as is).
    pub fn closed(&self) -> bool {
        self.free.is_empty()
    }
}

impl Analysis<Lift> for Meta {
    type Data = Data;

    fn make(egraph: &mut LiftGraph, enode: &Lift, _id: Id) -> Data {
        let d = |c: Id| &egraph[c].data;
        let free = binders::node_free(enode, |c| d(c).free.clone());
        let size = 1 + enode.children().iter().map(|c| d(*c).size).sum::<usize>();
        let ty = match enode {
            Lift::Param(i) => egraph.analysis.params.get(*i as usize).cloned().map_or(Ty::Unknown, Ty::Known),
            Lift::Var(_, t) => t.clone().map_or(Ty::Unknown, Ty::Known),
            Lift::Lit(l) => infer::lit(*l),
            Lift::Prim(p) => infer::prim(p),
            Lift::App([f, a]) => infer::apply(&d(*f).ty, &d(*a).ty),
            Lift::Lam(ann, [b]) => infer::lam(ann.as_ref(), &d(*b).ty),
            Lift::Let([_, b]) => d(*b).ty.clone(),
        };
        Data { free, ty, size }
    }

    fn merge(&mut self, a: &mut Data, b: Data) -> DidMerge {
        if let (Some(x), Some(y)) = (a.ty.known(), b.ty.known()) {
            debug_assert!(infer::same_at(x, y, &self.sizes), "merge of classes of types {x} and {y}");
        }
        let mut changed = (false, false);
        let union: BTreeSet<u32> = a.free.union(&b.free).copied().collect();
        changed.0 |= union.len() != a.free.len();
        changed.1 |= union.len() != b.free.len();
        a.free = union;
        if b.size < a.size {
            a.size = b.size;
            changed.0 = true;
        } else if a.size < b.size {
            changed.1 = true;
        }
        if b.ty.rank() > a.ty.rank() {
            a.ty = b.ty;
            changed.0 = true;
        } else if a.ty.rank() > b.ty.rank() {
            changed.1 = true;
        }
        DidMerge(changed.0, changed.1)
    }
}

/// True when class `c` holds a `toX` primitive (whose argument must stay a map or reduce
/// application).
pub fn is_to(eg: &LiftGraph, c: Id) -> bool {
    eg[c].nodes.iter().any(|n| matches!(n, Lift::Prim(mapsat_ir::Prim::To(_))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mapsat_ir::Size;

    fn graph() -> (LiftGraph, Id, Id, Id) {
        let f32s = |n: i64| Type::array(Type::F32, Size::constant(n));
        let meta = Meta { params: vec![f32s(4), f32s(8), f32s(4)], sizes: Default::default() };
        let mut eg = LiftGraph::new(meta);
        let (a, b, c) = (eg.add(Lift::Param(0)), eg.add(Lift::Param(1)), eg.add(Lift::Param(2)));
        (eg, a, b, c)
    }

    #[test]
    fn merging_classes_of_one_type_is_fine() {
        let (mut eg, a, _, c) = graph();
        eg.union(a, c);
        eg.rebuild();
        assert_eq!(eg.find(a), eg.find(c));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "merge of classes of types")]
    fn merging_classes_of_different_types_is_caught() {
        let (mut eg, a, b, _) = graph();
        eg.union(a, b);
        eg.rebuild();
    }

    #[test]
    fn free_variables_are_a_union_on_merge() {
        let (mut eg, a, _, _) = graph();
        let v = eg.add(Lift::Var(1, None));
        eg.union(a, v);
        eg.rebuild();
        assert_eq!(eg[a].data.free, BTreeSet::from([1]));
    }
}
