//! Applying a mapping to a program (see [`Space::apply`]).

use crate::{Code, Error, Mapping, Space};
use mapsat_ir::ast::{MapKind, Meta, Node, NodeId, Prim};
use mapsat_ir::{Program, Type};
use std::collections::HashMap;

impl Space {
    /// The program with this mapping applied: every map's `MapKind` set, ready for code
    /// generation. `p` must be the program the space was generated from.
    ///
    /// - `S`, `V`, `L0..2`, `W0..2`, `G0..2` set the kind of the map's `Prim::Map` node
    ///   (`mapSeq`, `mapVec`, `mapLcl(d)`, `mapWrg(d)`, `mapGlb(d)`).
    /// - `F` (fused with the outer map) is a program transformation. A map `B` perfectly nested
    ///   in `A`, `map@A(fun(r => map@B(g, r)), xs)` or `map@A(map@B(g), xs)`, becomes one map
    ///   over the flattened array, `split(m, map@A(g', join(xs)))`, where `m` is the length of
    ///   the arrays `B` iterates over and `g'` is `g` with its de Bruijn indices shifted past
    ///   the removed binder `r`. The fused map keeps `A`'s label and kind, so a chain `A`,
    ///   `B=F`, `C=F` fuses into one map (outer maps are fused first). A map `A` used as a
    ///   function without its array (`map@A(...) o split(s)`) becomes
    ///   `fun(xs => split(m, map@A(g', join(xs))))`.
    /// - Every `reduce` becomes `reduceSeq` (one thread folds it; the maps around it decide
    ///   which).
    ///
    /// Maps that only rearrange data (layout maps, see [`Space::layout_maps`]) keep their
    /// abstract kind: code generation treats them as views.
    pub fn apply(&self, p: &Program, m: &Mapping) -> Result<Program, Error> {
        self.check_codes(m)?;
        apply_mapping(p, &self.labels, &self.parents, &self.fused_lens, m)
    }
}

/// A program without a map that computes (whose space is [`Error::NoMaps`]) as one work item
/// runs it: every `reduce` a `reduceSeq`. Its only mapping, the empty one.
pub fn sequential(p: &Program) -> Program {
    let mut out = p.clone();
    for node in out.nodes.iter_mut() {
        if let Node::Prim(Prim::Reduce { seq }) = node {
            *seq = true;
        }
    }
    out
}

/// For each variable whose domain has `F`, the length of the arrays its map iterates over
/// (from the types of `p`; `None` where the program does not type-check or the map is not
/// applied). Computed once per space: fusing needs it, and type-checking per mapping is slow.
pub(crate) fn fused_lens(p: &Program, labels: &[String], domains: &[Vec<i64>]) -> Vec<Option<mapsat_ir::Size>> {
    let fused = Code::Fused.to_int();
    if !domains.iter().any(|d| d.contains(&fused)) {
        return vec![None; labels.len()];
    }
    let Ok(info) = mapsat_ir::check::check(p) else { return vec![None; labels.len()] };
    labels.iter().zip(domains).map(|(l, d)| d.contains(&fused).then(|| inner_len(p, &info, l).ok()).flatten()).collect()
}

/// Applies the codes of `m` (one per label in `labels`; `parents[i]` is the variable of the map
/// `labels[i]` is nested in; `lens[i]` the length its arrays have, if it is fused) to `p`. See
/// [`Space::apply`].
fn apply_mapping(
    p: &Program,
    labels: &[String],
    parents: &[Option<usize>],
    lens: &[Option<mapsat_ir::Size>],
    m: &Mapping,
) -> Result<Program, Error> {
    if m.codes.len() != labels.len() || parents.len() != labels.len() {
        return Err(Error::Apply(format!("{} codes for {} maps", m.codes.len(), labels.len())));
    }
    // Kinds of the maps that are not fused; a fused map takes the kind of the map it is fused
    // into, found by walking up the chain of fused maps.
    let mut kinds: HashMap<&str, MapKind> = HashMap::new();
    for (i, c) in m.codes.iter().enumerate() {
        let mut j = i;
        let mut code = *c;
        while code == Code::Fused {
            j = parents[j].ok_or_else(|| Error::Apply(format!("map {} is fused but has no outer map", labels[i])))?;
            code = m.codes[j];
        }
        let kind = code.map_kind().ok_or_else(|| Error::Apply(format!("map {} has no kind", labels[i])))?;
        if *c == Code::Fused && kind == MapKind::Vec {
            return Err(Error::Apply(format!("map {} cannot be fused into a vectorized map", labels[i])));
        }
        kinds.insert(labels[i].as_str(), kind);
    }
    for (i, c) in m.codes.iter().enumerate() {
        if *c == Code::Fused && lens.get(i).is_none_or(Option::is_none) {
            return Err(Error::Apply(format!("the length of the arrays map {} iterates over is unknown", labels[i])));
        }
    }
    let mut out = p.clone();
    for node in out.nodes.iter_mut() {
        match node {
            Node::Prim(Prim::Map { kind, label }) => {
                if let Some(k) = kinds.get(label.as_str()) {
                    *kind = *k;
                }
            }
            Node::Prim(Prim::Reduce { seq }) => *seq = true,
            _ => {}
        }
    }
    // Fusions, outer maps first (variables are ordered outer before inner).
    for (i, c) in m.codes.iter().enumerate() {
        if *c != Code::Fused {
            continue;
        }
        let mut j = i;
        while m.codes[j] == Code::Fused {
            j = parents[j].unwrap_or(j);
        }
        let len = lens[i].clone().ok_or_else(|| Error::Apply(format!("no length for map {}", labels[i])))?;
        out = fuse(&out, &labels[j], &labels[i], len)?;
    }
    Ok(out)
}

