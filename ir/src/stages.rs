//! Kernel boundaries: a program cut into stages, each an ordinary program of its own.
//!
//! A `let` at the top of a program's body whose value is wrapped in `toGlobal` materializes its
//! value in global memory for the rest of the program: Halide's `compute_root`. Such a value
//! may be read by any thread later, which one kernel launch cannot order (there is no barrier
//! across work groups), so it is a *kernel boundary*: the program runs as a sequence of kernels,
//! one per stage, launched in order, each stage's result a global buffer that later stages read.
//!
//! ```text
//! def blur(x: [f32]N) =
//!   let h = toGlobal(map@A(..., x)) in     stage 0: blur_0_h(x) = map@A(..., x)
//!   map@B(..., h)                          stage 1: blur(x, h)  = map@B(..., h)
//! ```
//!
//! [`split`] makes the stages: the value of each boundary `let` (without its `toGlobal`) and
//! the final body, each with the parameters it uses (the program's, then earlier stages'
//! results) as its own parameters. Everything else is kept: sizes, labels (unique across the
//! stages, as in the program), names and spans. A stage is mapped, checked, lowered and tuned
//! like any program; running the stages in order, each on the results of the ones it reads,
//! computes what the program computes ([`eval`], tested against the interpreter on the whole
//! program). A program without boundaries is one stage, itself. A boundary that nothing reads
//! is dead code: it makes no stage, and no kernel is launched for it ([`dead`]).

use crate::ast::{AddressSpace, Meta, Node, NodeId, Param, Prim, Program, Span};
use crate::check::{self, TypeError};
use crate::interp::{self, EvalError, Tensor};
use crate::sizes::Sizes;
use std::collections::{HashMap, HashSet};

mod join;
pub use join::join;

/// Where a stage's parameter comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// The program's parameter at this position.
    Param(u32),
    /// The result of an earlier stage.
    Stage(usize),
}

/// One kernel of a program: an ordinary program, and where its parameters come from.
#[derive(Clone, Debug)]
pub struct Stage {
    /// The stage as a program of its own (named `NAME_K_BINDER` for the boundaries, `NAME` for
    /// the last stage).
    pub program: Program,
    /// The source of each of its parameters, in order.
    pub inputs: Vec<Input>,
    /// The name of the `let` whose value it computes; `None` for the last stage.
    pub binder: Option<String>,
}

/// A kernel boundary: `let binder = toGlobal(value) in ...` at the top of a program's body.
struct Cut {
    /// The `let`.
    at: NodeId,
    /// The value, without its `toGlobal`.
    value: NodeId,
    /// The bound name.
    binder: String,
}

/// The kernel boundaries at the top of `p`'s body, outermost first, and the final body.
fn boundaries(p: &Program) -> (Vec<Cut>, NodeId) {
    let mut out = Vec::new();
    let mut at = p.root;
    while let Node::Let(value, body) = p.nodes[at.index()] {
        let Some(inner) = to_global(p, value) else { break };
        let binder = p.meta[at.index()].binder.clone().unwrap_or_else(|| format!("t{}", out.len()));
        out.push(Cut { at, value: inner, binder });
        at = body;
    }
    (out, at)
}

/// `e` when `id` is `toGlobal(e)`.
fn to_global(p: &Program, id: NodeId) -> Option<NodeId> {
    match p.nodes[id.index()] {
        Node::App(f, e) if p.nodes[f.index()] == Node::Prim(Prim::To(AddressSpace::Global)) => Some(e),
        _ => None,
    }
}

/// Which boundaries of `cuts` are read, directly or through later ones, by the final body
/// `last`: a boundary nothing reads is dead code, and its kernel is not launched.
fn live(p: &Program, cuts: &[Cut], last: NodeId) -> Vec<bool> {
    let mut live = vec![false; cuts.len()];
    for k in reads(p, last, cuts.len()) {
        live[k] = true;
    }
    for k in (0..cuts.len()).rev() {
        if live[k] {
            for j in reads(p, cuts[k].value, k) {
                live[j] = true;
            }
        }
    }
    live
}

/// The boundaries the subterm `root`, under `depth` boundary `let`s, reads: a variable reaching
/// past the subterm's own binders names one of those.
fn reads(p: &Program, root: NodeId, depth: usize) -> Vec<usize> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut todo = vec![(root, 0u32)];
    while let Some((id, inner)) = todo.pop() {
        if !seen.insert((id, inner)) {
            continue;
        }
        match p.nodes[id.index()] {
            Node::Var(v) if v >= inner => out.extend(depth.checked_sub(1 + (v - inner) as usize)),
            Node::App(a, b) => todo.extend([(a, inner), (b, inner)]),
            Node::Lam(b, _) => todo.push((b, inner + 1)),
            Node::Let(v, b) => todo.extend([(v, inner), (b, inner + 1)]),
            _ => {}
        }
    }
    out
}

