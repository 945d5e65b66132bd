//! The inverse of [`super::split`]: stages put back together as one program, each stage
//! possibly replaced by another program of the same function (a rewrite variant of that kernel
//! alone), which may have kernel boundaries of its own.
//!
//! ```text
//! stages of p:  p_0_h(x, w1) = A          p(h, w2) = B
//! replaced by:  p_0_h(x, w1) = let t = toGlobal(C) in A'     p(h, w2) = B'
//! joined:       p(x, w1, w2) = let t = toGlobal(C) in let h = toGlobal(A') in B'
//! ```
//!
//! A stage's own boundaries come just before its result's, in their order, so a variable of
//! the stage that names one of them keeps its index; a parameter of the stage that is an
//! earlier stage's result becomes the variable of that result's `let`.

use super::{boundaries, Input, Stage};
use crate::ast::{AddressSpace, Meta, Node, NodeId, Prim, Program, SizeVar};
use std::collections::HashMap;

/// `p` with its stages (`split(p)`) replaced by `programs`, one per stage, each with the
/// parameters of the stage it replaces. Sizes the replacements declare and `p` does not are
/// declared after `p`'s (`p`'s declarations stand for its own); an error when two declare a
/// new name differently. A stage's result in views (`join(map(..))`, a tiled map) is stored
/// without them, read through them. The result is to be checked: a stage whose result is no
/// map or reduce under its views cannot be stored.
pub fn join(p: &Program, stages: &[Stage], programs: &[Program]) -> Result<Program, String> {
    if stages.len() != programs.len() || stages.is_empty() {
        return Err(format!("{} stages, {} programs to put in their place", stages.len(), programs.len()));
    }
    let mut j = Join { nodes: Vec::new(), meta: Vec::new(), chain: Vec::new(), results: Vec::new() };
    let mut root = NodeId(0);
    for (s, (stage, q)) in stages.iter().zip(programs).enumerate() {
        if q.params.len() != stage.program.params.len() {
            return Err(format!("program `{}` has not the parameters of stage `{}`", q.name, stage.program.name));
        }
        let (cuts, last) = boundaries(q);
        for cut in &cuts {
            let value = j.copy(q, &stage.inputs, cut.value);
            j.bind(value, cut.binder.clone());
        }
        if s + 1 == stages.len() {
            root = j.copy(q, &stage.inputs, last);
        } else {
            let (views, core) = peel(q, last);
            let body = j.copy(q, &stage.inputs, core);
            let views = views.iter().map(|v| j.copy(q, &stage.inputs, *v)).collect();
            j.bind(body, stage.binder.clone().unwrap_or_else(|| format!("t{s}")));
            j.results.push((j.chain.len() - 1, views));
        }
    }
    let mut at = root;
    for (value, binder) in std::mem::take(&mut j.chain).into_iter().rev() {
        at = j.push(Node::Let(value, at), Some(binder));
    }
    let mut sizes = p.sizes.clone();
    for v in programs.iter().flat_map(|q| &q.sizes).filter(|v| !p.sizes.iter().any(|d| d.name == v.name)) {
        declare(&mut sizes, v)?;
    }
    Ok(Program {
        name: p.name.clone(),
        sizes,
        params: p.params.clone(),
        ret: p.ret.clone(),
        nodes: j.nodes,
        meta: j.meta,
        root: at,
    })
}

/// The layout primitives of one argument (`join`, `split`, `transpose`, `asScalar`...)
/// `q`'s term `id` applies outermost, outermost first, and the term they apply to: a stage
/// stores that term (`toGlobal` wraps a map or reduce) and its readers apply the views.
fn peel(q: &Program, mut id: NodeId) -> (Vec<NodeId>, NodeId) {
    let mut views = Vec::new();
    loop {
        let (head, args) = q.spine(id);
        match (q.node(head), args.as_slice()) {
            (Node::Prim(prim), [x]) if prim.is_layout() && prim.arity() == 1 => {
                views.push(head);
                id = *x;
            }
            _ => return (views, id),
        }
    }
}

