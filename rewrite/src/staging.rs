//! Memory variants: partial results staged in private memory.
//!
//! `toPrivate(e)` changes where the map or reduce `e` writes its result, not the value (the
//! interpreter treats every `toX` as the identity), so staging is sound wherever the IR allows
//! it; whether a mapping can honour it is the constraint space's business. It is applied to the
//! extracted variants rather than inside the e-graph: a `toX` node merged into its own class
//! would let extraction put it around forms other than a map or reduce, which the IR forbids.

use mapsat_ir::ast::{AddressSpace, Meta, Node, NodeId, Prim};
use mapsat_ir::Program;

/// The program with every high-level `reduce` that runs inside a function (under a binder: a
/// partial sum of a map's element) and is not already placed wrapped in `toPrivate(...)`;
/// `None` when there is none.
pub fn stage_private(p: &Program) -> Option<Program> {
    let mut out = Program { nodes: Vec::new(), meta: Vec::new(), ..p.clone() };
    let mut changed = false;
    out.root = copy(p, p.root, 0, false, &mut out, &mut changed);
    changed.then_some(out)
}

/// Copies the term at `id` (under `depth` binders; `placed` when its parent is a `toX`).
fn copy(p: &Program, id: NodeId, depth: u32, placed: bool, out: &mut Program, changed: &mut bool) -> NodeId {
    let meta = p.meta.get(id.index()).cloned().unwrap_or_default();
    let new = match p.node(id) {
        Node::App(f, a) => {
            let is_to = matches!(p.node(*f), Node::Prim(Prim::To(_)));
            let f2 = copy(p, *f, depth, false, out, changed);
            let a2 = copy(p, *a, depth, is_to, out, changed);
            Node::App(f2, a2)
        }
        Node::Lam(b, ann) => Node::Lam(copy(p, *b, depth + 1, false, out, changed), ann.clone()),
        Node::Let(v, b) => {
            let v2 = copy(p, *v, depth, false, out, changed);
            Node::Let(v2, copy(p, *b, depth + 1, false, out, changed))
        }
        leaf => leaf.clone(),
    };
    let copied = out.push(new, meta);
    if depth > 0 && !placed && is_reduce(p, id) {
        *changed = true;
        let to = out.push(Node::Prim(Prim::To(AddressSpace::Private)), Meta::default());
        return out.push(Node::App(to, copied), Meta::default());
    }
    copied
}

/// True for a saturated high-level `reduce(f, init, xs)`.
fn is_reduce(p: &Program, id: NodeId) -> bool {
    let (head, args) = p.spine(id);
    matches!(p.node(head), Node::Prim(Prim::Reduce { seq: false })) && args.len() == 3
}
