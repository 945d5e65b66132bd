//! Extraction of K diverse variants.
//!
//! No e-graph library offers top-K extraction; this one is a small beam over *choices*:
//!
//! 1. The best term by a static cost ([`StaticCost`]: loops and intermediate arrays; egg's
//!    bottom-up extractor).
//! 2. Neighbours: for each class the best term goes through, each other node of that class is
//!    forced in turn (the rest of the term stays best); then once more from the cheapest
//!    neighbours of distinct structure (two rounds reach, e.g., a tiled map around a partial
//!    reduction).
//! 3. Targeted seeds: terms forced through a producer computed per tile
//!    ([`crate::compute_at`]) and through each vectorized map and tile slide
//!    ([`crate::kinds`]), which the neighbour search does not reach.
//! 4. Every candidate is turned into a program (labels made unique), checked at the sizes, and
//!    given a structural signature ([`signature`]: the sequence of maps, reductions, split
//!    factors and joins in pre-order). The K chosen are the cheapest of each kind (tiled, locally
//!    staged) first, then of each distinct tiling (the sequence of split
//!    factors), then of each distinct signature, then the cheapest remaining; ties by printed
//!    text, so the result is deterministic.

use crate::analysis::LiftGraph;
use crate::convert::{self, Term};
use crate::cost::StaticCost;
use crate::lang::Lift;
use crate::staging;
use egg::{CostFunction, Extractor, Id, Language, RecExpr};
use mapsat_ir::ast::{AddressSpace, Node, Prim};
use mapsat_ir::{Program, Sizes, Type};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// One extracted variant.
#[derive(Clone, Debug)]
pub struct Variant {
    /// The program (checked at the sizes; labels unique).
    pub program: Program,
    /// Its static cost.
    pub cost: usize,
    /// Its structural signature.
    pub signature: String,
    /// Arrays it computes with a map and reads back in the same term (0: every producer is
    /// fused into its consumer or kept by `toX`/`let`), by the static cost's count.
    pub intermediates: usize,
    /// Where it computes each producer of the input ([`crate::stage_choice`]; set by
    /// [`crate::rewrite`]).
    pub stages: Vec<crate::stage_choice::StageChoice>,
}

/// What extraction needs besides the e-graph.
pub struct Source<'a> {
    /// The input program (name, sizes, parameters).
    pub template: &'a Program,
    /// The root class.
    pub root: Id,
    /// Binder names.
    pub names: &'a crate::convert::Names,
    /// Sizes at which variants are checked (new tile sizes included).
    pub sizes: &'a Sizes,
    /// New tile sizes, declared in the variants that use them.
    pub tiles: &'a [crate::tiles::Tile],
    /// The new vector width, declared in the variants that use it.
    pub width: Option<&'a mapsat_ir::ast::SizeVar>,
}

/// Largest number of choice sets expanded in the second round.
const BEAM: usize = 8;
/// Largest number of distinct candidate terms checked in one round.
const CANDIDATES: usize = 400;

