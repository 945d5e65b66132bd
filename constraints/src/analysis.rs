//! Program analysis behind the constraints: the map nesting tree (a `petgraph` forest of the
//! maps that write memory), the paper's contextual functions (Table 3), and two abstract
//! interpretations of the program over *views*:
//!
//! - **Strides** (family 9): each array dimension of a value carries its stride in memory, one per
//!   underlying array, computed at the analysed sizes. A map is vectorizable when it is a
//!   leaf of the nesting tree, its elements are scalars (or tuples of scalars) and its input
//!   dimension has stride 1 in every underlying array, and its length is a multiple of 4.
//! - **Buffers** (families 1, 2, 10): the output of every map that writes memory is a buffer; each
//!   buffer dimension records the map that writes it (its *writer*) and its address space; each
//!   array dimension of a value records which buffer dimensions it ranges over, through `split`,
//!   `join`, `transpose`, `slide`, `pad`, `zip`, `asVector` and `asScalar` (a vector is a leaf,
//!   read and written by one thread). A map (or `reduce`, `at`) that consumes a dimension is a
//!   *reader* of those buffer dimensions.
//!
//! Functions are evaluated abstractly: a lambda is a closure, a primitive is applied once all its
//! arguments are known, and a map applies its function to its element view while it is on the
//! stack of enclosing maps, so nesting is what happens when the program runs, through `let`,
//! composition and partial application alike.

use mapsat_ir::ast::{AddressSpace, Node, NodeId, Prim};
use mapsat_ir::{Program, Sizes, Type};
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::HashMap;
use std::rc::Rc;

/// Index of a map in [`Analysis::maps`].
pub type MapIdx = usize;

/// What the analysis knows about one map of the program.
#[derive(Clone, Debug)]
pub struct MapInfo {
    /// The map's label.
    pub label: String,
    /// The `Prim::Map` node.
    pub node: NodeId,
    /// True when the map writes memory (see [`Analysis`]); only those are mapped.
    pub concrete: bool,
    /// The enclosing map that writes memory, if any.
    pub parent: Option<MapIdx>,
    /// True when the map is perfectly nested in its parent: the parent's function is this map
    /// (partially applied, or applied to the parent's element and nothing else, its function
    /// not using that element).
    pub perfectly_nested: bool,
    /// Number of iterations at the analysed sizes, when known.
    pub extent: Option<i64>,
    /// Why the map cannot be vectorized (`None`: it can).
    pub unvectorizable: Option<String>,
    /// Explicit `toGlobal` / `toLocal` / `toPrivate` around the map.
    pub explicit_space: Option<AddressSpace>,
    /// The maps (writing memory) on the stack when this map ran, outermost first.
    pub context: Vec<MapIdx>,
}

/// Who writes a buffer dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Writer {
    /// The thread that computes the element, whatever the mapping (a copy, a reduce result).
    Thread,
    /// These maps (one, or several when dimensions were joined before being written).
    Maps(Vec<MapIdx>),
}

/// Who reads a buffer dimension.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Reader {
    /// Read whole by one thread (a `reduce`, `at`).
    Thread,
    /// Iterated by this map.
    Map(MapIdx),
}

/// An array written by a map nest.
#[derive(Clone, Debug)]
pub struct Buffer {
    /// The outermost map writing it.
    pub top: MapIdx,
    /// Writer of each dimension, outermost first.
    pub writers: Vec<Writer>,
    /// Address space of each dimension (inferred as in Lift: a map writes where its function
    /// writes, unless a `toX` says otherwise).
    pub spaces: Vec<AddressSpace>,
    /// Bytes at the analysed sizes, when known.
    pub bytes: Option<i64>,
    /// Reads of its dimensions: (dimension, reader).
    pub reads: Vec<(usize, Reader)>,
    /// True when it is the inner part of an outer map's buffer (not a separate allocation).
    pub merged: bool,
}

impl Buffer {
    /// The address space of the whole buffer (its outermost dimension).
    pub fn space(&self) -> AddressSpace {
        self.spaces.first().copied().unwrap_or(AddressSpace::Global)
    }
}

/// The result of analysing a program.
#[derive(Clone, Debug)]
pub struct Analysis {
    /// Every map, in the order it was first evaluated.
    pub maps: Vec<MapInfo>,
    /// The nesting forest of the maps that write memory (edges parent -> child).
    pub(crate) tree: DiGraph<MapIdx, ()>,
    /// Graph node of each map (only for concrete maps).
    pub(crate) graph_node: HashMap<MapIdx, NodeIndex>,
    /// Buffers written by map nests.
    pub buffers: Vec<Buffer>,
    /// Why the program reads vectors whose lanes are not consecutive in memory, if it does:
    /// code generation loads and stores vectors with `vloadN`/`vstoreN` at one base address.
    pub scattered_vectors: Option<String>,
    /// Why the program keeps tuples in memory, if it does: a map whose result elements are
    /// tuples (`map(fun(p => (a, b)), ..)` read by another map). Code generation keeps scalars
    /// and vectors only, in variables and buffers.
    pub tuples_in_memory: Option<String>,
    /// True when the program has a map deeper than the analysis follows ([`MAX_DEPTH`]): its
    /// maps are not all found.
    pub too_deep: bool,
    /// The maps whose result the kernel copies to its output after computing it, because the
    /// program's result is a view that cannot be written through (`padClamp(2, 0, map(..))`,
    /// a `slide` or an `at` of a map's result): see [`copied_maps`].
    pub copied: Vec<MapIdx>,
}