fn map_node(p: &Program, label: &str) -> Option<NodeId> {
    (0..p.nodes.len())
        .map(|k| NodeId(k as u32))
        .find(|&id| matches!(p.node(id), Node::Prim(Prim::Map { label: l, .. }) if l == label))
}

/// The length of the arrays the map labelled `label` iterates over.
fn inner_len(p: &Program, info: &mapsat_ir::check::TypeInfo, label: &str) -> Result<mapsat_ir::Size, Error> {
    let err = || Error::Apply(format!("the length of the arrays map {label} iterates over is unknown"));
    let b = map_node(p, label).ok_or_else(err)?;
    let app = (0..p.nodes.len())
        .map(|k| NodeId(k as u32))
        .find(|&id| matches!(p.node(id), Node::App(h, _) if *h == b))
        .ok_or_else(err)?;
    match info.of(app) {
        Some(Type::Fun(arg, _)) => match &**arg {
            Type::Array(_, len) => Ok(len.clone()),
            _ => Err(err()),
        },
        _ => Err(err()),
    }
}

/// If `f` is `map@inner(g)` or `fun(r => map@inner(g, r))` (with `g` not using `r`), returns
/// `g` and whether it sits under the binder `r`.
fn perfect_body(p: &Program, f: NodeId, inner: NodeId) -> Option<(NodeId, bool)> {
    match p.node(f) {
        Node::App(h, g) if *h == inner => Some((*g, false)),
        Node::Lam(body, _) => {
            let (head, args) = p.spine(*body);
            (head == inner && args.len() == 2 && matches!(p.node(args[1]), Node::Var(0))).then(|| (args[0], true))
        }
        _ => None,
    }
}

/// Fuses the map labelled `inner` into the map labelled `outer` it is perfectly nested in.
fn fuse(p: &Program, outer: &str, inner: &str, m: mapsat_ir::Size) -> Result<Program, Error> {
    let err = |why: &str| Error::Apply(format!("cannot fuse map {inner} into map {outer}: {why}"));
    let a = map_node(p, outer).ok_or_else(|| err("no such outer map"))?;
    let b = map_node(p, inner).ok_or_else(|| err("no such inner map"))?;
    // The partial application `map@outer(f)`.
    let partial = (0..p.nodes.len())
        .map(|k| NodeId(k as u32))
        .find(|&id| matches!(p.node(id), Node::App(h, _) if *h == a))
        .ok_or_else(|| err("the outer map is not applied to a function"))?;
    let Node::App(_, f) = *p.node(partial) else { return Err(err("internal")) };
    let (g, under_binder) = perfect_body(p, f, b).ok_or_else(|| err("it is not perfectly nested"))?;
    let g_shift = if under_binder {
        if uses_var(p, g, 0, &mut HashMap::new()) {
            return Err(err("the inner map's function uses the outer map's element"));
        }
        -1
    } else {
        0
    };
    let mut full = HashMap::new();
    for k in 0..p.nodes.len() {
        let id = NodeId(k as u32);
        if let Node::App(h, xs) = p.node(id) {
            if *h == partial {
                full.insert(id, *xs);
            }
        }
    }
    let mut bld = Builder {
        p,
        out: Vec::new(),
        meta: Vec::new(),
        memo: HashMap::new(),
        shifted: HashMap::new(),
        fused: Fused { a, g, g_shift, m, partial },
        full,
    };
    let root = bld.copy(p.root);
    let mut q = p.clone();
    q.nodes = bld.out;
    q.meta = bld.meta;
    q.root = root;
    Ok(q)
}

/// The fusion being applied.
struct Fused {
    /// The outer map's `Prim::Map` node.
    a: NodeId,
    /// The inner map's function.
    g: NodeId,
    /// Shift of `g`'s free variables at the outer map's level (-1 when it was under a binder).
    g_shift: i64,
    /// Length of the inner arrays.
    m: mapsat_ir::Size,
    /// The node `map@outer(f)`.
    partial: NodeId,
}