/// The best `k` diverse variants (fewer if the e-graph holds fewer distinct valid ones), and how
/// many candidate terms did not type-check (0 unless a rule is unsound: every term of an
/// e-graph built by sound rules is well typed).
pub fn variants(eg: &LiftGraph, src: &Source, k: usize) -> (Vec<Variant>, usize) {
    let mut rejected = 0;
    let ext = Extractor::new(eg, StaticCost);
    let canonical = |m: &BTreeMap<Id, String>| -> BTreeMap<Id, String> {
        m.iter().map(|(c, n)| (eg.find(*c), n.clone())).collect()
    };
    let names = crate::convert::Names { lambdas: canonical(&src.names.lambdas), lets: canonical(&src.names.lets) };
    let builder = Builder { eg, ext: &ext, names: &names };
    let mut found: BTreeMap<String, Variant> = BTreeMap::new();
    let mut frontier: Vec<BTreeMap<Id, Lift>> = vec![BTreeMap::new()];
    // Only to skip terms already tried; never iterated.
    let mut terms: HashSet<RecExpr<Lift>> = HashSet::new();
    for _round in 0..2 {
        let mut next: Vec<(usize, String, BTreeMap<Id, Lift>)> = Vec::new();
        let per_base = CANDIDATES / frontier.len().max(1);
        for forced in &frontier {
            let (_, visited) = builder.build(src.root, forced);
            let mut tried = 0;
            for (c, n) in visited
                .iter()
                .filter(|c| !forced.contains_key(c))
                .flat_map(|c| eg[*c].nodes.iter().map(move |n| (*c, n)))
            {
                if tried >= per_base {
                    break;
                }
                let mut f = forced.clone();
                f.insert(c, n.clone());
                let (term, _) = builder.build(src.root, &f);
                if !terms.insert(term.expr.clone()) {
                    continue;
                }
                tried += 1;
                match finish(src, &term) {
                    Some(v) => {
                        let text = mapsat_ir::print(&v.program);
                        next.push((v.cost, v.signature.clone(), f));
                        found.entry(text).or_insert(v);
                    }
                    None => rejected += 1,
                }
            }
        }
        next.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        let mut seen = BTreeSet::new();
        frontier = next.into_iter().filter(|(_, s, _)| seen.insert(s.clone())).map(|(_, _, f)| f).take(BEAM).collect();
    }
    let seeds = crate::kinds::seeds(eg, src.root);
    let tiled2d = crate::tiled2d::choices(eg, src.root);
    for forced in crate::compute_at::choices(eg, src.root).into_iter().chain(tiled2d).chain(seeds) {
        let (term, _) = builder.build(src.root, &forced);
        if !terms.insert(term.expr.clone()) {
            continue;
        }
        match finish(src, &term) {
            Some(v) => {
                found.entry(mapsat_ir::print(&v.program)).or_insert(v);
            }
            None => rejected += 1,
        }
    }
    let (term, _) = builder.build(src.root, &BTreeMap::new());
    if let Some(v) = finish(src, &term) {
        found.entry(mapsat_ir::print(&v.program)).or_insert(v);
    }
    let panels: Vec<Variant> = found.values().filter_map(|v| stage(v, src.sizes, staging::stage_panels)).collect();
    for v in panels {
        found.entry(mapsat_ir::print(&v.program)).or_insert(v);
    }
    let local: Vec<Variant> = found.values().filter_map(|v| stage(v, src.sizes, staging::stage_local)).collect();
    for v in local {
        found.entry(mapsat_ir::print(&v.program)).or_insert(v);
    }
    let staged: Vec<Variant> = found.values().filter_map(|v| stage(v, src.sizes, staging::stage_private)).collect();
    for v in staged {
        found.entry(mapsat_ir::print(&v.program)).or_insert(v);
    }
    (choose(found, k), rejected)
}

/// The cheapest of each distinct number of kernels (the stage choices: stages kept in global
/// memory, or inlined into their consumers) and the cheapest outer product (kind `BV`) first,
/// then of each kind ([`kinds_of`]: tiled,
/// locally staged) not yet offered, then of each distinct tiling and staging (sequence of
/// split factors and `toX`), then of each distinct signature, then the cheapest others; the
/// best by cost always first. A variant with a transpose of a transpose is left out, and one
/// without a map where others have one.
fn choose(found: BTreeMap<String, Variant>, k: usize) -> Vec<Variant> {
    let mut all: Vec<(String, Variant)> = found.into_iter().collect();
    all.sort_by(|a, b| (a.1.cost, &a.0).cmp(&(b.1.cost, &b.0)));
    let (mut stages, mut kinds) = (BTreeSet::new(), BTreeSet::new());
    let (mut tilings, mut sigs) = (BTreeSet::new(), BTreeSet::new());
    let mut tiers: [Vec<Variant>; 5] = Default::default();
    // Variants without a map only where no variant has one (the program as written, at no
    // iteration).
    let mappable = all.iter().any(|(_, v)| has_map(&v.program));
    let kept =
        all.into_iter().filter(|(_, v)| !transposes_a_transpose(&v.program) && (has_map(&v.program) || !mappable));
    for (_, v) in kept {
        let new_kinds: Vec<String> = kinds_of(&v).into_iter().filter(|k| kinds.insert(k.clone())).collect();
        // A new number of kernels, and the first outer product (the fastest form of every
        // product measured), come first.
        let tier = if stages.insert(mapsat_ir::stages::count(&v.program)) || new_kinds.iter().any(|k| k == "BV") {
            0
        } else if !new_kinds.is_empty() {
            1
        } else if tilings.insert(tiling(&v.signature)) {
            2
        } else if sigs.insert(v.signature.clone()) {
            3
        } else {
            4
        };
        tilings.insert(tiling(&v.signature));
        sigs.insert(v.signature.clone());
        tiers[tier].push(v);
    }
    tiers.into_iter().flatten().take(k).collect()
}

