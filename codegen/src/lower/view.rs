//! Views (Lift's view system): a value during lowering is a parameter or an allocated buffer
//! seen through `split`, `join`, `transpose`, `slide`, `pad`, `zip`, `get`, `asVector`,
//! `asScalar` and the indexing done by maps. A view is turned into a memory access only when a
//! scalar is needed: [`Lower::resolve`] walks it with a stack of array indices and a stack of
//! tuple components, building the flat index with the simplifying constructors of
//! [`crate::index`]. Writes go through *output views*: the destination of `join(e)` is `split`
//! of the destination, and so on, so a map nested in layout primitives writes straight into its
//! final place.

use super::expr::{Arg, Out};
use super::types::{array_len, konst, strides};
use super::{Lower, R};
use crate::error::{CodegenError, CodegenErrorKind as K};
use crate::index::Index;
use crate::kir::*;
use mapsat_ir::ast::{NodeId, PadMode, Prim};
use mapsat_ir::Type;

/// A value during lowering.
#[derive(Clone, Debug)]
pub(super) enum View {
    /// A whole buffer.
    Mem(BufId),
    /// Element `i` of an array.
    Access(Box<View>, Index),
    /// `split(m, inner)`.
    Split(i64, Box<View>),
    /// `join(inner)`, whose inner arrays have length `m`.
    Join(i64, Box<View>),
    /// `transpose(inner)`.
    Transpose(Box<View>),
    /// `slide(size, step, inner)` (the size is in the type).
    Slide(i64, Box<View>),
    /// `pad(left, _, inner)` or `padClamp`, `inner` of length `len`.
    Pad { left: i64, len: i64, mode: PadMode, inner: Box<View> },
    /// `zip(a, b, ...)`.
    Zip(Vec<View>),
    /// `(a, b, ...)`.
    Tuple(Vec<View>),
    /// `inner.k`.
    Get(u32, Box<View>),
    /// `asVector(w, inner)`.
    AsVector(u32, Box<View>),
    /// `asScalar(inner)` of vectors of width `w`.
    AsScalar(u32, Box<View>),
    /// `map(f, inner)` with a layout-only `f` (no computation), read lazily: element `i` is
    /// `f(inner[i])`, lowered when an access reaches it, in the environment `f` was defined in.
    MapF { f: NodeId, env: Vec<View>, inner: Box<View> },
    /// The destination of `xs` in `map(f, xs)` written to `inner`, for an invertible layout `f`:
    /// element `i` of `xs` goes to `inv(inner[i])`.
    MapInv { inv: Vec<InvOp>, inner: Box<View> },
    /// A computed value (a scalar or vector expression).
    Value(Expr),
}

/// One step of the inverse of a layout function, applied to a destination view.
#[derive(Clone, Debug)]
pub(super) enum InvOp {
    Split(i64),
    Join(i64),
    Transpose,
    AsVector(u32),
    AsScalar(u32),
    /// `map(g)` of an invertible layout function `g`: `g`'s inverse applied to each element.
    Map(Vec<InvOp>),
}

impl InvOp {
    /// The step applied to a destination.
    pub(super) fn apply(&self, v: View) -> View {
        match self {
            InvOp::Split(m) => View::Split(*m, Box::new(v)),
            InvOp::Join(m) => View::Join(*m, Box::new(v)),
            InvOp::Transpose => View::Transpose(Box::new(v)),
            InvOp::AsVector(w) => View::AsVector(*w, Box::new(v)),
            InvOp::AsScalar(w) => View::AsScalar(*w, Box::new(v)),
            InvOp::Map(inv) => View::MapInv { inv: inv.clone(), inner: Box::new(v) },
        }
    }
}

impl View {
    /// Element `i` of the view.
    pub(super) fn at(self, i: Index) -> View {
        View::Access(Box::new(self), i)
    }

