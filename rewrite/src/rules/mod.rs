//! Rewrite rules, one file per topic. Each rule is named, states both sides in the IR's own
//! notation and the condition under which it is sound.
//!
//! Rules are Rust searchers over the e-graph rather than egg patterns: map labels are part of
//! the `map` primitive, conditions read the analysis (free variables, types at the given sizes),
//! and the right-hand sides of binder-moving rules are computed on representatives by
//! [`crate::binders`]. A rule returns, for a class, the terms ([`Build`]) equal to it; the
//! saturation loop adds them and merges.
//!
//! The macros (`tile-map-map`, `register-block`) are sequences of these rules ([`sequence`]):
//! each step calls the primitive rule's own rewrite function on the class the step before made,
//! adds the term and merges it with that class.

pub mod conv_windows;
pub mod epilogue;
pub mod fusion;
pub mod interchange;
pub mod outer;
pub mod reduce;
pub mod register;
pub mod sequence;
pub mod slide;
pub mod split_join;
pub mod stages;
pub mod stencil2d;
pub mod tiling;
pub mod transpose_stage;
pub mod vectorize;
pub mod vectorize_across;

use crate::analysis::{Data, LiftGraph};
use crate::binders;
use crate::lang::Lift;
use egg::Language as _;
use egg::{AstSize, Extractor, Id, RecExpr};
use mapsat_ir::ast::{MapKind, Prim};
use mapsat_ir::{Size, Sizes, Type};
use std::collections::{BTreeMap, BTreeSet};

/// A term to add to the e-graph: existing classes, closed computed terms and new nodes.
#[derive(Clone, Debug)]
pub enum Build {
    /// An existing e-class.
    Class(Id),
    /// A term computed outside the e-graph (a shifted or substituted representative).
    Expr(RecExpr<Lift>),
    /// A new node over built children (the node's own children ids are ignored).
    Node(Lift, Vec<Build>),
}

impl Build {
    /// For `p(a1)...(ak)` built here, the arguments `a1 ... ak` (empty for any other term).
    pub fn args(&self) -> Vec<&Build> {
        match self {
            Build::Node(Lift::App(_), cs) => {
                let mut out = cs[0].args();
                out.push(&cs[1]);
                out
            }
            _ => Vec::new(),
        }
    }

    /// For `fun => body` built here, the body.
    pub fn body(&self) -> Option<&Build> {
        match self {
            Build::Node(Lift::Lam(..), cs) => cs.first(),
            _ => None,
        }
    }
}

impl Build {
    /// `f a`.
    pub fn app(f: Build, a: Build) -> Build {
        Build::Node(Lift::App([Id::from(0usize); 2]), vec![f, a])
    }

    /// A primitive.
    pub fn prim(p: Prim) -> Build {
        Build::Node(Lift::Prim(p), vec![])
    }

    /// A primitive applied to arguments, one at a time.
    pub fn call(p: Prim, args: Vec<Build>) -> Build {
        args.into_iter().fold(Build::prim(p), Build::app)
    }

    /// `map@label(f, xs)`.
    pub fn map(label: &str, f: Build, xs: Build) -> Build {
        Build::call(Prim::Map { kind: MapKind::Abstract, label: label.to_string() }, vec![f, xs])
    }

    /// `fun => body`.
    pub fn lam(body: Build) -> Build {
        Build::Node(Lift::Lam(None, [Id::from(0usize)]), vec![body])
    }

    /// A variable.
    pub fn var(k: u32, ty: Option<Type>) -> Build {
        Build::Node(Lift::Var(k, ty), vec![])
    }

    /// Number of nodes, counting an existing class as its smallest term.
    pub fn size(&self, eg: &LiftGraph) -> usize {
        match self {
            Build::Class(c) => eg[*c].data.size,
            Build::Expr(e) => e.len(),
            Build::Node(_, cs) => 1 + cs.iter().map(|c| c.size(eg)).sum::<usize>(),
        }
    }

    /// Adds the term to the e-graph.
    pub fn add(&self, eg: &mut LiftGraph) -> Id {
        match self {
            Build::Class(c) => *c,
            Build::Expr(e) => eg.add_expr(e),
            Build::Node(n, cs) => {
                let ids: Vec<Id> = cs.iter().map(|c| c.add(eg)).collect();
                let mut k = 0;
                let node = n.clone().map_children(|_| {
                    k += 1;
                    ids[k - 1]
                });
                eg.add(node)
            }
        }
    }
}

