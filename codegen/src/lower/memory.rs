//! Memory: `toGlobal`/`toLocal`/`toPrivate` allocate a buffer of the wrapped map's type. An
//! allocation inside parallel loops gets one copy per iteration of those loops that share the
//! address space (global: all parallel loops; local: `mapLcl` loops), indexed by their variables.
//! A map without annotation writes into its destination; without one, into a fresh buffer:
//! private inside a thread, local inside a work group, global otherwise. Values are written
//! element by element ([`Lower::copy`]) where they are not computed in place.

use super::barrier::ParallelLoop;
use super::expr::{Arg, Out};
use super::maps::LoopCtx;
use super::names::map_name;
use super::types::{dims_of, elem_of, konst};
use super::view::{Resolved, St, View};
use super::{Lower, R};
use crate::error::{CodegenError, CodegenErrorKind as K};
use crate::index::Index;
use crate::kir::*;
use mapsat_ir::ast::{AddressSpace, MapKind, Node, NodeId, Prim};
use mapsat_ir::Type;

/// What a `toX` wraps: a map, another primitive, or an expression.
struct Wrapped {
    /// For messages: `mapGlb(0)@A`, `reduceSeq`, `expression`.
    name: String,
    /// The map's label (it names the buffer).
    label: Option<String>,
}

