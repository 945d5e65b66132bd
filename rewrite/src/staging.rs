//! Memory variants: partial results staged in private memory, per-tile producers in local memory.
//!
//! `toPrivate(e)` and `toLocal(e)` change where the map or reduce `e` writes its result, not the
//! value (the interpreter treats every `toX` as the identity), so staging is sound wherever the
//! IR allows it; whether a mapping can honour it is the constraint space's business. It is
//! applied to the extracted variants rather than inside the e-graph: a `toX` node merged into
//! its own class would let extraction put it around forms other than a map or reduce, which the
//! IR forbids.

use mapsat_ir::ast::{AddressSpace, MapKind, Meta, Node, NodeId, Prim};
use mapsat_ir::Program;

/// The program with every high-level `reduce` that runs inside a function (under a binder: a
/// partial sum of a map's element) and is not already placed wrapped in `toPrivate(...)`;
/// `None` when there is none.
pub fn stage_private(p: &Program) -> Option<Program> {
    stage(p, AddressSpace::Private, &|p, id, at| at.depth > 0 && !at.placed && is_call(p, id, true))
}

/// The program with every high-level `map` that runs inside a function, computes (its function
/// is not a layout function: such a map is a view) and whose result a `slide` reads (or the rows'
/// windows `map(slide(m, 1), _)` of a 2-D stencil: a producer computed per 2-D tile by
/// `slide2d-tiling`), not already placed, wrapped in `toLocal(...)`, and every tile of a 2-D tiled stencil (a variable read by the rows'
/// windows `map(slide(m, 1), t)` whose both lengths are tunable tile sizes, see
/// `slide2d-tiling`), in a function that computes from those windows, copied to local memory,
/// `toLocal(map(map(fun(x => x)), t))`; `None` when there is neither.
///
/// This is Halide's `compute_at` for a stencil: after overlapped tiling (`slide-tiling`) and
/// fusion, a tile `t` computes its producer once over the tile with its halo,
/// `slide(n, 1, map@P(h, t))`, and the tile's windows read it; staged, the tile's threads write
/// it to local memory once and read their windows from there (a barrier in between), instead of
/// recomputing it per window (`slide-map`, the inline choice) or writing it to global memory
/// in a kernel of its own (`toGlobal`). A 2-D tile is a view of the input: copied, its work
/// group reads it from global memory once and its windows, which overlap, from local memory.
pub fn stage_local(p: &Program) -> Option<Program> {
    stage(p, AddressSpace::Local, &|p, id, at| {
        at.depth > 0 && !at.placed && (at.slid || at.rows_slid) && is_call(p, id, false) && computing_fn(p, id)
    })
}

/// The program with the panels of each 2-D tiled map nest copied to local memory: in a map's
/// function `fun(colTile => body)` whose parameter and the enclosing binder's (`rowTile`) are
/// both tiles of rows (`[[T]K]tN`, `[[T]K]tM`: a tunable number of rows, from `split(tN, ..)`
/// and `split(tM, ..)`) that `body` reads only as the data of maps that compute (the rows and
/// columns of a block of matmul), the body becomes
///
/// ```text
/// let aLocal = toLocal(map@copy1(map@copy2(fun(x => x)), rowTile)) in
/// let bLocal = toLocal(map@copy3(map@copy4(fun(x => x)), colTile)) in
/// body[rowTile := aLocal, colTile := bLocal]
/// ```
///
/// `None` when there is no such function. The classic shared-memory tiled matmul
/// (`examples/matmul_lowlevel.lift`): each work group copies its panels of `a` and `b` once,
/// and its threads read every element of them `tN` (or `tM`) times from local memory instead of
/// global memory. The value is the same (`toLocal` and the identity maps), so this is sound
/// wherever it type-checks.
pub fn stage_panels(p: &Program) -> Option<Program> {
    if p.nodes.iter().any(|n| matches!(n, Node::Prim(Prim::To(AddressSpace::Local)))) {
        return None;
    }
    let info = mapsat_ir::check::check(p).ok()?;
    let tunable = crate::tunable(p);
    let panel = |id: NodeId| {
        info.of(id)
            .and_then(|t| t.as_array())
            .is_some_and(|(row, r)| r.vars().iter().any(|v| tunable.contains(v)) && row.as_array().is_some())
    };
    let staged: Vec<bool> = (0..p.nodes.len())
        .map(|k| match &p.nodes[k] {
            Node::Lam(body, _) => panel_body(p, *body, &panel),
            _ => false,
        })
        .collect();
    if !staged.contains(&true) {
        return None;
    }
    let mut out = Program { nodes: Vec::new(), meta: Vec::new(), ..p.clone() };
    let mut labels = (1..).map(|k| format!("copy{k}")).filter(|l| !has_label(p, l));
    let root = copy_panels(p, p.root, &staged, &mut labels, &mut out);
    out.root = root;
    Some(out)
}