/// Limits and choices every rule reads.
#[derive(Clone, Debug)]
pub struct Params {
    /// Concrete sizes at which divisibility is decided (every size variable of the program).
    pub sizes: Sizes,
    /// Candidate split factors: constants, and the program's tunable size variables.
    pub factors: Vec<Size>,
    /// New tile sizes by map label ([`crate::tiles`]): a map with one is split by it only.
    pub tiles: std::collections::BTreeMap<String, Size>,
    /// New tile sizes of reductions by length ([`crate::tiles`]): `partial-reduce` splits a
    /// reduction of that length by it too.
    pub reduction_tiles: std::collections::BTreeMap<i64, Size>,
    /// Largest array rank a rule may create.
    pub max_rank: usize,
    /// The new vector width `vectorize-map` writes ([`crate::tiles::new_vector_width`]): the
    /// literal 4 when `None`.
    pub vector_width: Option<String>,
    /// The program's body (where `transpose-stage` adds a kernel boundary); `None`: nowhere.
    pub root: Option<Id>,
}

/// What a rule sees: the e-graph, smallest representatives, the parameters.
pub struct Ctx<'a> {
    /// The e-graph (read only during search).
    pub eg: &'a LiftGraph,
    /// Smallest representatives, for the binder operations (computed on first use).
    repr: std::cell::OnceCell<Extractor<'a, AstSize, Lift, crate::analysis::Meta>>,
    /// Limits and split factors.
    pub params: &'a Params,
}