// ---------------------------------------------------------------------------------------------
// Views

#[derive(Clone, Debug)]
struct Dim {
    len: Option<i64>,
    /// One stride per underlying array (several after `zip`); empty for computed values.
    strides: Vec<Option<i64>>,
    /// Buffer dimensions this dimension ranges over.
    src: Vec<(usize, usize)>,
}

#[derive(Clone, Debug)]
enum View {
    Unknown,
    Scalar,
    /// A short vector of this many lanes (`asVector`), read and written by one thread as a unit.
    Vector(i64),
    Arr(Dim, Box<View>),
    Tup(Vec<View>),
}

impl View {
    fn is_scalarish(&self) -> bool {
        match self {
            View::Scalar => true,
            View::Tup(ts) => ts.iter().all(|t| matches!(t, View::Scalar)),
            _ => false,
        }
    }

    /// Dimensions of a (nested) array view, outermost first.
    fn dims(&self) -> Vec<&Dim> {
        let mut out = Vec::new();
        let mut v = self;
        while let View::Arr(d, e) = v {
            out.push(d);
            v = e;
        }
        out
    }

    /// Every dimension in the view, tuples included.
    fn all_dims(&self, out: &mut Vec<Dim>) {
        match self {
            View::Arr(d, e) => {
                out.push(d.clone());
                e.all_dims(out);
            }
            View::Tup(ts) => ts.iter().for_each(|t| t.all_dims(out)),
            _ => {}
        }
    }

    fn leaf_scalars(&self) -> i64 {
        match self {
            View::Arr(_, e) => e.leaf_scalars(),
            View::Tup(ts) => ts.iter().map(|t| t.leaf_scalars()).sum(),
            View::Vector(w) => *w,
            _ => 1,
        }
    }
}

/// A fresh row-major array of the given dimension lengths around `leaf`, its dimensions tagged
/// with buffer `buf` (if any).
fn fresh(lens: &[Option<i64>], leaf: View, buf: Option<usize>) -> View {
    let mut v = leaf;
    let mut stride = Some(1i64);
    for (k, len) in lens.iter().enumerate().rev() {
        let src = buf.map(|b| vec![(b, k)]).unwrap_or_default();
        v = View::Arr(Dim { len: *len, strides: vec![stride], src }, Box::new(v));
        stride = match (stride, len) {
            (Some(s), Some(l)) => s.checked_mul(*l),
            _ => None,
        };
    }
    v
}

fn view_of_type(t: &Type) -> View {
    let (dims, leaf) = t.dims();
    let lens: Vec<Option<i64>> = dims.iter().map(|s| s.as_const()).collect();
    let leaf = match leaf {
        Type::Tuple(ts) => View::Tup(ts.iter().map(view_of_type).collect()),
        Type::Scalar(_) => View::Scalar,
        Type::Vector(_, w) => View::Vector(i64::from(*w)),
        _ => View::Unknown,
    };
    fresh(&lens, leaf, None)
}

// ---------------------------------------------------------------------------------------------
// Abstract values

#[derive(Clone, Debug)]
enum AV {
    V(View),
    Clo(NodeId, Rc<Vec<AV>>),
    Part(Prim, NodeId, Vec<AV>),
}

impl AV {
    fn view(self) -> View {
        match self {
            AV::V(v) => v,
            _ => View::Unknown,
        }
    }
}

struct Walker<'a> {
    p: &'a Program,
    /// The program only rearranges its input, its outermost maps writing the result: nothing
    /// is computed, so a function's view is written by its own map's threads, never copied
    /// from what other threads computed ([`copied_maps`] does not apply).
    rearranging: bool,
    /// The sizes the analysis is made at.
    sizes: Sizes,
    /// The same, for substitution into types.
    subst: HashMap<String, mapsat_ir::Size>,
    explicit: HashMap<NodeId, AddressSpace>,
    maps: Vec<MapInfo>,
    by_node: HashMap<NodeId, MapIdx>,
    /// Stack of enclosing maps (all maps, concrete or not, decided on exit).
    stack: Vec<MapIdx>,
    /// Compute events seen (scalar operations, reduces, literals, `toX`).
    compute: u64,
    buffers: Vec<Buffer>,
    /// Per buffer: explicit spaces of its dimensions before resolution.
    explicit_dims: Vec<Vec<Option<AddressSpace>>>,
    depth: usize,
    /// Number of enclosing maps wrapped in `toGlobal`/`toLocal`/`toPrivate`: every map nested in
    /// such a copy writes memory (the copy's loops), even an identity.
    copy_depth: usize,
    /// See [`Analysis::scattered_vectors`].
    scattered_vectors: Option<String>,
    /// See [`Analysis::tuples_in_memory`].
    tuples_in_memory: Option<String>,
    /// See [`Analysis::too_deep`].
    too_deep: bool,
}

/// How deep the analysis follows a program's tree: a chain of 2,000 compositions (the parser's
/// longest) nests a little deeper than 2,000 levels, and chains may nest in lambdas. A program
/// with a map deeper is refused ([`Analysis::too_deep`]): such a map was left out of the space
/// without a word.
pub const MAX_DEPTH: usize = 4000;