/// True when `body` (of a lambda) reads its parameter (`Var(0)`) and the enclosing binder's
/// (`Var(1)`), each at least once and only as the data of a map whose function computes, and
/// each read is a `panel` (a tile of rows).
fn panel_body(p: &Program, body: NodeId, panel: &dyn Fn(NodeId) -> bool) -> bool {
    let mut reads = [0usize; 2];
    let mut ok = true;
    visit_reads(p, body, 0, false, &mut |id, k, mapped| {
        reads[k as usize] += 1;
        ok &= mapped && panel(id);
    });
    ok && reads[0] > 0 && reads[1] > 0 && computes(p, body)
}

/// Calls `seen(id, k, mapped)` for each read at `id` of the variable `k` (0 or 1) of the
/// binders outside `id` at `depth` 0, with `mapped` true when the read is the data argument of
/// a map whose function computes.
fn visit_reads(p: &Program, id: NodeId, depth: u32, mapped: bool, seen: &mut dyn FnMut(NodeId, u32, bool)) {
    match p.node(id) {
        Node::Var(v) if *v >= depth && *v < depth + 2 => seen(id, *v - depth, mapped),
        Node::App(f, a) => {
            let (head, args) = p.spine(*f);
            let data = matches!(p.node(head), Node::Prim(Prim::Map { .. })) && args.len() == 1 && computes(p, args[0]);
            visit_reads(p, *f, depth, false, seen);
            visit_reads(p, *a, depth, data, seen);
        }
        Node::Lam(b, _) => visit_reads(p, *b, depth + 1, false, seen),
        Node::Let(v, b) => {
            visit_reads(p, *v, depth, false, seen);
            visit_reads(p, *b, depth + 1, false, seen);
        }
        _ => {}
    }
}

/// Copies the term at `id` into `out`, the body of each lambda marked in `staged` with its
/// panels copied to local memory ([`stage_panels`]).
fn copy_panels(
    p: &Program,
    id: NodeId,
    staged: &[bool],
    labels: &mut dyn Iterator<Item = String>,
    out: &mut Program,
) -> NodeId {
    copy_term(p, id, 0, out, &mut |id, _, out| {
        let Node::Lam(b, ann) = p.node(id) else { return None };
        if !staged[id.index()] {
            return None;
        }
        // Under the two lets, the body's variables 0 and 1 are the copies; the others move
        // out by two.
        let body = shift(p, *b, 0, out);
        let mut copy = |name: &str, out: &mut Program| {
            // Under `colTile`, `rowTile` is variable 1; under `colTile` and `aLocal`, `colTile` is.
            let var = out.push(Node::Var(1), Meta::default());
            let (outer, inner) = (labels.next().unwrap_or_default(), labels.next().unwrap_or_default());
            let value = copy_2d(out, var, outer, inner);
            (value, Meta { binder: Some(name.to_string()), ..Meta::default() })
        };
        let (a_copy, a_meta) = copy("aLocal", out);
        let (b_copy, b_meta) = copy("bLocal", out);
        let inner = out.push(Node::Let(b_copy, body), b_meta);
        let outer = out.push(Node::Let(a_copy, inner), a_meta);
        Some(out.push(Node::Lam(outer, ann.clone()), meta_of(p, id)))
    })
}

/// Copies the term at `id` (under `depth` binders of its own) with its variables that are free
/// beyond the first two moved out by two (under two new `let`s); lambdas inside are copied as
/// they are.
fn shift(p: &Program, id: NodeId, depth: u32, out: &mut Program) -> NodeId {
    copy_term(p, id, depth, out, &mut |id, depth, out| match p.node(id) {
        Node::Var(v) if *v >= depth + 2 => Some(out.push(Node::Var(v + 2), meta_of(p, id))),
        _ => None,
    })
}