/// True when `p` has a map: a variant without one (every map fused into a reduction) has
/// nothing to run in parallel, and no mapping (`mapsat tune` refuses it).
fn has_map(p: &Program) -> bool {
    p.nodes.iter().any(|n| matches!(n, Node::Prim(Prim::Map { .. })))
}

/// True when `p` has `transpose(transpose(e))`: the same variant as with `e` (which the e-graph
/// holds too, by `transpose-transpose`), with two more views to lower and tune.
fn transposes_a_transpose(p: &Program) -> bool {
    let transposed = |n: &Node| match n {
        Node::App(f, e) if matches!(p.node(*f), Node::Prim(Prim::Transpose)) => Some(*e),
        _ => None,
    };
    p.nodes.iter().filter_map(transposed).any(|e| transposed(p.node(e)).is_some())
}

/// The kinds of a variant given a place of their own: those of its signature
/// ([`signature_kinds`]) and of the macros' forms in it ([`macro_kinds`]).
fn kinds_of(v: &Variant) -> BTreeSet<String> {
    let mut kinds = signature_kinds(&v.signature);
    kinds.extend(macro_kinds(&v.program).into_iter().map(String::from));
    kinds
}

/// The kinds of a signature: `W` (tiled by a tile slide), `L`
/// (staged in local memory), `D` (tiled in two dimensions: two tile slides or more) and `E`
/// with the number of tile slides (tiled in two dimensions and staged in local memory: `E2`
/// for a 2-D stencil, `E4` for a pipeline of two with both tiled) and `E2SP` when such a
/// variant also splits a map into groups and keeps partial sums in private memory (a
/// convolution's output channels in groups, as in `examples/conv_blocked.lift`). Not `V`: a vectorized
/// variant may read vectors of a strided array (matmul's columns), which code generation
/// refuses and this crate cannot tell; it competes as a distinct tiling.
fn signature_kinds(signature: &str) -> BTreeSet<String> {
    let mut kinds: BTreeSet<String> =
        ["W[", "L"].iter().filter(|k| signature.contains(*k)).map(|k| k[..1].to_string()).collect();
    let tile_slides = signature.matches("W[").count();
    if tile_slides >= 2 {
        kinds.insert("D".to_string());
        if kinds.contains("L") {
            kinds.insert(format!("E{tile_slides}"));
            if signature.contains("S[") && signature.contains('P') {
                kinds.insert(format!("E{tile_slides}SP"));
            }
        }
    }
    kinds
}