impl<'a> Walker<'a> {
    fn size(&self, s: &mapsat_ir::Size) -> Option<i64> {
        s.eval(&self.sizes)
    }

    fn eval(&mut self, id: NodeId, env: &Rc<Vec<AV>>) -> AV {
        self.depth += 1;
        let r = if self.depth > MAX_DEPTH {
            // Only a map left unseen matters (a long sum of scalars beyond the depth does not).
            let mut has_map = false;
            self.p.preorder(id, &mut |_, n| has_map |= matches!(n, Node::Prim(Prim::Map { .. })));
            self.too_deep |= has_map;
            AV::V(View::Unknown)
        } else {
            self.eval_inner(id, env)
        };
        self.depth -= 1;
        r
    }

    fn eval_inner(&mut self, id: NodeId, env: &Rc<Vec<AV>>) -> AV {
        match self.p.node(id) {
            Node::Param(i) => match self.p.params.get(*i as usize) {
                Some(param) => {
                    let t = param.ty.substitute(&self.subst);
                    AV::V(view_of_type(&t))
                }
                None => AV::V(View::Unknown),
            },
            Node::Var(i) => {
                let i = *i as usize;
                if i < env.len() {
                    env[env.len() - 1 - i].clone()
                } else {
                    AV::V(View::Unknown)
                }
            }
            Node::Lit(_) => {
                self.compute += 1;
                AV::V(View::Scalar)
            }
            Node::Prim(p) => {
                if p.arity() == 0 {
                    self.prim(p.clone(), id, vec![])
                } else {
                    AV::Part(p.clone(), id, vec![])
                }
            }
            Node::Lam(body, _) => AV::Clo(*body, env.clone()),
            Node::App(f, x) => {
                let fv = self.eval(*f, env);
                let xv = self.eval(*x, env);
                self.apply(fv, xv)
            }
            Node::Let(v, b) => {
                let vv = self.eval(*v, env);
                let mut e = (**env).clone();
                e.push(vv);
                self.eval(*b, &Rc::new(e))
            }
        }
    }

    fn apply(&mut self, f: AV, x: AV) -> AV {
        match f {
            AV::Clo(body, env) => {
                let mut e = (*env).clone();
                e.push(x);
                self.eval(body, &Rc::new(e))
            }
            AV::Part(p, id, mut args) => {
                args.push(x);
                if args.len() >= p.arity() {
                    self.prim(p, id, args)
                } else {
                    AV::Part(p, id, args)
                }
            }
            AV::V(_) => AV::V(View::Unknown),
        }
    }

    fn read_all(&mut self, v: &View, reader: Reader) {
        let mut dims = Vec::new();
        v.all_dims(&mut dims);
        for d in dims {
            self.read_dim(&d, reader.clone());
        }
    }

    /// The copy of the view `r` a thread makes: it reads every element, and writes a fresh
    /// array of the same shape.
    fn copied(&mut self, r: View) -> View {
        self.read_all(&r, Reader::Thread);
        let mut lens = Vec::new();
        let mut leaf = r;
        while let View::Arr(d, e) = leaf {
            lens.push(d.len);
            leaf = *e;
        }
        fresh(&lens, leaf, None)
    }

    fn read_dim(&mut self, d: &Dim, reader: Reader) {
        for &(b, k) in &d.src {
            if !self.buffers[b].reads.contains(&(k, reader.clone())) {
                self.buffers[b].reads.push((k, reader.clone()));
            }
        }
    }