    /// The buffer at the bottom of an output view.
    pub(super) fn base(&self) -> Option<BufId> {
        match self {
            View::Mem(b) => Some(*b),
            View::Access(v, _)
            | View::Split(_, v)
            | View::Join(_, v)
            | View::Transpose(v)
            | View::Slide(_, v)
            | View::Get(_, v)
            | View::AsVector(_, v)
            | View::AsScalar(_, v) => v.base(),
            View::Pad { inner, .. } | View::MapF { inner, .. } | View::MapInv { inner, .. } => inner.base(),
            _ => None,
        }
    }
}

/// The state of a walk through a view: what the access still has to apply.
#[derive(Default)]
pub(super) struct St {
    /// Array indices, innermost on top.
    idx: Vec<Index>,
    /// Tuple components, innermost on top.
    tup: Vec<u32>,
    /// Consecutive scalars read as one vector (`asVector`), 1 otherwise.
    vec: u32,
    /// One lane of a vector element (`asScalar`).
    lane: Option<Index>,
}

impl St {
    /// The state of an access to a whole scalar (or vector) value.
    pub(super) fn new() -> St {
        St { vec: 1, ..St::default() }
    }
}

/// Where an access ends: a memory location, or a value computed without one (a padding
/// constant, a lane select, a vector put together from private scalars), or, for a vector
/// written where its lanes are apart, one location per lane.
pub(super) enum Resolved {
    Place(Place),
    Value(Expr),
    /// A vector written lane by lane: the place of each lane.
    Lanes(Vec<Place>),
}

impl Resolved {
    /// The value read.
    pub(super) fn into_expr(self) -> R<Expr> {
        match self {
            Resolved::Place(p) => Ok(Expr::Load(p)),
            Resolved::Value(e) => Ok(e),
            Resolved::Lanes(_) => Err(K::Internal("a scattered write read as a value".into()).into()),
        }
    }
}