/// The kinds of the macros' forms in a program: `T2` (a map nest tiled in 2-D, blocks put back
/// by `map(join, transpose(..))`, [`crate::rules::tiling`]), `B` (register-blocked,
/// [`crate::rules::register`], with its accumulators staged in private memory: unstaged, the
/// accumulator array is shared by the threads a mapping of its maps gives), `T2K` (tiled in
/// 2-D with a reduction split by a tunable size, as `examples/matmul_tiled.lift` splits its dot
/// products by `tK`), `BV` (register-blocked with vectors: the outer product of
/// [`crate::rules::outer`], vectors of columns times blocks of rows), and `T2L` and `T2KL` (`T2` and `T2K` with the panels of each block, the
/// tile's rows of `a` and columns of `b`, copied to local memory:
/// [`crate::staging::stage_panels`], as `examples/matmul_lowlevel.lift`).
fn macro_kinds(p: &Program) -> BTreeSet<&'static str> {
    let mut out = BTreeSet::new();
    // Types, for the outer product only (checked once, at its first register block).
    let mut info = None;
    if p.nodes.iter().any(|n| split_reduce(p, n)) {
        out.insert("K");
    }
    for node in &p.nodes {
        let Node::App(f, x) = node else { continue };
        let (head, args) = p.spine(*f);
        let prim = |id: mapsat_ir::NodeId| match p.node(p.spine(id).0) {
            Node::Prim(q) => Some(q),
            _ => None,
        };
        let is_prim = |id: mapsat_ir::NodeId, want: Prim| prim(id) == Some(&want);
        match (p.node(head), args.as_slice()) {
            (Node::Prim(Prim::Map { .. }), [j]) if is_prim(*j, Prim::Join) && is_prim(*x, Prim::Transpose) => {
                out.insert("T2");
            }
            (Node::Prim(Prim::To(AddressSpace::Private)), []) if array_reduce(p, *x) => {
                out.insert("B");
                let info = info.get_or_insert_with(|| mapsat_ir::check::check(p).ok());
                if info.as_ref().is_some_and(|info| outer_product(p, info, *x)) {
                    out.insert("BV");
                }
            }
            _ => {}
        }
    }
    let local = p.nodes.iter().any(|n| matches!(n, Node::Prim(Prim::To(AddressSpace::Local))));
    if out.remove("K") && out.contains("T2") {
        out.insert("T2K");
        if local {
            out.insert("T2KL");
        }
    }
    if local && out.contains("T2") {
        out.insert("T2L");
    }
    out
}

/// True for `reduce(op, init, map(f, split(n, xs)))` with a symbolic `n`: a reduction split by a
/// tunable size.
fn split_reduce(p: &Program, node: &Node) -> bool {
    let Node::App(f, x) = node else { return false };
    let (head, args) = p.spine(*f);
    let (map, map_args) = p.spine(*x);
    let [_, chunks] = map_args.as_slice() else { return false };
    let (split, _) = p.spine(*chunks);
    matches!(p.node(head), Node::Prim(Prim::Reduce { .. }))
        && args.len() == 2
        && matches!(p.node(map), Node::Prim(Prim::Map { .. }))
        && matches!(p.node(split), Node::Prim(Prim::Split(n)) if n.as_const().is_none())
}

/// True when `id`, a reduction over an array accumulator ([`array_reduce`]), has accumulators
/// that are vectors, as many as a tunable size (the block of rows), and steps over pairs of an
/// array of scalars (one for each accumulator, broadcast) and another value: the outer product
/// of [`crate::rules::outer`] (a register block of vectors of columns over a row, whose pairs
/// hold an array of vectors, is not one). A block of a constant size (a split by a constant
/// factor of the main phase, inside or beside the tunable one) is not the kind's: with an
/// epilogue (a `relu` after the product) the static cost prefers it, applied outside the
/// blocks, to the macro's form, the epilogue applied in each block.
fn outer_product(p: &Program, info: &mapsat_ir::check::TypeInfo, id: mapsat_ir::NodeId) -> bool {
    let args = p.spine(id).1;
    let vectors = matches!(info.of(args[1]), Some(Type::Array(e, n)) if matches!(**e, Type::Vector(..)) && n.as_const().is_none());
    let scalars = |t: &Type| matches!(t, Type::Array(e, _) if matches!(**e, Type::Scalar(_)));
    let pairs = matches!(info.of(args[2]), Some(Type::Array(e, _)) if matches!(&**e, Type::Tuple(ts) if ts.iter().any(scalars)));
    vectors && pairs
}

/// True when `id` is `reduce(f, map(..), xs)`: a reduction over an array accumulator made by a map.
fn array_reduce(p: &Program, id: mapsat_ir::NodeId) -> bool {
    let (head, args) = p.spine(id);
    let is_map = |id: mapsat_ir::NodeId| matches!(p.node(p.spine(id).0), Node::Prim(Prim::Map { .. }));
    matches!(p.node(head), Node::Prim(Prim::Reduce { .. })) && args.len() == 3 && is_map(args[1])
}