    fn prim(&mut self, p: Prim, id: NodeId, mut args: Vec<AV>) -> AV {
        use View::*;
        let v = |a: &mut Vec<AV>, i: usize| std::mem::replace(&mut a[i], AV::V(Unknown)).view();
        // A compute event for every primitive but the layout ones (a map computes when its
        // function does): what decides whether a map is concrete or a layout map.
        if !p.is_layout() && !matches!(p, Prim::Map { .. }) {
            self.compute += 1;
        }
        match p {
            Prim::Map { .. } => {
                let xs = v(&mut args, 1);
                let f = std::mem::replace(&mut args[0], AV::V(Unknown));
                self.map(id, f, xs)
            }
            Prim::Reduce { .. } => {
                let xs = v(&mut args, 2);
                let init = v(&mut args, 1);
                self.read_all(&xs, Reader::Thread);
                let elem = match &xs {
                    Arr(_, e) => (**e).clone(),
                    _ => Unknown,
                };
                let f = std::mem::replace(&mut args[0], AV::V(Unknown));
                let g = self.apply(f, AV::V(init.clone()));
                let _ = self.apply(g, AV::V(elem));
                let lens: Vec<Option<i64>> = init.dims().iter().map(|d| d.len).collect();
                AV::V(fresh(&lens, Scalar, None))
            }
            Prim::Zip(_) => {
                let views: Vec<View> = (0..args.len()).map(|i| v(&mut args, i)).collect();
                let mut dim = Dim { len: None, strides: vec![], src: vec![] };
                let mut elems = Vec::new();
                for w in views {
                    match w {
                        Arr(d, e) => {
                            dim.len = dim.len.or(d.len);
                            dim.strides.extend(d.strides);
                            dim.src.extend(d.src);
                            elems.push(*e);
                        }
                        _ => return AV::V(Unknown),
                    }
                }
                AV::V(Arr(dim, Box::new(Tup(elems))))
            }
            Prim::Split(n) => {
                let n = self.size(&n);
                match v(&mut args, 0) {
                    Arr(d, e) => {
                        let outer = Dim {
                            len: match (d.len, n) {
                                (Some(l), Some(n)) if n > 0 => Some(l / n),
                                _ => None,
                            },
                            strides: d.strides.iter().map(|s| s.zip(n).and_then(|(s, n)| s.checked_mul(n))).collect(),
                            src: d.src.clone(),
                        };
                        let inner = Dim { len: n, ..d };
                        AV::V(Arr(outer, Box::new(Arr(inner, e))))
                    }
                    _ => AV::V(Unknown),
                }
            }
            Prim::Join => match v(&mut args, 0) {
                Arr(d0, e) => match *e {
                    Arr(d1, e1) => {
                        let strides = d0
                            .strides
                            .iter()
                            .zip(&d1.strides)
                            .map(|(s0, s1)| match (s0, s1, d1.len) {
                                (Some(s0), Some(s1), Some(l1)) if *s0 == s1 * l1 => Some(*s1),
                                _ => None,
                            })
                            .collect();
                        let mut src = d0.src;
                        src.extend(d1.src);
                        let len = d0.len.zip(d1.len).and_then(|(a, b)| a.checked_mul(b));
                        AV::V(Arr(Dim { len, strides, src }, e1))
                    }
                    _ => AV::V(Unknown),
                },
                _ => AV::V(Unknown),
            },
            Prim::Transpose => match v(&mut args, 0) {
                Arr(d0, e) => match *e {
                    Arr(d1, e1) => AV::V(Arr(d1, Box::new(Arr(d0, e1)))),
                    _ => AV::V(Unknown),
                },
                _ => AV::V(Unknown),
            },
            Prim::Slide(size, step) => {
                let (size, step) = (self.size(&size), self.size(&step));
                match v(&mut args, 0) {
                    Arr(d, e) => {
                        let len = match (d.len, size, step) {
                            (Some(l), Some(sz), Some(st)) if st > 0 => Some((l - sz) / st + 1),
                            _ => None,
                        };
                        let outer = Dim {
                            len,
                            strides: d
                                .strides
                                .iter()
                                .map(|s| s.zip(step).and_then(|(s, st)| s.checked_mul(st)))
                                .collect(),
                            src: d.src.clone(),
                        };
                        AV::V(Arr(outer, Box::new(Arr(Dim { len: size, ..d }, e))))
                    }
                    _ => AV::V(Unknown),
                }
            }
            Prim::Pad(l, r, _) => {
                let (l, r) = (self.size(&l), self.size(&r));
                match v(&mut args, 0) {
                    Arr(d, e) => {
                        // Padded accesses are conditional: not contiguous.
                        let len = match (d.len, l, r) {
                            (Some(n), Some(l), Some(r)) => Some(n + l + r),
                            _ => None,
                        };
                        let strides = d.strides.iter().map(|_| None).collect();
                        AV::V(Arr(Dim { len, strides, src: d.src }, e))
                    }
                    _ => AV::V(Unknown),
                }
            }
            Prim::At(_) => match v(&mut args, 0) {
                Arr(d, e) => {
                    self.read_dim(&d, Reader::Thread);
                    AV::V(*e)
                }
                _ => AV::V(Unknown),
            },
            Prim::Get(i) => match v(&mut args, 0) {
                Tup(mut ts) if (i as usize) < ts.len() => AV::V(ts.swap_remove(i as usize)),
                _ => AV::V(Unknown),
            },
            Prim::Tuple(_) => AV::V(Tup((0..args.len()).map(|i| v(&mut args, i)).collect())),
            Prim::To(_) => AV::V(v(&mut args, 0)),
            Prim::AsVector(w) => {
                let xs = v(&mut args, 0);
                self.check_lanes(&xs, w.lanes);
                // A thread reads the `w` lanes of its vector, elements of a computed array that
                // `w` threads of its producer may have written (as `split(w, xs)` read whole).
                if let Arr(d, _) = &xs {
                    self.read_dim(d, Reader::Thread);
                }
                AV::V(as_vector(xs, i64::from(w.lanes)))
            }
            Prim::AsScalar => AV::V(as_scalar(v(&mut args, 0))),
            Prim::VectorFromScalar(w) => AV::V(Vector(i64::from(w.lanes))),
            Prim::Bin(_) | Prim::Un(_) | Prim::Select | Prim::Cast(_) => {
                AV::V((0..args.len()).map(|i| v(&mut args, i)).find(|a| matches!(a, Vector(_))).unwrap_or(Scalar))
            }
        }
    }

    /// Records `asVector(w, xs)` of an array whose consecutive elements are, at the analysed
    /// sizes, a known distance other than 1 apart in memory (a column of a row-major array).
    /// Unknown strides (after `pad`) are not refused: `conv_vec.lift` reads aligned runs there.
    fn check_lanes(&mut self, xs: &View, w: u32) {
        let View::Arr(d, _) = xs else { return };
        if let Some(s) = d.strides.iter().flatten().find(|s| **s != 1) {
            self.scattered_vectors.get_or_insert_with(|| {
                format!("asVector({w}) of an array whose consecutive elements are {s} apart in memory")
            });
        }
    }