/// The number of kernels of `p`: its stages that are launched (1 for a program without kernel
/// boundaries).
pub fn count(p: &Program) -> usize {
    let (cuts, last) = boundaries(p);
    live(p, &cuts, last).into_iter().filter(|l| *l).count() + 1
}

/// A kernel boundary that nothing reads: `let x = toGlobal(..) in` where neither the result
/// nor a boundary read by it uses `x`. [`split`] leaves it out, like any dead code; it is
/// told as a warning ([`crate::diag::Diagnose`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dead {
    /// The bound name.
    pub binder: String,
    /// `let x = `, in the source.
    pub span: Span,
}

impl crate::diag::Diagnose for Dead {
    fn span(&self) -> Option<Span> {
        (self.span != Span::default()).then_some(self.span)
    }
    fn message(&self) -> String {
        format!("`{}` is not used by the program's result: its kernel is not launched", self.binder)
    }
    fn notes(&self) -> Vec<String> {
        vec!["a `let` whose value nothing reads, or only dead code reads, is dead code: use its value, or remove it"
            .into()]
    }
}

/// The kernel boundaries of `p` that nothing reads, outermost first.
pub fn dead(p: &Program) -> Vec<Dead> {
    let (cuts, last) = boundaries(p);
    let live = live(p, &cuts, last);
    // From `let` to where its value, `toGlobal(..)`, starts.
    let span = |c: &Cut| {
        let at = p.meta[c.at.index()].span;
        let value = p.nodes[c.at.index()].children()[0];
        Span { start: at.start, end: p.meta[value.index()].span.start.clamp(at.start, at.end) }
    };
    cuts.iter().zip(live).filter(|(_, l)| !l).map(|(c, _)| Dead { binder: c.binder.clone(), span: span(c) }).collect()
}

/// `p` without its dead boundaries ([`dead`], returned to be told): its stages put back
/// together ([`join`]); `p` itself when it has none, or does not type-check.
pub fn without_dead(p: &Program) -> (Program, Vec<Dead>) {
    let dead = dead(p);
    if dead.is_empty() {
        return (p.clone(), dead);
    }
    let Ok(stages) = split(p) else { return (p.clone(), dead) };
    let programs: Vec<Program> = stages.iter().map(|s| s.program.clone()).collect();
    (join(p, &stages, &programs).unwrap_or_else(|_| p.clone()), dead)
}

/// [`split`] of `p` with its vector widths written as size variables (`asVector(vw, ..)`) set
/// to their values in `sizes` ([`crate::widths::specialize`]), so that a boundary's type has
/// the width the kernels are built with (an array of 8-lane vectors at `vw = 8`, not of the
/// default's 4).
pub fn split_at(p: &Program, sizes: &crate::Sizes) -> Result<Vec<Stage>, TypeError> {
    let span = p.meta.get(p.root.0 as usize).map(|m| m.span).unwrap_or_default();
    let q = crate::widths::specialize(p, sizes).map_err(|message| TypeError { span, message, notes: Vec::new() })?;
    split(&q)
}

/// The stages of `p`, which must type-check (the results of the boundaries become parameters,
/// with their types). A program without boundaries is one stage: itself, with its parameters.
/// A boundary nothing reads ([`dead`]) makes no stage; the others keep their names
/// (`NAME_K_BINDER`, K counting every boundary).
pub fn split(p: &Program) -> Result<Vec<Stage>, TypeError> {
    let (cuts, last) = boundaries(p);
    if cuts.is_empty() {
        let inputs = (0..p.params.len() as u32).map(Input::Param).collect();
        return Ok(vec![Stage { program: p.clone(), inputs, binder: None }]);
    }
    let info = check::check(p)?;
    let live = live(p, &cuts, last);
    // The stage of each live boundary, by its index among the boundaries.
    let mut renumber = vec![usize::MAX; cuts.len()];
    let mut stages = Vec::with_capacity(cuts.len() + 1);
    let mut results: Vec<Param> = Vec::new();
    for (k, Cut { value, binder, .. }) in cuts.iter().enumerate() {
        if live[k] {
            renumber[k] = stages.len();
            let name = format!("{}_{k}_{binder}", p.name);
            stages.push(Copy::stage(p, *value, k, name, &results, Some(binder.clone())));
        }
        let ty = info.of(*value).cloned().unwrap_or_else(|| info.result.clone());
        results.push(Param { name: binder.clone(), ty });
    }
    stages.push(Copy::stage(p, last, cuts.len(), p.name.clone(), &results, None));
    for i in stages.iter_mut().flat_map(|s| &mut s.inputs) {
        if let Input::Stage(k) = i {
            *k = renumber[*k];
        }
    }
    Ok(stages)
}