/// A variant with a memory staging applied ([`crate::staging`]: partial reductions in private
/// memory, per-tile producers in local memory), if it has anything to stage and the result checks.
fn stage(v: &Variant, sizes: &Sizes, how: fn(&Program) -> Option<Program>) -> Option<Variant> {
    let p = how(&v.program)?;
    let info = mapsat_ir::check::check(&p).ok()?;
    mapsat_ir::check::check_with_sizes(&p, sizes).ok()?;
    // Priced again: an array written by `toX` is kept on purpose, not an intermediate.
    let cost = StaticCost::of(&convert::to_term(&p, &info).expr);
    Some(Variant {
        signature: signature(&p),
        cost: cost.total,
        program: p,
        intermediates: cost.intermediates,
        stages: Vec::new(),
    })
}

/// A signature's tiling, vectorization and staging: its splits and tile slides with their
/// factors, its `asVector`s with their widths and its `toX`, in order (`S[2]W[tA]V[4]P`).
fn tiling(signature: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    let mut chars = signature.chars().peekable();
    while let Some(ch) = chars.next() {
        if matches!(ch, 'S' | 'W' | 'V') && chars.peek() == Some(&'[') {
            inside = true;
        }
        if inside || matches!(ch, 'P' | 'L' | 'G') {
            out.push(ch);
        }
        if ch == ']' {
            inside = false;
        }
    }
    out
}

/// A candidate term as a variant, checked symbolically and at the sizes.
fn finish(src: &Source, term: &Term) -> Option<Variant> {
    let mut p = convert::to_program(src.template, term);
    convert::unique_labels(&mut p);
    crate::tiles::declare_used(&mut p, src.tiles, src.width);
    if mapsat_ir::check::check(&p).is_err() {
        // A split of a symbolic length: the result's length is `2*(H/2)`, equal to `H` only at
        // sizes it divides. The variant declares the type it has (as `conv_blocked.lift` does).
        p.ret = None;
        p.ret = Some(mapsat_ir::check::check(&p).ok()?.result);
    }
    mapsat_ir::check::check_with_sizes(&p, src.sizes).ok()?;
    let cost = StaticCost::of(&term.expr);
    Some(Variant {
        signature: signature(&p),
        cost: cost.total,
        intermediates: cost.intermediates,
        program: p,
        stages: Vec::new(),
    })
}

/// The structure of a program: its maps (`M`), reductions (`R`), splits with their factor
/// (`S[4]`), tile slides with their symbolic step (`W[tA]`), joins (`J`), transposes (`T`),
/// vectorizations with their width (`V[4]`) and copies to global, local and private memory (`G`,
/// `L`, `P`), in pre-order, with `TT` pairs removed. Lambdas are left out: an
/// eta-expanded or β-reduced form of the same structure has the same signature.
pub fn signature(p: &Program) -> String {
    let mut out = String::new();
    sig(p, p.root, &mut out);
    // A transpose of a transpose is no structure of its own.
    while out.contains("TT") {
        out = out.replace("TT", "");
    }
    out
}

fn sig(p: &Program, id: mapsat_ir::NodeId, out: &mut String) {
    match p.node(id) {
        Node::Prim(Prim::Map { .. }) => out.push('M'),
        Node::Prim(Prim::Reduce { .. }) => out.push('R'),
        Node::Prim(Prim::Split(n)) => out.push_str(&format!("S[{n}]")),
        Node::Prim(Prim::Slide(_, s)) if s.as_const().is_none() => out.push_str(&format!("W[{s}]")),
        Node::Prim(Prim::Join) => out.push('J'),
        Node::Prim(Prim::Transpose) => out.push('T'),
        Node::Prim(Prim::AsVector(w)) => out.push_str(&format!("V[{}]", w.lanes)),
        Node::Prim(Prim::To(space)) => out.push(match space {
            mapsat_ir::ast::AddressSpace::Global => 'G',
            mapsat_ir::ast::AddressSpace::Local => 'L',
            mapsat_ir::ast::AddressSpace::Private => 'P',
        }),
        n => {
            for c in n.children() {
                sig(p, c, out);
            }
        }
    }
}

/// Builds terms top-down from the best choices, with some classes' choices forced.
struct Builder<'a> {
    eg: &'a LiftGraph,
    ext: &'a Extractor<'a, StaticCost, Lift, crate::analysis::Meta>,
    /// Binder names, by canonical classes.
    names: &'a crate::convert::Names,
}