/// The metadata of the node at `id` (none when it has none).
fn meta_of(p: &Program, id: NodeId) -> Meta {
    p.meta.get(id.index()).cloned().unwrap_or_default()
}

/// Copies the term at `id` (under `depth` binders of its own) into `out`, node by node, except
/// where `replace` gives a node's copy itself (given the node, its depth and `out`).
fn copy_term(
    p: &Program,
    id: NodeId,
    depth: u32,
    out: &mut Program,
    replace: &mut dyn FnMut(NodeId, u32, &mut Program) -> Option<NodeId>,
) -> NodeId {
    if let Some(copy) = replace(id, depth, out) {
        return copy;
    }
    let new = match p.node(id) {
        Node::App(f, a) => {
            let f2 = copy_term(p, *f, depth, out, replace);
            Node::App(f2, copy_term(p, *a, depth, out, replace))
        }
        Node::Lam(b, ann) => Node::Lam(copy_term(p, *b, depth + 1, out, replace), ann.clone()),
        Node::Let(v, b) => {
            let v2 = copy_term(p, *v, depth, out, replace);
            Node::Let(v2, copy_term(p, *b, depth + 1, out, replace))
        }
        leaf => leaf.clone(),
    };
    out.push(new, meta_of(p, id))
}

/// `toLocal(map@outer(map@inner(fun(x => x)), tile))` in `out`.
fn copy_2d(out: &mut Program, tile: NodeId, outer: String, inner: String) -> NodeId {
    let mut push = |n: Node| out.push(n, Meta::default());
    let var = push(Node::Var(0));
    let id = push(Node::Lam(var, None));
    let inner_map = push(Node::Prim(Prim::Map { kind: MapKind::Abstract, label: inner }));
    let row_copy = push(Node::App(inner_map, id));
    let outer_map = push(Node::Prim(Prim::Map { kind: MapKind::Abstract, label: outer }));
    let partial = push(Node::App(outer_map, row_copy));
    let copy = push(Node::App(partial, tile));
    let to = push(Node::Prim(Prim::To(AddressSpace::Local)));
    push(Node::App(to, copy))
}

/// Where a term sits: under how many binders, and whether its parent is a `toX` or a `slide`.
#[derive(Clone, Copy, Default)]
struct At {
    depth: u32,
    placed: bool,
    slid: bool,
    /// The data argument of `map(slide(..), _)`.
    rows_slid: bool,
    /// In a function whose body computes (not only arranges its argument).
    computing: bool,
}

/// Which terms to stage.
type Select = dyn Fn(&Program, NodeId, At) -> bool;

/// `p` with the selected terms wrapped in `to{space}(...)`; `None` when none is selected.
fn stage(p: &Program, space: AddressSpace, select: &Select) -> Option<Program> {
    let mut out = Program { nodes: Vec::new(), meta: Vec::new(), ..p.clone() };
    let mut changed = false;
    let tiles = match space {
        AddressSpace::Local => tiles_2d(p),
        _ => Vec::new(),
    };
    let mut cx = Copier { p, space, select, tiles: &tiles, out: &mut out, changed: &mut changed };
    let root = cx.copy(p.root, At::default());
    out.root = root;
    changed.then_some(out)
}

/// A copy of a program under way.
struct Copier<'a> {
    p: &'a Program,
    space: AddressSpace,
    select: &'a Select,
    /// By node: a 2-D tile ([`tiles_2d`]).
    tiles: &'a [bool],
    out: &'a mut Program,
    changed: &'a mut bool,
}