/// Adds `v` to `sizes` unless declared there the same way.
fn declare(sizes: &mut Vec<SizeVar>, v: &SizeVar) -> Result<(), String> {
    match sizes.iter().find(|d| d.name == v.name) {
        Some(d) if d == v => Ok(()),
        Some(_) => Err(format!("size `{}` is declared differently by two stages", v.name)),
        None => {
            sizes.push(v.clone());
            Ok(())
        }
    }
}

/// The program being built.
struct Join {
    nodes: Vec<Node>,
    meta: Vec<Meta>,
    /// The boundary `let`s so far, outermost first: value (with its `toGlobal`) and binder.
    chain: Vec<(NodeId, String)>,
    /// Each stage's result so far: the position of its `let` in `chain`, and the layout
    /// primitives (outermost first) its program applies to what the `let` stores.
    results: Vec<(usize, Vec<NodeId>)>,
}

impl Join {
    fn push(&mut self, n: Node, binder: Option<String>) -> NodeId {
        self.nodes.push(n);
        self.meta.push(Meta { binder, ..Meta::default() });
        NodeId(self.nodes.len() as u32 - 1)
    }

    /// The copy of `q`'s term `id` (a stage's program, with its `inputs`) under the chain so far.
    fn copy(&mut self, q: &Program, inputs: &[Input], id: NodeId) -> NodeId {
        Copy { q, inputs, depth: self.chain.len(), memo: HashMap::new() }.copy(self, id, 0)
    }

    /// Appends `let binder = toGlobal(value)` to the chain.
    fn bind(&mut self, value: NodeId, binder: String) {
        let to = self.push(Node::Prim(Prim::To(AddressSpace::Global)), None);
        let value = self.push(Node::App(to, value), None);
        self.chain.push((value, binder));
    }
}

/// Copies a term of a stage's program under `depth` boundary `let`s of the joined program.
struct Copy<'a> {
    q: &'a Program,
    inputs: &'a [Input],
    depth: usize,
    memo: HashMap<(NodeId, u32), NodeId>,
}

impl Copy<'_> {
    /// Stage `t`'s result under `inner` binders: the variable of its `let`, counted out from
    /// here, in the views its program wrote around what it stores.
    fn result(&mut self, j: &mut Join, t: usize, inner: u32) -> NodeId {
        let (at, views) = j.results[t].clone();
        let mut e = j.push(Node::Var(inner + (self.depth - 1 - at) as u32), None);
        for v in views.into_iter().rev() {
            e = j.push(Node::App(v, e), None);
        }
        e
    }

    /// The copy of `id`, under `inner` binders of its own term.
    fn copy(&mut self, j: &mut Join, id: NodeId, inner: u32) -> NodeId {
        if let Some(&done) = self.memo.get(&(id, inner)) {
            return done;
        }
        let node = match &self.q.nodes[id.index()] {
            Node::Param(i) => match self.inputs[*i as usize] {
                Input::Param(k) => Node::Param(k),
                Input::Stage(t) => return self.result(j, t, inner),
            },
            Node::App(f, x) => Node::App(self.copy(j, *f, inner), self.copy(j, *x, inner)),
            Node::Lam(b, ty) => Node::Lam(self.copy(j, *b, inner + 1), ty.clone()),
            Node::Let(v, b) => Node::Let(self.copy(j, *v, inner), self.copy(j, *b, inner + 1)),
            n => n.clone(),
        };
        j.nodes.push(node);
        j.meta.push(self.q.meta[id.index()].clone());
        let new = NodeId(j.nodes.len() as u32 - 1);
        self.memo.insert((id, inner), new);
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp;
    use crate::stages::split;

    const MLP: &str = "size M = 4, K = 6, H = 5, N = 3
def mlp(x: [[f32]K]M, w1: [[f32]K]H, w2: [[f32]H]N, s: f32) =
  let h = toGlobal(map@A(fun(r => map@B(fun(w => max(0.0, reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(r, w))))), w1)), x)) in
  map@D(fun(r => map@E(fun(w => s * reduce(add, 0.0, map@F(fun(p => p.0 * p.1), zip(r, w)))), w2)), h)";

    /// The first layer with its weights stored transposed by a kernel of its own.
    const LAYER: &str = "size M = 4, K = 6, H = 5, N = 3, tA in 1..4 = 2