impl Builder<'_> {
    /// The term from `root`, and the classes it goes through (in order, each once).
    fn build(&self, root: Id, forced: &BTreeMap<Id, Lift>) -> (Term, Vec<Id>) {
        let mut t = Term::default();
        let mut visited = Vec::new();
        let mut stack = Vec::new();
        self.go(self.eg.find(root), forced, &mut t, &mut visited, &mut stack);
        let mut seen = BTreeSet::new();
        visited.retain(|c| seen.insert(*c));
        (t, visited)
    }

    fn go(&self, c: Id, forced: &BTreeMap<Id, Lift>, t: &mut Term, visited: &mut Vec<Id>, stack: &mut Vec<Id>) -> Id {
        visited.push(c);
        // A forced node whose children lead back to its own class would not end: there, and
        // deeper than any real term, the best (acyclic) choice is taken.
        let node = match forced.get(&c) {
            Some(n) if !stack.contains(&c) && stack.len() < 500 => n.clone(),
            _ => self.ext.find_best_node(c).clone(),
        };
        stack.push(c);
        let name = self.binder(c, &node);
        let node = match node {
            // `toX(e)`: `e` must be a map or reduce application (other forms of its class, added
            // by rules where it is read elsewhere, are not taken here).
            Lift::App([f, a]) if crate::analysis::is_to(self.eg, f) => {
                let f = self.go(self.eg.find(f), forced, t, visited, stack);
                let a = self.go_applied(self.eg.find(a), 3, forced, t, visited, stack);
                Lift::App([f, a])
            }
            node => node.map_children(|ch| self.go(self.eg.find(ch), forced, t, visited, stack)),
        };
        stack.pop();
        self.push(name, node, t)
    }

    /// The binder name of `node`, of class `c` (its children still classes).
    fn binder(&self, c: Id, node: &Lift) -> Option<String> {
        match node {
            Lift::Lam(..) => self.names.lambdas.get(&c).cloned(),
            Lift::Let([v, _]) => self.names.lets.get(&self.eg.find(*v)).cloned(),
            _ => None,
        }
    }

    /// Adds `node` to the term, with its binder name.
    fn push(&self, name: Option<String>, node: Lift, t: &mut Term) -> Id {
        t.names.push(name);
        t.expr.add(node)
    }

    /// The cheapest node of class `c` that is a map or reduce primitive applied to at most
    /// `depth` arguments, if the class has one.
    fn applied_node(&self, c: Id, depth: usize) -> Option<&Lift> {
        let cost = |n: &Lift| StaticCost.cost(n, |ch| self.ext.find_best_cost(ch)).total;
        self.eg[c].nodes.iter().filter(|n| self.is_applied(n, depth)).min_by_key(|n| cost(n))
    }

    /// True when `n` is a map or reduce primitive applied to at most `depth` arguments.
    fn is_applied(&self, n: &Lift, depth: usize) -> bool {
        match n {
            Lift::Prim(Prim::Map { .. } | Prim::Reduce { .. }) => true,
            Lift::App([f, _]) => depth > 0 && self.applied_node(self.eg.find(*f), depth - 1).is_some(),
            _ => false,
        }
    }

    /// Class `c` built as a map or reduce application ([`Builder::applied_node`]), else as usual.
    fn go_applied(
        &self,
        c: Id,
        depth: usize,
        forced: &BTreeMap<Id, Lift>,
        t: &mut Term,
        visited: &mut Vec<Id>,
        stack: &mut Vec<Id>,
    ) -> Id {
        // A forced choice of that form is kept (a seed's path may go through a stage's producer).
        let node = forced.get(&c).filter(|n| !stack.contains(&c) && self.is_applied(n, depth));
        let Some(node) = node.or_else(|| self.applied_node(c, depth)).cloned() else {
            return self.go(c, forced, t, visited, stack);
        };
        visited.push(c);
        let name = self.binder(c, &node);
        let node = match node {
            Lift::App([f, a]) => {
                let f = self.go_applied(self.eg.find(f), depth - 1, forced, t, visited, stack);
                Lift::App([f, self.go(self.eg.find(a), forced, t, visited, stack)])
            }
            n => n,
        };
        self.push(name, node, t)
    }
}