/// Copies the nodes of `p` reachable from the root into a fresh arena (children before
/// parents), replacing the outer map's applications by the fused map.
struct Builder<'a> {
    p: &'a Program,
    out: Vec<Node>,
    meta: Vec<Meta>,
    memo: HashMap<NodeId, NodeId>,
    /// Copies with free variables shifted: (node, cutoff, shift).
    shifted: HashMap<(NodeId, u32, i64), NodeId>,
    fused: Fused,
    /// Full applications `map@outer(f, xs)`, with their `xs`.
    full: HashMap<NodeId, NodeId>,
}

impl Builder<'_> {
    fn push(&mut self, n: Node, meta: Meta) -> NodeId {
        let id = NodeId(self.out.len() as u32);
        self.out.push(n);
        self.meta.push(meta);
        id
    }

    fn meta(&self, id: NodeId) -> Meta {
        self.p.meta.get(id.index()).cloned().unwrap_or_default()
    }

    /// `split(m, map@outer(g', join(xs)))` with `g'` shifted by `extra` more binders.
    /// `split(m, toX(map@outer(g', join(xs))))` when `to` is the `toX` primitive around it.
    fn fused_app(&mut self, xs: NodeId, extra: i64, to: Option<NodeId>) -> NodeId {
        let a = self.copy(self.fused.a);
        let g = self.shift(self.fused.g, 0, self.fused.g_shift + extra);
        let join = self.push(Node::Prim(Prim::Join), Meta::default());
        let joined = self.push(Node::App(join, xs), Meta::default());
        let mg = self.push(Node::App(a, g), self.meta(self.fused.partial));
        let mut mapped = self.push(Node::App(mg, joined), Meta::default());
        if let Some(to) = to {
            let to = self.copy(to);
            mapped = self.push(Node::App(to, mapped), Meta::default());
        }
        let split = self.push(Node::Prim(Prim::Split(self.fused.m.clone())), Meta::default());
        self.push(Node::App(split, mapped), Meta::default())
    }

    fn copy(&mut self, id: NodeId) -> NodeId {
        if let Some(&n) = self.memo.get(&id) {
            return n;
        }
        let wrapped = match self.p.node(id) {
            Node::App(h, x) if matches!(self.p.node(*h), Node::Prim(Prim::To(_))) => {
                self.full.get(x).map(|&xs| (*h, xs))
            }
            _ => None,
        };
        let n = if let Some((to, xs)) = wrapped {
            let xs = self.copy(xs);
            self.fused_app(xs, 0, Some(to))
        } else if let Some(&xs) = self.full.get(&id) {
            let xs = self.copy(xs);
            self.fused_app(xs, 0, None)
        } else if id == self.fused.partial {
            let v = self.push(Node::Var(0), Meta::default());
            let body = self.fused_app(v, 1, None);
            self.push(Node::Lam(body, None), Meta::default())
        } else {
            let node = match self.p.node(id).clone() {
                Node::App(f, x) => Node::App(self.copy(f), self.copy(x)),
                Node::Let(v, b) => Node::Let(self.copy(v), self.copy(b)),
                Node::Lam(b, t) => Node::Lam(self.copy(b), t),
                leaf => leaf,
            };
            let meta = self.meta(id);
            self.push(node, meta)
        };
        self.memo.insert(id, n);
        n
    }

    /// A copy of `id` (which contains no replaced node) with the variables free above `cutoff`
    /// binders shifted by `d`.
    fn shift(&mut self, id: NodeId, cutoff: u32, d: i64) -> NodeId {
        if d == 0 {
            return self.copy(id);
        }
        if let Some(&n) = self.shifted.get(&(id, cutoff, d)) {
            return n;
        }
        let node = match self.p.node(id).clone() {
            Node::Var(i) if i >= cutoff => Node::Var((i as i64 + d).max(0) as u32),
            Node::App(f, x) => Node::App(self.shift(f, cutoff, d), self.shift(x, cutoff, d)),
            Node::Let(v, b) => Node::Let(self.shift(v, cutoff, d), self.shift(b, cutoff + 1, d)),
            Node::Lam(b, t) => Node::Lam(self.shift(b, cutoff + 1, d), t),
            leaf => leaf,
        };
        let meta = self.meta(id);
        let n = self.push(node, meta);
        self.shifted.insert((id, cutoff, d), n);
        n
    }
}

/// Does `id` use the variable bound `depth` binders above it?
pub(crate) fn uses_var(p: &Program, id: NodeId, depth: u32, memo: &mut HashMap<(NodeId, u32), bool>) -> bool {
    if let Some(&r) = memo.get(&(id, depth)) {
        return r;
    }
    let r = match p.node(id) {
        Node::Var(i) => *i == depth,
        Node::Lam(b, _) => uses_var(p, *b, depth + 1, memo),
        Node::Let(v, b) => uses_var(p, *v, depth, memo) || uses_var(p, *b, depth + 1, memo),
        Node::App(f, x) => uses_var(p, *f, depth, memo) || uses_var(p, *x, depth, memo),
        _ => false,
    };
    memo.insert((id, depth), r);
    r
}