def mlp_0_h(x: [[f32]K]M, w1: [[f32]K]H) =
  let wt = toGlobal(map@G(fun(r => map@I(fun(v => v), r)), transpose(w1))) in
  join(map@A(fun(rs => map@J(fun(r => map@B(fun(w => max(0.0, reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(r, w))))), transpose(wt))), rs)), split(tA, x)))";

    fn same_function(p: &Program, q: &Program) {
        crate::check::check(q).unwrap();
        let sizes = q.resolve_sizes(&crate::Sizes::new()).unwrap();
        let inputs = interp::random_inputs(p, &sizes, 5).unwrap();
        let want = interp::eval(p, &sizes, &inputs).unwrap();
        assert!(interp::eval(q, &sizes, &inputs).unwrap().compare(&want, 1e-6, 1e-6).ok);
    }

    #[test]
    fn joining_the_stages_of_a_program_gives_it_back() {
        let p = crate::parse(MLP).unwrap();
        let stages = split(&p).unwrap();
        let programs: Vec<Program> = stages.iter().map(|s| s.program.clone()).collect();
        let q = join(&p, &stages, &programs).unwrap();
        assert_eq!(crate::print(&q), crate::print(&p));
    }

    #[test]
    fn a_stage_with_a_boundary_of_its_own_puts_it_before_its_result() {
        let p = crate::parse(MLP).unwrap();
        let stages = split(&p).unwrap();
        let layer = crate::parse(LAYER).unwrap();
        assert_eq!(layer.params, stages[0].program.params);
        let q = join(&p, &stages, &[layer, stages[1].program.clone()]).unwrap();
        let joined = split(&q).unwrap();
        let names: Vec<&str> = joined.iter().map(|s| s.program.name.as_str()).collect();
        assert_eq!(names, ["mlp_0_wt", "mlp_1_h", "mlp"]);
        assert_eq!(joined[1].inputs, [Input::Param(0), Input::Stage(0)]);
        assert_eq!(joined[2].inputs, [Input::Param(2), Input::Param(3), Input::Stage(1)]);
        assert!(q.sizes.iter().any(|v| v.name == "tA"));
        same_function(&p, &q);
    }

    /// A stage stored tiled (`join(map(.., split(tA, ..)))`: the map stored, read through the
    /// `join`): the later kernel, a program of its own, takes the tiled array as a parameter and
    /// still type-checks (its `join` is as long as the split's input).
    #[test]
    fn a_stage_stored_tiled_is_read_through_its_join_by_the_next_kernel() {
        let src = "size N = 64, tA in 1..64 = 8
def v(x: [f32]N, y: [f32]N) : [f32]N =
  let a = toGlobal(map@A(fun(p => p.0 * 2.0 + p.1), zip(x, y))) in
  map@B(fun(p => p.0 * p.1 + 1.0), zip(a, x))";
        let p = crate::parse(src).unwrap();
        let stages = split(&p).unwrap();
        let tiled = crate::parse(
            "size N = 64, tA in 1..64 = 8
def v_0_a(x: [f32]N, y: [f32]N) = join(map@A(map@A_i(fun(p => p.0 * 2.0 + p.1)), split(tA, zip(x, y))))",
        )
        .unwrap();
        let q = join(&p, &stages, &[tiled, stages[1].program.clone()]).unwrap();
        for s in split(&q).unwrap() {
            crate::check::check(&s.program).unwrap_or_else(|e| panic!("{}: {}", s.program.name, e.message));
        }
        same_function(&p, &q);
    }

    #[test]
    fn sizes_declared_differently_are_refused() {
        let p = crate::parse(MLP).unwrap();
        let stages = split(&p).unwrap();
        let layer = crate::parse(LAYER).unwrap();
        let mut last = stages[1].program.clone();
        // The program's own sizes may be declared with other defaults (the sizes tuned at).
        last.sizes.iter_mut().for_each(|v| v.default = Some(7));
        last.sizes.push(SizeVar { name: "tA".into(), min: 1, max: Some(3), default: Some(3) });
        let e = join(&p, &stages, &[layer, last]).unwrap_err();
        assert_eq!(e, "size `tA` is declared differently by two stages");
        assert!(join(&p, &stages, &stages[..1].iter().map(|s| s.program.clone()).collect::<Vec<_>>()).is_err());
    }
}