/// Runs the stages with the reference interpreter, in order, each on the program's `inputs`
/// and the results of the stages before it: the program's result.
pub fn eval(stages: &[Stage], sizes: &Sizes, inputs: &[Tensor]) -> Result<Tensor, EvalError> {
    let mut results: Vec<Tensor> = Vec::with_capacity(stages.len());
    for s in stages {
        let args: Vec<Tensor> = s.inputs.iter().map(|i| input(*i, inputs, &results).clone()).collect();
        results.push(interp::eval(&s.program, sizes, &args)?);
    }
    Ok(results.pop().expect("split makes at least one stage"))
}

/// The value of a stage's input.
pub fn input<'a, T>(i: Input, params: &'a [T], results: &'a [T]) -> &'a T {
    match i {
        Input::Param(j) => &params[j as usize],
        Input::Stage(k) => &results[k],
    }
}

/// Copies the subterm of one stage into a program of its own. The subterm sits under `depth`
/// boundary `let`s: a variable reaching past its own binders names one of those (an earlier
/// stage's result), and becomes a parameter, as do the program's parameters it uses.
struct Copy<'a> {
    p: &'a Program,
    depth: usize,
    nodes: Vec<Node>,
    meta: Vec<Meta>,
    memo: HashMap<(NodeId, u32), NodeId>,
    /// The new parameters, in order of first use.
    inputs: Vec<Input>,
}