impl Lower<'_> {
    /// `toGlobal(a)`, `toLocal(a)`, `toPrivate(a)`: `a` written to a new buffer in that space,
    /// or to the destination when it already lies there.
    pub(super) fn to(&mut self, head: NodeId, space: AddressSpace, a: &Arg, dest: Option<View>) -> R<Out> {
        let what = self.wrapped(a);
        let space = match space {
            AddressSpace::Global => Space::Global,
            AddressSpace::Local => Space::Local,
            AddressSpace::Private => Space::Private,
        };
        if space == Space::Local {
            self.check_local(head, a, &what.name)?;
        }
        if let Some(d) = &dest {
            if d.base().is_some_and(|b| self.bufs[b.0].space == space) {
                return self.gen_arg(a, dest);
            }
        }
        let is_reduce =
            matches!(a, Arg::Node(n) if matches!(self.p.node(self.p.spine(*n).0), Node::Prim(Prim::Reduce { .. })));
        if space == Space::Private && is_reduce {
            // The accumulator already is a private variable.
            let o = self.gen_arg(a, None)?;
            return Out::view(o.view);
        }
        let t = match a {
            Arg::Node(n) => self.ty(*n)?,
            Arg::View(_) => return Err(K::Internal("toX of a value".into()).into()),
        };
        let v = self.alloc(space, &t, what.label.as_deref().unwrap_or("r"))?;
        let o = self.gen_arg(a, Some(v.clone()))?;
        if !o.written {
            self.copy(&o.view, &v, &t)?;
        }
        Out::view(v)
    }

    /// What a `toX` wraps.
    fn wrapped(&self, a: &Arg) -> Wrapped {
        if let Arg::Node(n) = a {
            let (head, _) = self.p.spine(*n);
            match self.p.node(head) {
                Node::Prim(Prim::Map { kind, label }) => {
                    return Wrapped { name: map_name(*kind, label), label: Some(label.clone()) }
                }
                Node::Prim(p) => return Wrapped { name: p.name().to_string(), label: None },
                _ => {}
            }
        }
        Wrapped { name: "expression".into(), label: None }
    }

    /// `toLocal(a)` (`what`, at `head`) needs a work group: an enclosing `mapWrg`, or a `mapGlb`
    /// (whose implicit work group gives each work item its own scratch space, which a parallel
    /// map must not write).
    fn check_local(&self, head: NodeId, a: &Arg, what: &str) -> R<()> {
        if !self.loops.iter().any(|l| matches!(l.kind, LoopKind::Group(_) | LoopKind::Global(_))) {
            return Err(CodegenError::new(
                K::LocalMemory {
                    map: what.to_string(),
                    reason: "is outside any mapWrg or mapGlb: local memory belongs to a work group".into(),
                },
                self.span(head),
            ));
        }
        if !self.loops.iter().any(|l| matches!(l.kind, LoopKind::Group(_))) {
            // Inside a mapGlb the buffer is each work item's own scratch space: a parallel map
            // writing it would spread one work item's buffer over several.
            if let Some(inner) = self.parallel_map_in(a) {
                return Err(CodegenError::new(
                    K::LocalMemory {
                        map: what.to_string(),
                        reason: format!(
                            "is inside a mapGlb, where local memory is each work item's own scratch space, but \
                             `{inner}` writes it in parallel"
                        ),
                    },
                    self.span(head),
                ));
            }
        }
        Ok(())
    }

    /// The first parallel map (mapGlb, mapWrg, mapLcl) in an argument's expression.
    fn parallel_map_in(&self, a: &Arg) -> Option<String> {
        let Arg::Node(n) = a else { return None };
        let mut stack = vec![*n];
        while let Some(n) = stack.pop() {
            let node = self.p.node(n);
            if let Node::Prim(Prim::Map { kind: kind @ (MapKind::Glb(_) | MapKind::Wrg(_) | MapKind::Lcl(_)), label }) =
                node
            {
                return Some(map_name(*kind, label));
            }
            stack.extend(node.children());
        }
        None
    }

    /// A new buffer for a value of type `t`, with one copy per iteration of the enclosing parallel
    /// loops that share `space`. Local memory inside a `mapGlb` (only a kernel without work
    /// groups has one) gets one copy per work item of the implicit work group, indexed by the
    /// local id `g % local` (the global size is a multiple of the local size): the work item's
    /// own scratch space.
    pub(super) fn alloc(&mut self, space: Space, t: &Type, label: &str) -> R<View> {
        let (dims, elem) = dims_of(t)?;
        let (kind, width) = elem_of(&elem)?;
        let copies: Vec<(Index, i64)> = self
            .loops
            .iter()
            .filter_map(|l| match (space, l.kind) {
                (Space::Global, LoopKind::Global(_) | LoopKind::Group(_) | LoopKind::Local(_))
                | (Space::Local, LoopKind::Local(_)) => Some((Index::var(l.var), l.extent)),
                (Space::Local, LoopKind::Global(d)) => {
                    let ls = self.launch.local[d as usize];
                    Some((Index::var(l.var).rem(ls, &self.ranges), ls))
                }
                _ => None,
            })
            .collect();
        let mut all = copies.iter().map(|c| c.1).collect::<Vec<_>>();
        all.extend(dims);
        let prefix = match space {
            Space::Global => "tmp",
            Space::Local => "sh",
            Space::Private => {
                if all.is_empty() {
                    "v"
                } else {
                    "p"
                }
            }
        };
        let name = self.fresh(&format!("{prefix}_{label}"));
        let id = self.add_buf(Buffer {
            name,
            space,
            role: Role::Temp,
            kind,
            width,
            dims: all,
            param: None,
            by_value: false,
        });
        match space {
            Space::Global => self.args.push(id),
            Space::Local => self.locals.push(id),
            Space::Private => self.emit(Stmt::Decl(id, None)),
        }
        let mut v = View::Mem(id);
        for (ix, _) in copies {
            v = v.at(ix);
        }
        Ok(v)
    }

    /// Default destination of a map without one.
    pub(super) fn default_space(&self, kind: MapKind) -> Space {
        let in_thread = self.loops.iter().any(|l| matches!(l.kind, LoopKind::Global(_) | LoopKind::Local(_)));
        let in_group = self.loops.iter().any(|l| matches!(l.kind, LoopKind::Group(_)));
        match kind {
            MapKind::Glb(_) | MapKind::Wrg(_) => Space::Global,
            MapKind::Lcl(_) => Space::Local,
            _ if in_thread => Space::Private,
            _ if in_group => Space::Local,
            _ => Space::Global,
        }
    }

    /// A scalar `let` becomes a private variable, so that it is computed once.
    pub(super) fn materialize(&mut self, v: View, t: &Type, name: &str) -> R<View> {
        match (&v, t) {
            (View::Value(Expr::Lit(_)), _) => Ok(v),
            (View::Value(e), Type::Scalar(_) | Type::Vector(..)) => {
                let (kind, width) = elem_of(t)?;
                let name = self.fresh(name);
                let id = self.add_buf(Buffer {
                    name,
                    space: Space::Private,
                    role: Role::Temp,
                    kind,
                    width,
                    dims: vec![],
                    param: None,
                    by_value: false,
                });
                self.emit(Stmt::Decl(id, Some(e.clone())));
                Ok(View::Mem(id))
            }
            _ => Ok(v),
        }
    }

    /// Stores the vector `value` of type `t` lane by lane at `places` (computed once, into a
    /// private variable).
    fn store_lanes(&mut self, places: Vec<Place>, value: Expr, t: &Type) -> R<()> {
        let whole = match self.materialize(View::Value(value), t, "lanes")? {
            View::Mem(b) => b,
            _ => return Err(K::Internal("a scattered vector kept no variable".into()).into()),
        };
        for (j, p) in places.into_iter().enumerate() {
            self.note_write(p.buf);
            let lane = Place { buf: whole, index: Index::constant(0), width: 1, lane: Some(j as u32) };
            self.emit(Stmt::Store(p, Expr::Load(lane)));
        }
        Ok(())
    }

    /// Writes the value `src` of type `t` to `dst`, element by element.
    pub(super) fn copy(&mut self, src: &View, dst: &View, t: &Type) -> R<()> {
        match t {
            Type::Scalar(_) | Type::Vector(..) => {
                let value = self.read(src)?;
                let mut st = St::new();
                match self.resolve(dst, &mut st, true)? {
                    Resolved::Place(p) => {
                        self.note_write(p.buf);
                        self.emit(Stmt::Store(p, value));
                        Ok(())
                    }
                    Resolved::Lanes(places) => self.store_lanes(places, value, t),
                    Resolved::Value(_) => Err(K::Internal("write to a computed value".into()).into()),
                }
            }
            Type::Array(e, n) => {
                let n = konst(n)?;
                let var = self.new_var("c", n);
                let (body, ctx) = self.in_loop(LoopCtx::seq("copy", var, n), 1, |lw| {
                    lw.copy(&src.clone().at(Index::var(var)), &dst.clone().at(Index::var(var)), e)
                })?;
                self.emit(ctx.into_stmt(body));
                Ok(())
            }
            Type::Tuple(_) => Err(K::Unsupported(format!("storing a tuple of type {t}")).into()),
            Type::Fun(..) => Err(K::Unsupported("storing a function".into()).into()),
        }
    }

    /// Writes `src` to `dst` as [`Lower::copy`] does, where every thread of a work group would
    /// write all of it (a `mapWrg`'s function returning a view of what its work group computed,
    /// `pad(1, 1, 0.0, mapLcl(..))`): the copy's outer loops are handed out to the work group's
    /// threads instead, one dimension of the work group each. Faster, and pocl computed wrong
    /// results (and once corrupted the host's heap) with every thread copying all.
    pub(super) fn copy_shared(&mut self, src: &View, dst: &View, t: &Type) -> R<()> {
        let in_group = self.loops.iter().any(|l| matches!(l.kind, LoopKind::Group(_)));
        let own = self.loops.iter().any(|l| matches!(l.kind, LoopKind::Global(_) | LoopKind::Local(_)));
        let dims: Vec<u8> =
            if in_group && !own { (0..3u8).filter(|&d| self.launch.local[d as usize] > 1).collect() } else { vec![] };
        self.copy_spread(src, dst, t, &dims)
    }

    /// [`Lower::copy`] with its outer loops over the local threads of dimensions `dims`.
    fn copy_spread(&mut self, src: &View, dst: &View, t: &Type, dims: &[u8]) -> R<()> {
        let (Some((&d, rest)), Type::Array(e, n)) = (dims.split_first(), t) else {
            return self.copy(src, dst, t);
        };
        let n = konst(n)?;
        let var = self.new_var("c", n);
        let ctx = LoopCtx::spread(LoopKind::Local(d), "copy".into(), var, n, self.launch.local[d as usize]);
        let outer = std::mem::take(&mut self.written);
        let (body, ctx) = self.in_loop(ctx, 1, |lw| {
            lw.copy_spread(&src.clone().at(Index::var(var)), &dst.clone().at(Index::var(var)), e, rest)
        })?;
        let (kind, extent, stride) = (ctx.kind, ctx.extent, ctx.stride);
        self.emit(ctx.into_stmt(body));
        self.after_parallel_loop(ParallelLoop { kind, origin: "copy", var, extent, stride }, outer);
        Ok(())
    }

    /// A store to buffer `b`: shared buffers are remembered for the barrier analysis.
    fn note_write(&mut self, b: BufId) {
        let buf = &self.bufs[b.0];
        if buf.space != Space::Private && buf.role != Role::Input {
            self.written.insert(b);
        }
    }
}
