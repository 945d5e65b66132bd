//! Conversion between programs and e-graph terms, both ways, without loss.
//!
//! A [`Program`]'s arena is children before parents with de Bruijn variables, like a
//! [`RecExpr`], so each direction is one linear pass over the nodes reachable from the root.
//! Binder names are not e-node data: [`Term::names`] keeps them beside the term (and
//! [`crate::extract`] carries them by e-class), so that the round trip prints the same text.

use crate::analysis::LiftGraph;
use crate::infer::Ty;
use crate::lang::Lift;
use egg::Language as _;
use egg::{Id, RecExpr};
use mapsat_ir::ast::{Meta, Node, NodeId, Prim};
use mapsat_ir::check::TypeInfo;
use mapsat_ir::Program;
use std::collections::{BTreeMap, BTreeSet};

/// A program's body as an e-graph term, with the names of its binders.
#[derive(Clone, Debug, Default)]
pub struct Term {
    /// The term (its root last).
    pub expr: RecExpr<Lift>,
    /// The binder name of each node of `expr` (for `Lam` and `Let`).
    pub names: Vec<Option<String>>,
}

/// The nodes reachable from the root, in arena order.
fn reachable(p: &Program) -> Vec<bool> {
    let mut seen = vec![false; p.nodes.len()];
    let mut stack = vec![p.root];
    while let Some(id) = stack.pop() {
        if !std::mem::replace(&mut seen[id.index()], true) {
            stack.extend(p.node(id).children());
        }
    }
    seen
}

/// The body of a checked program as a term (`info` gives each variable its type).
pub fn to_term(p: &Program, info: &TypeInfo) -> Term {
    let keep = reachable(p);
    let mut ids: Vec<Option<Id>> = vec![None; p.nodes.len()];
    let mut t = Term::default();
    for (k, node) in p.nodes.iter().enumerate() {
        if !keep[k] {
            continue;
        }
        let c = |n: NodeId| ids[n.index()].unwrap_or_else(|| Id::from(0usize));
        let lift = match node {
            Node::Param(i) => Lift::Param(*i),
            Node::Var(i) => Lift::Var(*i, info.of(NodeId(k as u32)).cloned()),
            Node::Lit(l) => Lift::Lit(*l),
            Node::Prim(pr) => Lift::Prim(pr.clone()),
            Node::App(f, a) => Lift::App([c(*f), c(*a)]),
            Node::Lam(b, ann) => Lift::Lam(ann.clone(), [c(*b)]),
            Node::Let(v, b) => Lift::Let([c(*v), c(*b)]),
        };
        ids[k] = Some(t.expr.add(lift));
        t.names.push(p.meta.get(k).and_then(|m| m.binder.clone()));
    }
    t
}

/// The program `template` with its body replaced by `term` (name, sizes, parameters and
/// declared result type are the template's).
pub fn to_program(template: &Program, term: &Term) -> Program {
    let mut p = Program {
        name: template.name.clone(),
        sizes: template.sizes.clone(),
        params: template.params.clone(),
        ret: template.ret.clone(),
        nodes: Vec::new(),
        meta: Vec::new(),
        root: NodeId(0),
    };
    for (k, lift) in term.expr.as_ref().iter().enumerate() {
        let c = |i: Id| NodeId(usize::from(i) as u32);
        let node = match lift {
            Lift::Param(i) => Node::Param(*i),
            Lift::Var(i, _) => Node::Var(*i),
            Lift::Lit(l) => Node::Lit(*l),
            Lift::Prim(pr) => Node::Prim(pr.clone()),
            Lift::App([f, a]) => Node::App(c(*f), c(*a)),
            Lift::Lam(ann, [b]) => Node::Lam(c(*b), ann.clone()),
            Lift::Let([v, b]) => Node::Let(c(*v), c(*b)),
        };
        let binder = term.names.get(k).cloned().flatten();
        p.root = p.push(node, Meta { binder, ..Meta::default() });
    }
    p
}

/// The binder names of a program added to an e-graph: a lambda's by its class, a `let`'s by
/// the class of its value. Not a `let`'s by its own class: a rule may add another `let` to it,
/// binding another value (`transpose-stage`'s copy of weights in the class of a program whose
/// body was `let h = ..`), which is not that binder.
#[derive(Clone, Debug, Default)]
pub struct Names {
    /// Lambdas' parameter names, by the lambda's class.
    pub lambdas: BTreeMap<Id, String>,
    /// `let` binders' names, by the class of the bound value.
    pub lets: BTreeMap<Id, String>,
}

/// Adds a checked program's body to an e-graph, giving each class the checker's type where the
/// analysis alone does not know it. Returns the root's class and the binder names.
pub fn add_program(eg: &mut LiftGraph, p: &Program, info: &TypeInfo) -> (Id, Names) {
    let term = to_term(p, info);
    let keep = reachable(p);
    let types: Vec<Option<&mapsat_ir::Type>> =
        (0..p.nodes.len()).filter(|k| keep[*k]).map(|k| info.of(NodeId(k as u32))).collect();
    let mut ids: Vec<Id> = Vec::with_capacity(term.expr.len());
    let mut names = Names::default();
    for (k, lift) in term.expr.as_ref().iter().enumerate() {
        let id = eg.add(lift.clone().map_children(|c| ids[usize::from(c)]));
        // A primitive or a partial application may be shared at several types (the checker
        // gives the type of one use): only value types and lambdas take the checker's type.
        let fixed = |t: &mapsat_ir::Type| !matches!(t, mapsat_ir::Type::Fun(..)) || matches!(lift, Lift::Lam(..));
        if let Some(t) = types[k].filter(|t| fixed(t)) {
            let t = Ty::Known(t.clone());
            if eg[id].data.ty.rank() < t.rank() {
                let mut d = eg[id].data.clone();
                d.ty = t;
                eg.set_analysis_data(id, d);
            }
        }
        if let Some(n) = &term.names[k] {
            let (map, key) = match lift {
                Lift::Let([v, _]) => (&mut names.lets, ids[usize::from(*v)]),
                _ => (&mut names.lambdas, id),
            };
            map.entry(key).or_insert_with(|| n.clone());
        }
        ids.push(id);
    }
    (ids.last().copied().unwrap_or_else(|| Id::from(0usize)), names)
}

/// Makes map labels unique: the second and later maps (in pre-order) with a label already used
/// get `_2`, `_3`, ... appended (rules may build the same labelled map twice in one term).
pub fn unique_labels(p: &mut Program) {
    let mut order = Vec::new();
    let mut stack = vec![p.root];
    let mut seen = vec![false; p.nodes.len()];
    while let Some(id) = stack.pop() {
        if std::mem::replace(&mut seen[id.index()], true) {
            continue;
        }
        order.push(id);
        stack.extend(p.node(id).children().into_iter().rev());
    }
    let mut used: BTreeSet<String> = BTreeSet::new();
    for id in order {
        if let Node::Prim(Prim::Map { label, .. }) = &mut p.nodes[id.index()] {
            if !used.insert(label.clone()) {
                let base = label.clone();
                let fresh = (2..).map(|k| format!("{base}_{k}")).find(|l| !used.contains(l));
                if let Some(f) = fresh {
                    used.insert(f.clone());
                    *label = f;
                }
            }
        }
    }
}