    fn map(&mut self, id: NodeId, f: AV, xs: View) -> AV {
        let label = match self.p.node(id) {
            Node::Prim(Prim::Map { label, .. }) => label.clone(),
            _ => String::new(),
        };
        let first = !self.by_node.contains_key(&id);
        let m = *self.by_node.entry(id).or_insert(self.maps.len());
        if first {
            self.maps.push(MapInfo {
                label,
                node: id,
                concrete: false,
                parent: None,
                perfectly_nested: false,
                extent: None,
                unvectorizable: None,
                explicit_space: self.explicit.get(&id).copied(),
                context: Vec::new(),
            });
        }
        let (in_dim, elem) = match &xs {
            View::Arr(d, e) => (Some(d.clone()), (**e).clone()),
            _ => (None, View::Unknown),
        };
        let before = self.compute;
        let nbuf_before = self.buffers.len();
        // A function whose result is a view of what it computes that cannot be written through
        // (`fun(r => pad(1, 1, 0.0, map(g, r)))`): code generation computes it, then copies it
        // in every thread of this map's iteration.
        let copies = !self.rearranging && matches!(&f, AV::Clo(body, _) if !copied_maps(self.p, *body).is_empty());
        let copy = self.maps[m].explicit_space.is_some();
        self.copy_depth += copy as usize;
        self.stack.push(m);
        let r = self.apply(f, AV::V(elem.clone())).view();
        self.stack.pop();
        self.copy_depth -= copy as usize;
        let concrete = self.compute > before || copy || self.copy_depth > 0;
        if self.maps[m].explicit_space.is_some() {
            self.compute += 1;
        }
        if !concrete {
            // A layout map: a view of its input.
            return AV::V(match in_dim {
                Some(d) => View::Arr(d, Box::new(r)),
                None => View::Unknown,
            });
        }
        if first {
            let info = &mut self.maps[m];
            info.concrete = true;
            info.extent = in_dim.as_ref().and_then(|d| d.len);
            info.context = self.stack.clone();
            // Vectorizability.
            info.unvectorizable = if !elem.is_scalarish() {
                Some("its elements are not scalars".into())
            } else if !matches!(r, View::Scalar) {
                Some("its function does not compute a scalar".into())
            } else if self.buffers.len() > nbuf_before {
                Some("it has nested maps".into())
            } else {
                match &in_dim {
                    Some(d) if !d.strides.is_empty() && d.strides.iter().all(|s| *s == Some(1)) => match d.len {
                        Some(l) if l % crate::VECTOR_WIDTH == 0 => None,
                        Some(l) => Some(format!(
                            "its length {l} is not a multiple of the vector width {}",
                            crate::VECTOR_WIDTH
                        )),
                        None => Some("its length is unknown at these sizes".into()),
                    },
                    Some(_) => Some("consecutive iterations do not access consecutive elements".into()),
                    None => Some("its input is not an array the analysis understands".into()),
                }
            };
        }
        // Reads of the input dimension.
        if let Some(d) = &in_dim {
            self.read_dim(d, Reader::Map(m));
        }
        let r = if copies { self.copied(r) } else { r };
        // The output buffer.
        let b = self.buffers.len();
        let mut writers = vec![Writer::Maps(vec![m])];
        let mut explicit = vec![self.maps[m].explicit_space];
        let mut lens = vec![in_dim.as_ref().and_then(|d| d.len)];
        let mut leaf = &r;
        while let View::Arr(d, e) = leaf {
            lens.push(d.len);
            match d.src.as_slice() {
                [] => {
                    writers.push(Writer::Thread);
                    explicit.push(None);
                }
                [(b2, k2)] => {
                    if *k2 == 0 && writers.len() == 1 {
                        self.buffers[*b2].merged = true;
                    }
                    writers.push(self.buffers[*b2].writers[*k2].clone());
                    explicit.push(self.explicit_dims[*b2][*k2]);
                }
                many => {
                    let mut ws = Vec::new();
                    for (b2, k2) in many {
                        if let Writer::Maps(w) = &self.buffers[*b2].writers[*k2] {
                            ws.extend(w.iter().copied());
                        }
                    }
                    writers.push(Writer::Maps(ws));
                    explicit.push(many.iter().find_map(|(b2, k2)| self.explicit_dims[*b2][*k2]));
                }
            }
            leaf = e;
        }
        let leaf = match leaf {
            View::Tup(_) | View::Vector(_) => leaf.clone(),
            _ => View::Scalar,
        };
        if matches!(leaf, View::Tup(_)) {
            let label = &self.maps[m].label;
            let map = if label.is_empty() { "a map".to_string() } else { format!("map `{label}`") };
            self.tuples_in_memory
                .get_or_insert_with(|| format!("{map} computes tuples, which would be kept in memory"));
        }
        let bytes =
            lens.iter().try_fold(leaf.leaf_scalars().saturating_mul(4), |acc, l| l.and_then(|l| acc.checked_mul(l)));
        let spaces = resolve_spaces(&explicit);
        self.buffers.push(Buffer { top: m, writers, spaces, bytes, reads: Vec::new(), merged: false });
        self.explicit_dims.push(explicit);
        AV::V(fresh(&lens, leaf, Some(b)))
    }
}