impl<'a> Ctx<'a> {
    /// The context of one search over `eg`.
    pub fn new(eg: &'a LiftGraph, params: &'a Params) -> Ctx<'a> {
        Ctx { eg, repr: std::cell::OnceCell::new(), params }
    }

    /// The smallest term of class `c`.
    pub fn repr(&self, c: Id) -> RecExpr<Lift> {
        self.repr.get_or_init(|| Extractor::new(self.eg, AstSize)).find_best(c).1
    }

    /// True when class `c` is a `toX` primitive (which must stay applied to a map or reduce).
    pub fn is_to(&self, c: Id) -> bool {
        crate::analysis::is_to(self.eg, c)
    }

    /// A class's analysis data.
    pub fn data(&self, c: Id) -> &Data {
        &self.eg[c].data
    }

    /// A class moved under `d` more binders (or out of `-d`): the class itself when it is
    /// closed, else its shifted representative; `None` when it uses a binder it leaves.
    pub fn shifted(&self, c: Id, d: i64) -> Option<Build> {
        self.shifted_with(c, d, &BTreeMap::new())
    }

    /// The smallest term of class `c`, except that the classes of `forms` are read as the node
    /// given for each (the form a rule matched, where it is not the smallest; a form met again
    /// inside itself is read as the smallest).
    pub fn repr_with(&self, c: Id, forms: &BTreeMap<Id, Lift>) -> RecExpr<Lift> {
        if forms.is_empty() {
            return self.repr(c);
        }
        let best = self.repr.get_or_init(|| Extractor::new(self.eg, AstSize));
        let forms: BTreeMap<Id, &Lift> = forms.iter().map(|(k, n)| (self.eg.find(*k), n)).collect();
        let mut out = RecExpr::default();
        let mut open = BTreeSet::new();
        self.extract(c, best, &forms, &mut open, &mut out);
        out
    }

    fn extract(
        &self,
        c: Id,
        best: &Extractor<'a, AstSize, Lift, crate::analysis::Meta>,
        forms: &BTreeMap<Id, &Lift>,
        open: &mut BTreeSet<Id>,
        out: &mut RecExpr<Lift>,
    ) -> Id {
        let c = self.eg.find(c);
        match forms.get(&c) {
            Some(n) if open.insert(c) => {
                let node = (*n).clone().map_children(|k| self.extract(k, best, forms, open, out));
                open.remove(&c);
                out.add(node)
            }
            Some(_) => binders::append(out, &best.find_best(c).1),
            None => {
                let node = best.find_best_node(c).clone().map_children(|k| self.extract(k, best, forms, open, out));
                out.add(node)
            }
        }
    }

    /// [`Ctx::shifted`] of the term of class `c` in the forms `forms` ([`Ctx::repr_with`]).
    pub fn shifted_with(&self, c: Id, d: i64, forms: &BTreeMap<Id, Lift>) -> Option<Build> {
        let data = self.data(c);
        if data.closed() {
            return Some(Build::Class(c));
        }
        if d < 0 && data.free.iter().any(|&k| i64::from(k) < -d) {
            return None;
        }
        binders::shift(&self.repr_with(c, forms), d, 0).map(Build::Expr)
    }

    /// The first node `fun => body` of class `c`.
    pub fn lam_node(&self, c: Id, body: Id) -> Option<Lift> {
        let body = self.eg.find(body);
        self.eg[c].nodes.iter().find(|n| matches!(n, Lift::Lam(_, [b]) if self.eg.find(*b) == body)).cloned()
    }

    /// The first node `f(arg)` of class `c` (any `f`).
    pub fn app_node(&self, c: Id, arg: Id) -> Option<Lift> {
        let arg = self.eg.find(arg);
        self.eg[c].nodes.iter().find(|n| matches!(n, Lift::App([_, a]) if self.eg.find(*a) == arg)).cloned()
    }

    /// A class moved under `d` more binders placed just outside its variables below `cutoff`
    /// (those keep their index): the class itself when it uses none of the others, else its
    /// representative with the others shifted by `d`.
    pub fn shifted_from(&self, c: Id, d: i64, cutoff: u32) -> Option<Build> {
        if self.data(c).free.iter().all(|&k| k < cutoff) {
            return Some(Build::Class(c));
        }
        binders::shift(&self.repr(c), d, cutoff).map(Build::Expr)
    }

    /// `(fun => body) arg` reduced, on representatives.
    pub fn beta(&self, body: Id, arg: Id) -> Option<Build> {
        binders::beta(&self.repr(body), &self.repr(arg)).map(Build::Expr)
    }

    /// True when class `c` is variable 0.
    pub fn is_var0(&self, c: Id) -> bool {
        self.eg[c].nodes.iter().any(|n| matches!(n, Lift::Var(0, _)))
    }

    /// The concrete length of an array class at the given sizes.
    pub fn length(&self, c: Id) -> Option<i64> {
        self.data(c).ty.array().and_then(|(_, n)| n.eval(&self.params.sizes))
    }

    /// The split factors that divide `len` at the sizes, other than 1 and `len` itself.
    pub fn factors(&self, len: i64) -> Vec<Size> {
        self.dividing(&self.params.factors, len)
    }

    /// The split factors of the map labelled `label` that divide `len`: its tile size if it has
    /// one, else [`Ctx::factors`].
    pub fn map_factors(&self, label: &str, len: i64) -> Vec<Size> {
        match self.params.tiles.get(label) {
            Some(t) => self.dividing(std::slice::from_ref(t), len),
            None => self.factors(len),
        }
    }

    fn dividing(&self, factors: &[Size], len: i64) -> Vec<Size> {
        let divides = |n: i64| n > 1 && n < len && len % n == 0;
        factors.iter().filter(|f| f.eval(&self.params.sizes).is_some_and(divides)).cloned().collect()
    }

    /// The element type of an array class.
    pub fn elem(&self, c: Id) -> Option<Type> {
        self.data(c).ty.array().map(|(e, _)| e.clone())
    }

    /// The primitive applications of class `c`: each way to read it as `p a1 ... ak` with `k`
    /// the primitive's arity.
    pub fn calls(&self, c: Id) -> Vec<(Prim, Vec<Id>)> {
        let mut out = Vec::new();
        for (p, args) in self.spines(c, 3) {
            if args.len() == p.arity() {
                out.push((p, args));
            }
        }
        out
    }

    fn spines(&self, c: Id, depth: usize) -> Vec<(Prim, Vec<Id>)> {
        let mut out = Vec::new();
        for n in &self.eg[c].nodes {
            match n {
                Lift::Prim(p) => out.push((p.clone(), vec![])),
                Lift::App([f, a]) if depth > 0 => {
                    for (p, mut args) in self.spines(*f, depth - 1) {
                        args.push(*a);
                        out.push((p, args));
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// The abstract maps of class `c`: `(label, f, xs)`.
    pub fn maps(&self, c: Id) -> Vec<(String, Id, Id)> {
        self.calls(c)
            .into_iter()
            .filter_map(|(p, a)| match p {
                Prim::Map { kind: MapKind::Abstract, label } => Some((label, a[0], a[1])),
                _ => None,
            })
            .collect()
    }

    /// The abstract maps applied to their function only (`map@label(f)`, a function on arrays)
    /// in class `c`: `(label, f)`.
    pub fn partial_maps(&self, c: Id) -> Vec<(String, Id)> {
        self.spines(c, 1)
            .into_iter()
            .filter_map(|(p, a)| match p {
                Prim::Map { kind: MapKind::Abstract, label } if a.len() == 1 => Some((label, a[0])),
                _ => None,
            })
            .collect()
    }

    /// The high-level reductions of class `c`: `(op, init, xs)`.
    pub fn reduces(&self, c: Id) -> Vec<(Id, Id, Id)> {
        self.calls(c)
            .into_iter()
            .filter_map(|(p, a)| matches!(p, Prim::Reduce { seq: false }).then(|| (a[0], a[1], a[2])))
            .collect()
    }

    /// The bodies of the lambdas of class `c`.
    pub fn lambdas(&self, c: Id) -> Vec<Id> {
        self.eg[c].nodes.iter().filter_map(|n| if let Lift::Lam(_, [b]) = n { Some(*b) } else { None }).collect()
    }
}

/// The label of a map a rule creates from the map labelled `label`: `label` and the rule's
/// suffix, once (a map made by the same rule from a map it made keeps its label, so that
/// repeating the rule meets terms already in the e-graph instead of new labels without end;
/// extraction makes the labels of a variant unique). `slide-map` uses it; fission does not:
/// there it merges so many classes that the matches of one iteration on matmul at 100k
/// e-nodes took 2.3 GB instead of 0.5 GB.
pub fn derived(label: &str, suffix: &str) -> String {
    match label.ends_with(suffix) {
        true => label.to_string(),
        false => format!("{label}{suffix}"),
    }
}

/// A rewrite rule.
pub trait Rule {
    /// The rule's name (reported in the summary's application counts).
    fn name(&self) -> &'static str;
    /// Terms equal to class `c` (none for a macro, whose terms its steps add).
    fn search(&self, cx: &Ctx, c: Id) -> Vec<Build>;
    /// For a macro, the sequence of primitive rules it is ([`sequence`]); `None` for a
    /// primitive rule.
    fn sequence(&self) -> Option<&dyn sequence::Sequence> {
        None
    }
}

/// The rules that are steps of the macros only ([`sequence`]): not in the main phase, where
/// each would rewrite every map it matches (every map η-expanded, every nest interchanged,
/// every reduction under a map turned into one over rows of accumulators, every map over columns
/// vectorized); selectable by name.
pub const STEPS_ONLY: [&str; 4] = ["eta-expand", "map-map-interchange", "map-reduce-interchange", "vectorize-across"];

/// Every rule, in a fixed order.
pub fn all() -> Vec<Box<dyn Rule>> {
    vec![
        Box::new(split_join::SplitJoin),
        Box::new(fusion::MapFusion),
        Box::new(fusion::MapFission { nested_only: false }),
        Box::new(fusion::MapFission { nested_only: true }),
        Box::new(fusion::Beta),
        Box::new(reduce::ReduceMapFusion),
        Box::new(reduce::PartialReduce),
        Box::new(tiling::TileMapMap),
        Box::new(register::RegisterBlock),
        Box::new(outer::OuterProduct),
        Box::new(interchange::MapInterchange),
        Box::new(interchange::TransposeTranspose),
        Box::new(interchange::Eta),
        Box::new(interchange::EtaExpand),
        Box::new(interchange::MapMapInterchange),
        Box::new(interchange::MapReduceInterchange),
        Box::new(slide::SlideMap),
        Box::new(slide::PadMap),
        Box::new(slide::SlideTiling),
        Box::new(stencil2d::Slide2dTiling),
        Box::new(stages::LetInline),
        Box::new(transpose_stage::TransposeStage),
        Box::new(conv_windows::ConvWindows),
        Box::new(vectorize::VectorizeMap),
        Box::new(vectorize::AsScalarAsVector),
        Box::new(vectorize::AsVectorAsScalar),
        Box::new(vectorize_across::VectorizeAcross),
    ]
}