impl Lower<'_> {
    /// A layout primitive applied to its arguments: a view of them, or, with a destination, the
    /// destination passed through the inverse of the primitive to the argument that writes.
    pub(super) fn layout_prim(
        &mut self,
        prim: &Prim,
        args: &[Arg],
        arg_tys: &[Type],
        res: &Type,
        dest: Option<View>,
    ) -> R<Out> {
        let arg_ty = |k: usize| super::expr::nth_ty(prim, arg_tys, k);
        match prim {
            Prim::Zip(_) | Prim::Tuple(_) => {
                let mut vs = Vec::new();
                for a in args {
                    vs.push(self.data(a)?);
                }
                Out::view(if matches!(prim, Prim::Zip(_)) { View::Zip(vs) } else { View::Tuple(vs) })
            }
            Prim::Split(_) => {
                let (_, inner) = array_len(res)?;
                let (m, _) = array_len(&inner)?;
                let o = self.gen_arg(&args[0], dest.map(|d| View::Join(m, Box::new(d))))?;
                Ok(Out { view: View::Split(m, Box::new(o.view)), written: o.written })
            }
            Prim::Join => {
                let (_, inner) = array_len(&arg_ty(0)?)?;
                let (m, _) = array_len(&inner)?;
                let o = self.gen_arg(&args[0], dest.map(|d| View::Split(m, Box::new(d))))?;
                Ok(Out { view: View::Join(m, Box::new(o.view)), written: o.written })
            }
            Prim::Transpose => {
                let o = self.gen_arg(&args[0], dest.map(|d| View::Transpose(Box::new(d))))?;
                Ok(Out { view: View::Transpose(Box::new(o.view)), written: o.written })
            }
            Prim::AsVector(w) => {
                let o = self.gen_arg(&args[0], dest.map(|d| View::AsScalar(w.lanes, Box::new(d))))?;
                Ok(Out { view: View::AsVector(w.lanes, Box::new(o.view)), written: o.written })
            }
            Prim::AsScalar => {
                let (_, el) = array_len(&arg_ty(0)?)?;
                let Type::Vector(_, w) = el else { return Err(K::Internal("asScalar of non-vectors".into()).into()) };
                let o = self.gen_arg(&args[0], dest.map(|d| View::AsVector(w, Box::new(d))))?;
                Ok(Out { view: View::AsScalar(w, Box::new(o.view)), written: o.written })
            }
            Prim::Slide(_, step) => {
                let v = self.data(&args[0])?;
                Out::view(View::Slide(konst(&self.concrete(step))?, Box::new(v)))
            }
            Prim::Pad(l, _, mode) => {
                let (len, _) = array_len(&arg_ty(0)?)?;
                let v = self.data(&args[0])?;
                Out::view(View::Pad { left: konst(&self.concrete(l))?, len, mode: *mode, inner: Box::new(v) })
            }
            Prim::At(i) => {
                let v = self.data(&args[0])?;
                Out::view(v.at(Index::constant(konst(&self.concrete(i))?)))
            }
            Prim::Get(i) => {
                let v = self.data(&args[0])?;
                Out::view(View::Get(*i, Box::new(v)))
            }
            _ => Err(K::Internal(format!("`{}` is not a layout primitive", prim.name())).into()),
        }
    }

    fn pop(&self, st: &mut St) -> R<Index> {
        st.idx.pop().ok_or_else(|| K::Internal("view indexed with too few indices".into()).into())
    }

    /// Walks view `v` with the access `st` down to a memory location or a value (for a write when
    /// `write`: views that cannot be written through are refused).
    pub(super) fn resolve(&mut self, v: &View, st: &mut St, write: bool) -> R<Resolved> {
        match v {
            View::Mem(b) => self.resolve_mem(*b, st, write),
            View::Access(inner, i) => {
                st.idx.push(i.clone());
                self.resolve(inner, st, write)
            }
            View::Split(m, inner) => {
                let i = self.pop(st)?;
                let j = self.pop(st)?;
                st.idx.push(i.scale(*m).add(&j));
                self.resolve(inner, st, write)
            }
            View::Join(m, inner) => {
                let k = self.pop(st)?;
                st.idx.push(k.rem(*m, &self.ranges));
                st.idx.push(k.div(*m, &self.ranges));
                self.resolve(inner, st, write)
            }
            View::Transpose(inner) => {
                let i = self.pop(st)?;
                let j = self.pop(st)?;
                st.idx.push(i);
                st.idx.push(j);
                self.resolve(inner, st, write)
            }
            View::Slide(step, inner) => {
                if write {
                    return Err(K::Unsupported("writing through slide".into()).into());
                }
                let i = self.pop(st)?;
                let j = self.pop(st)?;
                st.idx.push(i.scale(*step).add(&j));
                self.resolve(inner, st, write)
            }
            View::Pad { left, len, mode, inner } => self.resolve_pad(v, (*left, *len, *mode), inner, st, write),
            View::Zip(vs) => {
                let i = self.pop(st)?;
                let k = st.tup.pop().ok_or_else(|| {
                    CodegenError::from(K::Unsupported("a whole tuple of arrays used as a value".into()))
                })?;
                st.idx.push(i);
                let v = vs.get(k as usize).ok_or_else(|| CodegenError::from(K::Internal("zip component".into())))?;
                self.resolve(v, st, write)
            }
            View::Tuple(vs) => {
                let k = st
                    .tup
                    .pop()
                    .ok_or_else(|| CodegenError::from(K::Unsupported("a whole tuple used as a value".into())))?;
                let v = vs.get(k as usize).ok_or_else(|| CodegenError::from(K::Internal("tuple component".into())))?;
                self.resolve(v, st, write)
            }
            View::Get(k, inner) => {
                st.tup.push(*k);
                self.resolve(inner, st, write)
            }
            View::AsVector(w, inner) => {
                let i = self.pop(st)?;
                // One lane of an element: the scalar at `i * w + lane`.
                if let (1, Some(l)) = (st.vec, &st.lane) {
                    let at = i.scale(*w as i64).add(l);
                    st.lane = None;
                    st.idx.push(at);
                    return self.resolve(inner, st, write);
                }
                if st.vec != 1 || st.lane.is_some() {
                    return Err(K::Unsupported("nested asVector".into()).into());
                }
                let first = i.scale(*w as i64);
                if st.idx.is_empty() && st.tup.is_empty() && !self.lanes_consecutive(inner, &first)? {
                    // A vector store writes consecutive scalars: a destination whose lanes are
                    // apart (a transposed output) gets each lane on its own (a scatter).
                    return if write { self.scatter(inner, &first, *w) } else { self.gather(inner, &first, *w) };
                }
                st.idx.push(first);
                st.vec = *w;
                self.resolve(inner, st, write)
            }
            View::AsScalar(w, inner) => self.resolve_as_scalar(*w as i64, inner, st, write),
            View::MapF { f, env, inner } => {
                let i = self.pop(st)?;
                let saved = std::mem::replace(&mut self.env, env.clone());
                let r = self.gen(*f, vec![inner.clone().at(i)], None);
                self.env = saved;
                let v = r?.view;
                self.resolve(&v, st, write)
            }
            View::MapInv { inv, inner } => {
                let i = self.pop(st)?;
                let mut v = inner.clone().at(i);
                for op in inv {
                    v = op.apply(v);
                }
                self.resolve(&v, st, write)
            }
            View::Value(e) => Self::resolve_value(e, st, write),
        }
    }

    /// The access reaches buffer `b`: the flat index from the array indices, then the scalar
    /// layout of global and local buffers or the element layout of private ones.
    fn resolve_mem(&mut self, b: BufId, st: &mut St, write: bool) -> R<Resolved> {
        let buf = self.bufs[b.0].clone();
        if st.idx.len() != buf.dims.len() || !st.tup.is_empty() {
            return Err(K::Internal(format!("access to `{}` with {} indices", buf.name, st.idx.len())).into());
        }
        let mut flat = Index::constant(0);
        for s in strides(&buf.dims) {
            let i = self.pop(st)?;
            flat = flat.add(&i.scale(s));
        }
        match (write, self.probing) {
            (_, true) => {}
            (false, false) => self.on_read(b, (&flat, st.vec))?,
            (true, false) => self.on_write(b, (&flat, st.vec))?,
        }
        let w = buf.width;
        let place = |index: Index, width: u32, lane: Option<u32>| Place { buf: b, index, width, lane };
        if !buf.scalar_layout() {
            return self.resolve_private(b, &buf, flat, st, write);
        }
        let base = flat.scale(w as i64);
        match (st.vec, &st.lane) {
            (1, None) => Ok(Resolved::Place(place(base, w, None))),
            (1, Some(l)) => Ok(Resolved::Place(place(base.add(l), 1, None))),
            (v, None) if w == 1 => Ok(Resolved::Place(place(base, v, None))),
            _ => Err(K::Unsupported("asVector of vectors".into()).into()),
        }
    }

    /// An access to element `flat` of private buffer `b`: a whole element, one lane of it, or a
    /// vector put together from consecutive scalars.
    fn resolve_private(&mut self, b: BufId, buf: &Buffer, flat: Index, st: &mut St, write: bool) -> R<Resolved> {
        let w = buf.width;
        let place = |index: Index, width: u32, lane: Option<u32>| Place { buf: b, index, width, lane };
        match (st.vec, &st.lane) {
            (1, None) => Ok(Resolved::Place(place(flat, w, None))),
            (1, Some(l)) => match l.as_const() {
                Some(c) => Ok(Resolved::Place(place(flat, 1, Some(c as u32)))),
                None => {
                    // A lane chosen at run time: select among the lanes it can be.
                    let (lo, hi) = self.ranges.of(l);
                    if write || lo < 0 || hi >= w as i64 {
                        return Err(
                            K::Unsupported(format!("a lane of private `{}` chosen at run time", buf.name)).into()
                        );
                    }
                    let lane = |c: i64| Expr::Load(place(flat.clone(), 1, Some(c as u32)));
                    let mut e = lane(hi);
                    for c in (lo..hi).rev() {
                        e = Expr::Select(Box::new(Expr::InRange(l.clone(), c, c + 1)), Box::new(lane(c)), Box::new(e));
                    }
                    Ok(Resolved::Value(e))
                }
            },
            (v, None) if w == 1 && !write => Ok(Resolved::Value(Expr::Vector(
                buf.kind,
                (0..v as i64).map(|k| Expr::Load(place(flat.plus(k), 1, None))).collect(),
            ))),
            _ => Err(K::Unsupported(format!("vector access to private `{}`", buf.name)).into()),
        }
    }

    /// `pad(left, _, inner)` (of length `len`) read at the index on top of the access: a clamped
    /// index, or the inner element selected against the padding constant where the index may
    /// fall outside (only the bounds that can fail are tested).
    fn resolve_pad(
        &mut self,
        pad: &View,
        (left, len, mode): (i64, i64, PadMode),
        inner: &View,
        st: &mut St,
        write: bool,
    ) -> R<Resolved> {
        if write {
            return Err(K::Unsupported("writing through pad".into()).into());
        }
        let i = self.pop(st)?;
        let k = i.plus(-left);
        // The lanes run along the padded dimension only where the pad's elements are scalars
        // (no index left below this one); else along an inner dimension, with one pad test.
        // Lanes on both sides of a bound: each lane read (and tested or clamped) on its own.
        if st.vec > 1 && st.idx.is_empty() && !self.lanes_alike(&k, len, mode, st.vec) {
            if st.lane.is_some() || !st.tup.is_empty() {
                return Err(K::Unsupported("a vector read of a pad inside a tuple or a lane".into()).into());
            }
            return self.gather(pad, &i, st.vec);
        }
        match mode {
            PadMode::Clamp => {
                st.idx.push(k.clamp_to(0, len - 1, &self.ranges));
                self.resolve(inner, st, write)
            }
            PadMode::Constant(c) => {
                let (lo, hi) = self.ranges.of(&k);
                let fill = if st.vec > 1 { Expr::Splat(Box::new(Expr::Lit(c)), st.vec) } else { Expr::Lit(c) };
                let along = if st.idx.is_empty() { i64::from(st.vec) - 1 } else { 0 };
                let last = hi + along;
                if lo >= 0 && last < len {
                    st.idx.push(k);
                    return self.resolve(inner, st, write);
                }
                if last < 0 || lo >= len {
                    return Ok(Resolved::Value(fill));
                }
                st.idx.push(k.clone());
                let e = self.resolve(inner, st, write)?.into_expr()?;
                Ok(Resolved::Value(Expr::Select(Box::new(Expr::InRange(k, 0, len)), Box::new(e), Box::new(fill))))
            }
        }
    }

    /// Do the `w` lanes of a vector read of `pad` at inner index `k` (lanes `k .. k + w`) all
    /// fall on the same side of each bound, so that lane 0's test (or clamp) serves them all? Yes
    /// when every lane is inside for every `k`, when none is, or (padding with a constant) when
    /// `k` is a multiple of `w` and so is the inner length.
    fn lanes_alike(&self, k: &Index, len: i64, mode: PadMode, w: u32) -> bool {
        let (lo, hi) = self.ranges.of(k);
        let last = hi + i64::from(w) - 1;
        let inside = lo >= 0 && last < len;
        match mode {
            PadMode::Clamp => inside,
            PadMode::Constant(_) => {
                let aligned = k.rem(i64::from(w), &self.ranges).as_const() == Some(0) && len % i64::from(w) == 0;
                inside || last < 0 || lo >= len || aligned
            }
        }
    }

    /// Are the scalars `first` and `first + 1` of `inner` consecutive in one buffer (or not both
    /// in memory: computed values and pads are lowered lane by lane where they need it)? A
    /// vector read with `vloadN` at one address needs its lanes consecutive; a column (a row of a
    /// `transpose`) has them a row apart.
    fn lanes_consecutive(&mut self, inner: &View, first: &Index) -> R<bool> {
        let probing = std::mem::replace(&mut self.probing, true);
        let mut at = |k: Index| -> R<Resolved> {
            let mut one = St { idx: vec![k], ..St::new() };
            self.resolve(inner, &mut one, false)
        };
        let ends = (at(first.clone()), at(first.plus(1)));
        self.probing = probing;
        Ok(match (ends.0?, ends.1?) {
            (Resolved::Place(a), Resolved::Place(b)) => a.buf == b.buf && b.index.sub(&a.index).as_const() == Some(1),
            _ => true,
        })
    }

    /// A vector of `w` lanes read from `inner` at `first ..`, each lane read on its own (a
    /// gather), for lanes that are not consecutive in memory or that a pad tests apart.
    fn gather(&mut self, inner: &View, first: &Index, w: u32) -> R<Resolved> {
        let kind = inner
            .base()
            .map(|b| self.bufs[b.0].kind)
            .ok_or_else(|| CodegenError::from(K::Unsupported("a gathered vector of computed values".into())))?;
        let mut lanes = Vec::with_capacity(w as usize);
        for j in 0..i64::from(w) {
            let mut one = St { idx: vec![first.plus(j)], ..St::new() };
            lanes.push(self.resolve(inner, &mut one, false)?.into_expr()?);
        }
        Ok(Resolved::Value(Expr::Vector(kind, lanes)))
    }

    /// The `w` places of a vector written to `inner` at `first ..`, each lane stored on its own
    /// (a scatter), for lanes that are not consecutive in memory.
    fn scatter(&mut self, inner: &View, first: &Index, w: u32) -> R<Resolved> {
        let mut places = Vec::with_capacity(w as usize);
        for j in 0..i64::from(w) {
            let mut one = St { idx: vec![first.plus(j)], ..St::new() };
            match self.resolve(inner, &mut one, true)? {
                Resolved::Place(p) if p.width == 1 => places.push(p),
                _ => return Err(K::Internal("a scattered lane is not a scalar in memory".into()).into()),
            }
        }
        Ok(Resolved::Lanes(places))
    }

    /// `asScalar(inner)` of vectors of width `w`: a lane of an element, or, read as vectors of
    /// the same width at aligned indices (`asVector(w, asScalar(xs))`), the elements themselves.
    fn resolve_as_scalar(&mut self, w: i64, inner: &View, st: &mut St, write: bool) -> R<Resolved> {
        let k = self.pop(st)?;
        if st.vec > 1 {
            if st.vec as i64 == w && k.rem(w, &self.ranges).as_const() == Some(0) {
                st.idx.push(k.div(w, &self.ranges));
                st.vec = 1;
                return self.resolve(inner, st, write);
            }
            // Vectors of another width than the elements': each lane on its own (a gather or
            // a scatter through the elements' lanes).
            if st.idx.is_empty() && st.tup.is_empty() && st.lane.is_none() {
                let (whole, v) = (View::AsScalar(w as u32, Box::new(inner.clone())), st.vec);
                return if write { self.scatter(&whole, &k, v) } else { self.gather(&whole, &k, v) };
            }
            return Err(K::Unsupported("asVector of asScalar with another width".into()).into());
        }
        if st.lane.is_some() {
            return Err(K::Unsupported("nested asScalar".into()).into());
        }
        st.idx.push(k.div(w, &self.ranges));
        st.lane = Some(k.rem(w, &self.ranges));
        self.resolve(inner, st, write)
    }

    /// The access reaches a computed value: the value, or a constant lane of it.
    fn resolve_value(e: &Expr, st: &mut St, write: bool) -> R<Resolved> {
        if write {
            return Err(K::Internal("write to a computed value".into()).into());
        }
        if !st.idx.is_empty() || !st.tup.is_empty() {
            return Err(K::Internal("indexing a scalar".into()).into());
        }
        match st.lane.take() {
            None => Ok(Resolved::Value(e.clone())),
            Some(l) => match l.as_const() {
                Some(c) => Ok(Resolved::Value(Expr::Lane(Box::new(e.clone()), c as u32))),
                None => Err(K::Unsupported("a vector lane chosen at run time".into()).into()),
            },
        }
    }
}