/// `asVector(w, xs)` of an array of scalars: its dimension cut into runs of `w` lanes, whose
/// strides are `w` times larger, over the same buffer dimensions; else unknown.
fn as_vector(xs: View, w: i64) -> View {
    match xs {
        View::Arr(d, e) if matches!(*e, View::Scalar) => {
            let outer = Dim {
                len: d.len.map(|l| l / w),
                strides: d.strides.iter().map(|s| s.and_then(|s| s.checked_mul(w))).collect(),
                src: d.src,
            };
            View::Arr(outer, Box::new(View::Vector(w)))
        }
        _ => View::Unknown,
    }
}

/// `asScalar(xs)` of an array of vectors: the lanes in order, over the same buffer dimensions
/// (stride 1 where consecutive vectors are `w` apart); else unknown.
fn as_scalar(xs: View) -> View {
    match xs {
        View::Arr(d, e) => match *e {
            View::Vector(w) => {
                let dim = Dim {
                    len: d.len.and_then(|l| l.checked_mul(w)),
                    strides: d.strides.iter().map(|s| (*s == Some(w)).then_some(1)).collect(),
                    src: d.src,
                };
                View::Arr(dim, Box::new(View::Scalar))
            }
            _ => View::Unknown,
        },
        _ => View::Unknown,
    }
}

/// Lift's address-space inference: a dimension without an explicit `toX` is where its inner
/// dimensions are written, else where its outer dimensions are, else global.
fn resolve_spaces(explicit: &[Option<AddressSpace>]) -> Vec<AddressSpace> {
    (0..explicit.len())
        .map(|k| {
            explicit[k]
                .or_else(|| explicit[k + 1..].iter().find_map(|s| *s))
                .or_else(|| explicit[..k].iter().rev().find_map(|s| *s))
                .unwrap_or(AddressSpace::Global)
        })
        .collect()
}

/// The map prim heading a node's application spine, looking through nothing else.
fn map_head(p: &Program, id: NodeId) -> Option<NodeId> {
    let (head, _) = p.spine(id);
    matches!(p.node(head), Node::Prim(Prim::Map { .. })).then_some(head)
}

/// The maps whose output `toX(e)` places in an address space: the map heading `e`; for a
/// `reduce(f, init, xs)`, whose accumulator lives there, the maps heading `init` and the body
/// of `f` (`fun(acc, x => map(...))`), which write the accumulator.
fn written_maps(p: &Program, e: NodeId) -> Vec<NodeId> {
    let (head, args) = p.spine(e);
    match p.node(head) {
        Node::Prim(Prim::Map { .. }) => vec![head],
        // The result stored through a view (a fused copy, `split(n, map(fun(x => x), ..))`).
        Node::Prim(q) if q.is_layout() && args.len() == q.arity() => {
            args.last().map(|a| written_maps(p, *a)).unwrap_or_default()
        }
        Node::Prim(Prim::Reduce { .. }) if args.len() == 3 => {
            let mut body = args[0];
            for _ in 0..2 {
                if let Node::Lam(b, _) = p.node(body) {
                    body = *b;
                }
            }
            [map_head(p, args[1]), map_head(p, body)].into_iter().flatten().collect()
        }
        _ => Vec::new(),
    }
}

/// The maps whose results code generation copies to the output after computing them: `result`
/// (the program's root, or the body of a map's function) seen through the views it writes
/// through (`split`, `join`, `transpose`, `asVector`, `asScalar`), `let`s and the variables
/// they bind, when what is left is another view
/// (`slide`, `pad`, `at`, `get`, `zip`, `tuple`), and the maps that view is made of
/// ([`computed_under`]). Every thread of the grid (of the map's iteration) runs that copy,
/// reading what every other thread wrote: only a result computed by one thread (or a work group,
/// behind a barrier) can be copied so.
pub(crate) fn copied_maps(p: &Program, result: NodeId) -> Vec<NodeId> {
    let mut lets: Vec<NodeId> = Vec::new();
    let mut e = result;
    loop {
        let (head, args) = p.spine(e);
        match p.node(head) {
            Node::Let(value, body) if args.is_empty() => {
                lets.push(*value);
                e = *body;
            }
            Node::Var(k) if args.is_empty() && (*k as usize) < lets.len() => {
                let i = let_index(&lets, *k);
                e = lets[i];
                lets.truncate(i);
            }
            Node::Prim(q) if q.is_layout() && args.len() == q.arity() => match (written_through(q), args.last()) {
                (true, Some(a)) => e = *a,
                _ => return computed_under(p, e, &lets),
            },
            // A layout map (`map(transpose, ..)`, as `slideND2` expands): written through when
            // its function is, else copied.
            Node::Prim(Prim::Map { .. }) if args.len() == 2 => match layout_function(p, args[0]) {
                Some(true) => e = args[1],
                Some(false) => return computed_under(p, e, &lets),
                None => return Vec::new(),
            },
            _ => return Vec::new(),
        }
    }
}