impl Copier<'_> {
    /// Copies the term at `id`.
    fn copy(&mut self, id: NodeId, at: At) -> NodeId {
        let p = self.p;
        let meta = meta_of(p, id);
        let inner = At { depth: at.depth, computing: at.computing, ..At::default() };
        let new = match p.node(id) {
            Node::App(f, a) => {
                let placed = matches!(p.node(*f), Node::Prim(Prim::To(_)));
                let slid = matches!(p.node(*f), Node::Prim(Prim::Slide(..)));
                let rows_slid = maps_slide(p, *f);
                let f2 = self.copy(*f, inner);
                let a2 = self.copy(*a, At { placed, slid, rows_slid, ..inner });
                Node::App(f2, a2)
            }
            Node::Lam(b, ann) => {
                let body = At { depth: at.depth + 1, computing: computes(p, *b), ..At::default() };
                Node::Lam(self.copy(*b, body), ann.clone())
            }
            Node::Let(v, b) => {
                let v2 = self.copy(*v, inner);
                Node::Let(v2, self.copy(*b, At { depth: at.depth + 1, ..At::default() }))
            }
            Node::Var(_) if self.tiles.get(id.index()) == Some(&true) && at.rows_slid && at.computing && !at.placed => {
                let var = self.out.push(p.node(id).clone(), meta);
                *self.changed = true;
                return self.tile_copy(var);
            }
            leaf => leaf.clone(),
        };
        let copied = self.out.push(new, meta);
        if (self.select)(p, id, at) {
            *self.changed = true;
            let to = self.out.push(Node::Prim(Prim::To(self.space)), Meta::default());
            return self.out.push(Node::App(to, copied), Meta::default());
        }
        copied
    }
}

impl Copier<'_> {
    /// `toLocal(map@C(map@C_1(fun(x => x)), tile))`, with labels the program does not use.
    fn tile_copy(&mut self, tile: NodeId) -> NodeId {
        let mut labels = (1..).map(|k| format!("copy{k}")).filter(|l| !has_label(self.p, l) && !has_label(self.out, l));
        let (outer, inner) = (labels.next().unwrap_or_default(), labels.next().unwrap_or_default());
        copy_2d(self.out, tile, outer, inner)
    }
}

/// By node: true for a variable whose type is `[[T]c]r` with both `r` and `c` using a tunable size
/// (a 2-D tile of `slide2d-tiling`, `tA_0 + 2` rows of `tA_1 + 2`). Empty when `p` does not check.
fn tiles_2d(p: &Program) -> Vec<bool> {
    let Ok(info) = mapsat_ir::check::check(p) else { return Vec::new() };
    let tunable = crate::tunable(p);
    let tiled = |n: &mapsat_ir::Size| n.vars().iter().any(|v| tunable.contains(v));
    let is_tile = |t: &mapsat_ir::Type| {
        let Some((row, r)) = t.as_array() else { return false };
        tiled(r) && row.as_array().is_some_and(|(_, c)| tiled(c))
    };
    let var = |k: usize| matches!(p.nodes[k], Node::Var(_));
    (0..p.nodes.len()).map(|k| var(k) && info.of(NodeId(k as u32)).is_some_and(is_tile)).collect()
}

/// True when the program has a map labelled `label`.
fn has_label(p: &Program, label: &str) -> bool {
    p.nodes.iter().any(|n| matches!(n, Node::Prim(Prim::Map { label: l, .. }) if l == label))
}

/// True when `f` is `map(slide(..))`: a function making the windows of each row.
fn maps_slide(p: &Program, f: NodeId) -> bool {
    let (head, args) = p.spine(f);
    matches!(p.node(head), Node::Prim(Prim::Map { .. }))
        && args.len() == 1
        && matches!(p.node(args[0]), Node::Prim(Prim::Slide(..)))
}

/// True for a saturated high-level `reduce(f, init, xs)` (`reduce`), or `map(f, xs)` (not).
fn is_call(p: &Program, id: NodeId, reduce: bool) -> bool {
    let (head, args) = p.spine(id);
    match p.node(head) {
        Node::Prim(Prim::Reduce { seq: false }) => reduce && args.len() == 3,
        Node::Prim(Prim::Map { .. }) => !reduce && args.len() == 2,
        _ => false,
    }
}

/// True when the function of the call at `id` computes ([`computes`]): a producer, not a layout
/// map over one (`map(slide(..), map(h, t))` reads its argument's values, it does not compute them).
fn computing_fn(p: &Program, id: NodeId) -> bool {
    let (_, args) = p.spine(id);
    args.first().is_some_and(|f| computes(p, *f))
}

/// True when the term at `id` performs a scalar operation or a reduction somewhere (a primitive
/// that is neither layout nor a map).
fn computes(p: &Program, id: NodeId) -> bool {
    match p.node(id) {
        Node::Prim(Prim::Map { .. }) => false,
        Node::Prim(prim) => !prim.is_layout(),
        n => n.children().into_iter().any(|c| computes(p, c)),
    }
}