impl Copy<'_> {
    fn stage(
        p: &Program,
        root: NodeId,
        depth: usize,
        name: String,
        results: &[Param],
        binder: Option<String>,
    ) -> Stage {
        let mut c = Copy { p, depth, nodes: Vec::new(), meta: Vec::new(), memo: HashMap::new(), inputs: Vec::new() };
        let root = c.copy(root, 0);
        // Parameters in a stable order: the program's, then earlier stages' results.
        let mut order: Vec<Input> = c.inputs.clone();
        order.sort_by_key(|i| match i {
            Input::Param(j) => (0, *j as usize),
            Input::Stage(k) => (1, *k),
        });
        let renumber: Vec<u32> =
            c.inputs.iter().map(|i| order.iter().position(|o| o == i).expect("an input") as u32).collect();
        for n in &mut c.nodes {
            if let Node::Param(j) = n {
                *j = renumber[*j as usize];
            }
        }
        let params = order
            .iter()
            .map(|i| match i {
                Input::Param(j) => p.params[*j as usize].clone(),
                Input::Stage(k) => results[*k].clone(),
            })
            .collect();
        let program = Program { name, sizes: p.sizes.clone(), params, ret: None, nodes: c.nodes, meta: c.meta, root };
        Stage { program, inputs: order, binder }
    }

    /// The copy of `id`, under `inner` binders of its own stage.
    fn copy(&mut self, id: NodeId, inner: u32) -> NodeId {
        if let Some(&done) = self.memo.get(&(id, inner)) {
            return done;
        }
        let node = match &self.p.nodes[id.index()] {
            Node::Param(j) => Node::Param(self.param(Input::Param(*j))),
            Node::Var(v) if *v >= inner => {
                // The (v - inner)-th boundary `let` out from here: stage depth - 1 - (v - inner).
                let stage = self.depth - 1 - (*v - inner) as usize;
                Node::Param(self.param(Input::Stage(stage)))
            }
            Node::App(f, x) => Node::App(self.copy(*f, inner), self.copy(*x, inner)),
            Node::Lam(b, ty) => Node::Lam(self.copy(*b, inner + 1), ty.clone()),
            Node::Let(v, b) => Node::Let(self.copy(*v, inner), self.copy(*b, inner + 1)),
            n => n.clone(),
        };
        self.nodes.push(node);
        self.meta.push(self.p.meta[id.index()].clone());
        let new = NodeId(self.nodes.len() as u32 - 1);
        self.memo.insert((id, inner), new);
        new
    }

    /// The position (in order of first use) of a new parameter.
    fn param(&mut self, i: Input) -> u32 {
        match self.inputs.iter().position(|x| *x == i) {
            Some(k) => k as u32,
            None => {
                self.inputs.push(i);
                self.inputs.len() as u32 - 1
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLUR: &str = "size H = 6, W = 8
def blur(img: [[f32]W]H, k: f32) =
  let h = toGlobal(map@A(fun(row => map@B(fun(w => reduce(add, 0.0, w) * k), slide(3, 1, padClamp(1, 1, row)))), img)) in
  let v = toGlobal(map@C(fun(col => map@D(fun(w => reduce(add, 0.0, w)), slide(3, 1, padClamp(1, 1, col)))), transpose(h))) in
  map@E(fun(p => map@F(fun(q => q.0 - q.1), zip(p.0, p.1))), zip(img, transpose(v)))";

    #[test]
    fn a_separable_blur_is_three_stages_that_compute_the_program() {
        let p = crate::parse(BLUR).unwrap();
        assert_eq!(count(&p), 3);
        let stages = split(&p).unwrap();
        let names: Vec<&str> = stages.iter().map(|s| s.program.name.as_str()).collect();
        assert_eq!(names, ["blur_0_h", "blur_1_v", "blur"]);
        assert_eq!(stages[0].inputs, [Input::Param(0), Input::Param(1)]);
        assert_eq!(stages[1].inputs, [Input::Stage(0)]);
        assert_eq!(stages[2].inputs, [Input::Param(0), Input::Stage(1)]);
        assert_eq!(stages[1].program.params[0].ty.to_string(), "[[f32]W]H");
        assert_eq!(stages[2].program.params[1].ty.to_string(), "[[f32]H]W");
        for s in &stages {
            check::check(&s.program).unwrap();
            // Each stage is an ordinary program: printed and parsed back, the same.
            assert_eq!(crate::parse(&crate::print(&s.program)).unwrap(), s.program);
        }
        let sizes = p.resolve_sizes(&Sizes::new()).unwrap();
        let inputs = interp::random_inputs(&p, &sizes, 3).unwrap();
        let want = interp::eval(&p, &sizes, &inputs).unwrap();
        let got = eval(&stages, &sizes, &inputs).unwrap();
        assert!(got.compare(&want, 1e-6, 1e-6).ok);
    }

    #[test]
    fn a_boundary_nothing_reads_makes_no_stage() {
        // `d` is read by `e` only, which nothing reads: both are dead; `a` is read by `b`.
        let src = "size N = 8
def f(x: [f32]N) =
  let a = toGlobal(map@A(fun(v => v * 2.0), x)) in
  let d = toGlobal(map@D(fun(v => v * 3.0), a)) in
  let b = toGlobal(map@B(fun(v => v + 1.0), a)) in
  let e = toGlobal(map@E(fun(v => v / 0.0), d)) in
  map@C(fun(v => v - 1.0), b)";
        let p = crate::parse(src).unwrap();
        let binders: Vec<String> = dead(&p).into_iter().map(|d| d.binder).collect();
        assert_eq!(binders, ["d", "e"]);
        assert_eq!(count(&p), 3);
        let stages = split(&p).unwrap();
        let names: Vec<&str> = stages.iter().map(|s| s.program.name.as_str()).collect();
        assert_eq!(names, ["f_0_a", "f_2_b", "f"]);
        assert_eq!(stages[1].inputs, [Input::Stage(0)]);
        assert_eq!(stages[2].inputs, [Input::Stage(1)]);
        let sizes = p.resolve_sizes(&Sizes::new()).unwrap();
        let inputs = interp::random_inputs(&p, &sizes, 2).unwrap();
        let want = interp::eval(&p, &sizes, &inputs).unwrap();
        assert!(eval(&stages, &sizes, &inputs).unwrap().compare(&want, 0.0, 0.0).ok);
        // Without them, the program is the same function, with the labels of its kernels.
        let (q, _) = without_dead(&p);
        assert!(dead(&q).is_empty() && count(&q) == 3, "{}", crate::print(&q));
        assert_eq!(q.map_labels(), ["A", "B", "C"]);
        assert!(interp::eval(&q, &sizes, &inputs).unwrap().compare(&want, 0.0, 0.0).ok);
    }

    #[test]
    fn a_program_without_boundaries_is_one_stage() {
        let src = "size N = 8\ndef f(x: [f32]N) = let y = map@A(fun(v => v * 2.0), x) in map@B(fun(v => v + 1.0), y)";
        let p = crate::parse(src).unwrap();
        assert_eq!(count(&p), 1);
        let stages = split(&p).unwrap();
        assert_eq!(stages.len(), 1);
        assert_eq!(stages[0].program, p);
    }

    #[test]
    fn variables_under_the_stages_own_binders_stay_variables() {
        // Inside stage 1, `y` is under one lambda and one `let` of its own.
        let src = "size N = 8
def f(x: [f32]N) =
  let y = toGlobal(map@A(fun(v => v * 2.0), x)) in
  map@B(fun(v => let w = v + 1.0 in w * at(0, y)), x)";
        let p = crate::parse(src).unwrap();
        let stages = split(&p).unwrap();
        let last = &stages[1].program;
        assert_eq!(stages[1].inputs, [Input::Param(0), Input::Stage(0)]);
        let sizes = p.resolve_sizes(&Sizes::new()).unwrap();
        let inputs = interp::random_inputs(&p, &sizes, 5).unwrap();
        let want = interp::eval(&p, &sizes, &inputs).unwrap();
        assert!(eval(&stages, &sizes, &inputs).unwrap().compare(&want, 0.0, 0.0).ok, "{}", crate::print(last));
    }
}