/// Whether the function `f` of a map is a view that code generation writes through (`split`,
/// `join`, `transpose`, `asVector`, `asScalar`) or another view (`slide(2, 1)`,
/// `fun(r => padClamp(1, 1, r))`); `None` when it computes.
fn layout_function(p: &Program, f: NodeId) -> Option<bool> {
    let (head, args) = p.spine(f);
    match p.node(head) {
        Node::Prim(q) if q.is_layout() && args.len() + 1 == q.arity() => Some(written_through(q)),
        Node::Lam(body, _) if args.is_empty() => {
            let (head, args) = p.spine(*body);
            match (p.node(head), args.last().map(|a| p.node(*a))) {
                (Node::Prim(q), Some(Node::Var(0))) if q.is_layout() && args.len() == q.arity() => {
                    Some(written_through(q))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// Is `q` a view code generation writes through (a reindexing of every element once)?
fn written_through(q: &Prim) -> bool {
    matches!(q, Prim::Split(_) | Prim::Join | Prim::Transpose | Prim::AsVector(_) | Prim::AsScalar)
}

/// The position in `lets` (innermost last) of the value that `Var(k)` names.
fn let_index(lets: &[NodeId], k: u32) -> usize {
    lets.len() - 1 - k as usize
}

/// The maps whose results the view `e` is made of: through further views, the arrays that
/// layout maps rearrange (`map(fun(r => padClamp(1, 1, r)), ..)`, as `padClampND2` expands),
/// and the values `let`s (`lets`, innermost last) bind to the variables it names.
fn computed_under(p: &Program, e: NodeId, lets: &[NodeId]) -> Vec<NodeId> {
    let (head, args) = p.spine(e);
    match p.node(head) {
        Node::Var(k) if args.is_empty() && (*k as usize) < lets.len() => {
            let i = let_index(lets, *k);
            computed_under(p, lets[i], &lets[..i])
        }
        Node::Prim(q) if q.is_layout() && args.len() == q.arity() => {
            args.iter().flat_map(|a| computed_under(p, *a, lets)).collect()
        }
        Node::Prim(Prim::Map { .. }) if args.len() == 2 => {
            std::iter::once(head).chain(computed_under(p, args[1], lets)).collect()
        }
        _ => written_maps(p, e),
    }
}

/// Is `id` a whole reduction `reduce(f, init, xs)`?
fn is_reduction(p: &Program, id: NodeId) -> bool {
    let (head, args) = p.spine(id);
    matches!(p.node(head), Node::Prim(Prim::Reduce { .. })) && args.len() == 3
}

/// Is the function node `f` just the map `inner` applied to the parameter?
fn is_perfect(p: &Program, f: NodeId, inner: NodeId) -> bool {
    match p.node(f) {
        Node::App(h, _) => *h == inner,
        Node::Lam(body, _) => {
            let (head, args) = p.spine(*body);
            // The inner map's function must not use the outer element: fused, the inner map
            // runs over the joined array, where no outer element is bound.
            head == inner
                && args.len() == 2
                && matches!(p.node(args[1]), Node::Var(0))
                && !crate::apply::uses_var(p, args[0], 0, &mut HashMap::new())
        }
        _ => false,
    }
}

impl Analysis {
    /// Analyses a program at its default sizes.
    pub fn new(p: &Program) -> Analysis {
        Analysis::at(p, &Sizes::new())
    }

    /// Analyses a program at the given sizes (the program's defaults for the others).
    pub fn at(p: &Program, given: &Sizes) -> Analysis {
        let sizes = given.or(&p.default_sizes());
        let subst: HashMap<String, mapsat_ir::Size> =
            sizes.iter().map(|(k, v)| (k.to_string(), mapsat_ir::Size::constant(v))).collect();
        let mut explicit = HashMap::new();
        for node in &p.nodes {
            if let Node::App(f, x) = node {
                if let Node::Prim(Prim::To(s)) = p.node(*f) {
                    for m in written_maps(p, *x) {
                        explicit.insert(m, *s);
                    }
                }
            }
        }
        // An unplaced reduction's accumulator is private memory too: code generation keeps every
        // accumulator there (an array one, `reduce(f, map(..), xs)`, as `toPrivate` would).
        for id in (0..p.nodes.len()).map(|i| NodeId(i as u32)) {
            if is_reduction(p, id) {
                for m in written_maps(p, id) {
                    explicit.entry(m).or_insert(AddressSpace::Private);
                }
            }
        }
        let walk = |explicit: HashMap<NodeId, AddressSpace>, rearranging: bool| {
            let mut w = Walker {
                p,
                rearranging,
                sizes: sizes.clone(),
                subst: subst.clone(),
                explicit,
                maps: Vec::new(),
                by_node: HashMap::new(),
                stack: Vec::new(),
                compute: 0,
                buffers: Vec::new(),
                explicit_dims: Vec::new(),
                depth: 0,
                copy_depth: 0,
                scattered_vectors: None,
                tuples_in_memory: None,
                too_deep: false,
            };
            if p.root.index() < p.nodes.len() {
                let _ = w.eval(p.root, &Rc::new(Vec::new()));
            }
            w
        };
        let mut w = walk(explicit.clone(), false);
        // A program whose maps only rearrange its input (a transposition, a copy: the first stage
        // of `let wt = toGlobal(map(.., transpose(ks))) in ..`, whose `toGlobal` the stage drops)
        // still writes its result to global memory: its outermost maps are that copy, as under
        // `toGlobal`. Programs with a map that computes are analysed as written.
        let root_maps = if p.root.index() < p.nodes.len() { written_maps(p, p.root) } else { Vec::new() };
        if !w.maps.iter().any(|m| m.concrete) && root_maps.iter().any(|m| !explicit.contains_key(m)) {
            for m in root_maps {
                explicit.entry(m).or_insert(AddressSpace::Global);
            }
            w = walk(explicit, true);
        }
        let mut maps = w.maps;
        // Parents: nearest concrete map on the context stack.
        for i in 0..maps.len() {
            let ctx: Vec<MapIdx> = maps[i].context.iter().copied().filter(|&c| maps[c].concrete).collect();
            maps[i].parent = ctx.last().copied();
            maps[i].context = ctx;
        }
        // Perfect nesting: the parent's function is this map.
        let mut fun_of: HashMap<NodeId, NodeId> = HashMap::new();
        for node in &p.nodes {
            if let Node::App(f, x) = node {
                if let Node::Prim(Prim::Map { .. }) = p.node(*f) {
                    fun_of.insert(*f, *x);
                }
            }
        }
        for i in 0..maps.len() {
            if let Some(par) = maps[i].parent {
                if let Some(&f) = fun_of.get(&maps[par].node) {
                    maps[i].perfectly_nested = is_perfect(p, f, maps[i].node);
                }
            }
        }
        let mut tree = DiGraph::new();
        let mut graph_node = HashMap::new();
        for (i, m) in maps.iter().enumerate() {
            if m.concrete {
                graph_node.insert(i, tree.add_node(i));
            }
        }
        for (i, m) in maps.iter().enumerate() {
            if let (true, Some(par)) = (m.concrete, m.parent) {
                tree.add_edge(graph_node[&par], graph_node[&i], ());
            }
        }
        let copied = match w.rearranging {
            true => Vec::new(),
            false => copied_maps(p, p.root).into_iter().filter_map(|n| maps.iter().position(|m| m.node == n)).collect(),
        };
        Analysis {
            maps,
            tree,
            graph_node,
            buffers: w.buffers,
            scattered_vectors: w.scattered_vectors,
            tuples_in_memory: w.tuples_in_memory,
            too_deep: w.too_deep,
            copied,
        }
    }

    /// The maps that write memory (the paper's `ConcreteMaps`), in evaluation order (outer maps
    /// before the maps nested in them).
    pub fn concrete_maps(&self) -> Vec<MapIdx> {
        (0..self.maps.len()).filter(|&i| self.maps[i].concrete).collect()
    }

    /// `NestedMaps(m)`: all concrete maps nested (directly or not) in `m`.
    pub fn nested_maps(&self, m: MapIdx) -> Vec<MapIdx> {
        let Some(&n) = self.graph_node.get(&m) else { return vec![] };
        let mut out = Vec::new();
        let mut dfs = petgraph::visit::Dfs::new(&self.tree, n);
        while let Some(x) = dfs.next(&self.tree) {
            if x != n {
                out.push(self.tree[x]);
            }
        }
        out.sort_unstable();
        out
    }

    /// `OuterMaps(m)`: the concrete maps wrapping `m`, outermost first.
    pub fn outer_maps(&self, m: MapIdx) -> Vec<MapIdx> {
        self.maps[m].context.clone()
    }

    /// `MapNestingChains`: every path from a root of the nesting forest to a leaf.
    pub fn chains(&self) -> Vec<Vec<MapIdx>> {
        let mut out = Vec::new();
        for n in self.tree.node_indices() {
            if self.tree.neighbors_directed(n, petgraph::Direction::Incoming).next().is_none() {
                let mut path = Vec::new();
                self.chains_from(n, &mut path, &mut out);
            }
        }
        out
    }

    fn chains_from(&self, n: NodeIndex, path: &mut Vec<MapIdx>, out: &mut Vec<Vec<MapIdx>>) {
        path.push(self.tree[n]);
        let mut kids: Vec<NodeIndex> = self.tree.neighbors(n).collect();
        kids.sort_by_key(|k| self.tree[*k]);
        if kids.is_empty() {
            out.push(path.clone());
        }
        for k in kids {
            self.chains_from(k, path, out);
        }
        path.pop();
    }

    /// `m.usesPrivateMemory` / `m.usesLocalMemory`: `m` writes or reads a buffer dimension in
    /// that address space.
    pub fn uses_space(&self, m: MapIdx, space: AddressSpace) -> bool {
        !self.buffers_used(m, space).is_empty()
    }

    /// The buffers in `space` that map `m` writes or reads (indices into `buffers`).
    pub fn buffers_used(&self, m: MapIdx, space: AddressSpace) -> Vec<usize> {
        (0..self.buffers.len())
            .filter(|&i| {
                let b = &self.buffers[i];
                b.writers
                    .iter()
                    .zip(&b.spaces)
                    .any(|(w, s)| *s == space && matches!(w, Writer::Maps(ws) if ws.contains(&m)))
                    || b.reads.iter().any(|(k, r)| *r == Reader::Map(m) && b.spaces[*k] == space)
            })
            .collect()
    }
}
