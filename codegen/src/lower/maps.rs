//! Loops: a mapped `map` becomes a loop over its indices, run by the threads its kind names
//! (`mapGlb`, `mapWrg`, `mapLcl`: a stride loop over global, group or local ids; `mapSeq`,
//! `mapVec`: a sequential or unrolled loop in one thread), and `reduceSeq` a sequential loop
//! folding into a private accumulator. An unlabelled `map` of a layout function is a view
//! instead ([`super::layout`]).

use super::barrier::ParallelLoop;
use super::expr::{Arg, Out};
use super::names::map_name;
use super::types::{array_len, dims_of, elem_of};
use super::view::View;
use super::{Lower, R};
use crate::error::{CodegenError, CodegenErrorKind as K};
use crate::index::Index;
use crate::kir::*;
use mapsat_ir::ast::{MapKind, Node, NodeId};
use mapsat_ir::Type;

/// A loop being lowered.
pub(super) struct LoopCtx {
    /// How its indices are distributed.
    pub(super) kind: LoopKind,
    /// What it came from (`mapGlb(0)@A`, `reduceSeq`, `copy`).
    pub(super) origin: String,
    /// Its variable.
    pub(super) var: VarId,
    /// Number of indices.
    pub(super) extent: i64,
    /// Stride between a thread's indices.
    pub(super) stride: i64,
    /// Iterations per thread.
    pub(super) trips: Trips,
    /// Why threads of a work group run this loop a different number of times.
    pub(super) divergent: Option<String>,
}

impl LoopCtx {
    /// A sequential loop of `extent` iterations.
    pub(super) fn seq(origin: &str, var: VarId, extent: i64) -> LoopCtx {
        LoopCtx {
            kind: LoopKind::Seq,
            origin: origin.into(),
            var,
            extent,
            stride: 1,
            trips: Trips::Loop,
            divergent: None,
        }
    }

    /// A loop of `extent` iterations of kind `kind`, `stride` apart for each thread: how many
    /// each thread runs, and whether the threads of a work group run it a different number of
    /// times.
    pub(super) fn spread(kind: LoopKind, origin: String, var: VarId, extent: i64, stride: i64) -> LoopCtx {
        let trips = if matches!(kind, LoopKind::Seq | LoopKind::Vec) {
            Trips::Loop
        } else if stride == extent {
            Trips::One
        } else if stride > extent {
            Trips::AtMostOne
        } else {
            Trips::Loop
        };
        let divergent = match (kind, trips) {
            (LoopKind::Local(_) | LoopKind::Global(_), Trips::AtMostOne) => {
                Some(format!("{extent} iterations over {stride} threads"))
            }
            (LoopKind::Local(_) | LoopKind::Global(_), Trips::Loop) if extent % stride != 0 => {
                Some(format!("{extent} iterations over {stride} threads"))
            }
            _ => None,
        };
        LoopCtx { kind, origin, var, extent, stride, trips, divergent }
    }

    /// The loop statement with its body.
    pub(super) fn into_stmt(self, body: Vec<Stmt>) -> Stmt {
        let LoopCtx { kind, origin, var, extent, stride, trips, .. } = self;
        Stmt::Loop { var, kind, extent, stride, trips, origin, body }
    }
}

impl Lower<'_> {
    /// `map(f, xs)`: a view when it is abstract and `f` only reorganizes data, a loop when it is
    /// mapped, an error otherwise.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn map(
        &mut self,
        head: NodeId,
        kind: MapKind,
        label: &str,
        f: &Arg,
        xs: &Arg,
        xs_ty: &Type,
        res: &Type,
        dest: Option<View>,
    ) -> R<Out> {
        let name = map_name(kind, label);
        let span = self.span(head);
        if kind == MapKind::Abstract && self.layout_only(f) {
            self.lowered(label, MapLowering::View);
            return self.layout_map(f, xs, dest);
        }
        if kind == MapKind::Abstract {
            return Err(CodegenError::new(
                K::Unmapped {
                    map: name,
                    reason: "choose mapSeq, mapGlb(d), mapWrg(d), mapLcl(d) or mapVec before code generation".into(),
                },
                span,
            ));
        }
        self.check_nesting(kind, &name, span)?;
        let xs_v = self.data(xs)?;
        let (extent, _) = array_len(xs_ty)?;
        let (_, out_elem) = array_len(res)?;
        let (out, written) = match dest {
            Some(d) => (d, true),
            None => {
                let space = self.default_space(kind);
                (self.alloc(space, res, label)?, false)
            }
        };
        let ctx = self.map_loop(kind, f, extent, name);
        let var = ctx.var;
        let parallel = !matches!(ctx.kind, LoopKind::Seq | LoopKind::Vec);
        let saved_written = if parallel { Some(std::mem::take(&mut self.written)) } else { None };
        let slots_before = self.slots.len();
        let (mut body, ctx) = self.in_loop(ctx, extent as u64, |lw| {
            let elem = xs_v.at(Index::var(var));
            let d = out.clone().at(Index::var(var));
            let o = lw.apply(f, vec![elem], Some(d.clone()))?;
            if !o.written {
                lw.copy_shared(&o.view, &d, &out_elem)?;
            }
            Ok(())
        })?;
        self.iteration_barrier(&ctx, &mut body, slots_before, span)?;
        let (lkind, origin, extent, stride) = (ctx.kind, ctx.origin.clone(), ctx.extent, ctx.stride);
        self.emit(ctx.into_stmt(body));
        self.lowered(label, MapLowering::Loop(lkind));
        if let Some(saved) = saved_written {
            self.after_parallel_loop(ParallelLoop { kind: lkind, origin: &origin, var, extent, stride }, saved);
        }
        Ok(Out { view: out, written })
    }

    /// The loop of a mapped map of function `f` over `extent` indices: the threads that run it,
    /// their stride, the trips of each, whether the threads of a work group run it a different
    /// number of times, and its variable.
    fn map_loop(&mut self, kind: MapKind, f: &Arg, extent: i64, origin: String) -> LoopCtx {
        let (lkind, stride) = match kind {
            MapKind::Glb(d) => (LoopKind::Global(d), self.launch.global[d as usize]),
            MapKind::Wrg(d) => (LoopKind::Group(d), self.launch.global[d as usize] / self.launch.local[d as usize]),
            MapKind::Lcl(d) => (LoopKind::Local(d), self.launch.local[d as usize]),
            MapKind::Vec => (LoopKind::Vec, 1),
            _ => (LoopKind::Seq, 1),
        };
        let var = self.loop_var(f, lkind, extent);
        LoopCtx::spread(lkind, origin, var, extent, stride)
    }

    /// The variable of a map's loop: named after the function's binder (`i_x`), else after the
    /// thread id it stands for (`g0`, `wg0`, `l0`), else `i`.
    fn loop_var(&mut self, f: &Arg, kind: LoopKind, extent: i64) -> VarId {
        let binder = match f {
            Arg::Node(n) => match self.p.node(*n) {
                Node::Lam(..) => self.p.meta.get(n.index()).and_then(|m| m.binder.clone()),
                _ => None,
            },
            _ => None,
        };
        let base = match (kind, &binder) {
            (_, Some(b)) => format!("i_{b}"),
            (LoopKind::Global(d), None) => format!("g{d}"),
            (LoopKind::Group(d), None) => format!("wg{d}"),
            (LoopKind::Local(d), None) => format!("l{d}"),
            _ => "i".into(),
        };
        self.new_var(&base, extent)
    }

    /// Records how map `label` was lowered.
    pub(super) fn lowered(&mut self, label: &str, how: MapLowering) {
        if !self.maps.iter().any(|(l, h)| l == label && *h == how) {
            self.maps.push((label.to_string(), how));
        }
    }

    /// A fresh loop variable ranging over `0..extent`, named after `base`.
    pub(super) fn new_var(&mut self, base: &str, extent: i64) -> VarId {
        let var = VarId(self.vars.len() as u32);
        let name = self.fresh(base);
        self.vars.push(name);
        self.ranges.set(var, 0, extent - 1);
        var
    }

    /// Runs `body` inside loop `ctx` (innermost on the loop stack, in a statement block of its
    /// own, each thread running it `trips` times more often) and returns the block with the
    /// loop, once the loop is closed again.
    pub(super) fn in_loop(
        &mut self,
        ctx: LoopCtx,
        trips: u64,
        body: impl FnOnce(&mut Self) -> R<()>,
    ) -> R<(Vec<Stmt>, LoopCtx)> {
        self.loops.push(ctx);
        self.blocks.push(Vec::new());
        let saved_mult = self.mult;
        self.mult = self.mult.saturating_mul(trips);
        let r = body(self);
        self.mult = saved_mult;
        let stmts = self.blocks.pop().unwrap_or_default();
        let ctx = self.loops.pop();
        r?;
        let ctx = ctx.ok_or_else(|| CodegenError::from(K::Internal("loop stack underflow".into())))?;
        Ok((stmts, ctx))
    }

    /// `reduceSeq(f, init, xs)`: a private accumulator initialized to `init`, folded over `xs` by
    /// a sequential loop, then written to the destination if there is one.
    pub(super) fn reduce(
        &mut self,
        f: &Arg,
        init: &Arg,
        xs: &Arg,
        xs_ty: &Type,
        acc_ty: &Type,
        dest: Option<View>,
    ) -> R<Out> {
        let init_v = self.data(init)?;
        let xs_v = self.data(xs)?;
        let (extent, _) = array_len(xs_ty)?;
        if let (Type::Tuple(parts), None) = (acc_ty, &dest) {
            if parts.iter().all(|t| matches!(t, Type::Scalar(_) | Type::Vector(..))) {
                return self.reduce_tuple(f, init_v, xs_v, extent, parts);
            }
        }
        let (dims, elem) = dims_of(acc_ty)?;
        let (kind, width) = elem_of(&elem)?;
        let name = self.fresh("acc");
        let acc = self.add_buf(Buffer {
            name,
            space: Space::Private,
            role: Role::Temp,
            kind,
            width,
            dims,
            param: None,
            by_value: false,
        });
        let accv = View::Mem(acc);
        if matches!(acc_ty, Type::Array(..)) {
            self.emit(Stmt::Decl(acc, None));
            self.copy(&init_v, &accv, acc_ty)?;
        } else {
            let e = self.read(&init_v)?;
            self.emit(Stmt::Decl(acc, Some(e)));
        }
        let var = self.new_var("i", extent);
        let ctx = LoopCtx::seq("reduceSeq", var, extent);
        let (body, ctx) = self.in_loop(ctx, extent as u64, |lw| {
            let elem = xs_v.at(Index::var(var));
            let o = lw.apply(f, vec![accv.clone(), elem], Some(accv.clone()))?;
            if !o.written {
                lw.copy(&o.view, &accv, acc_ty)?;
            }
            Ok(())
        })?;
        self.emit(ctx.into_stmt(body));
        match dest {
            Some(d) => {
                self.copy(&accv, &d, acc_ty)?;
                Ok(Out { view: d, written: true })
            }
            None => Out::view(accv),
        }
    }

    /// `reduceSeq` with a tuple of scalars or vectors as its accumulator (a sum and a maximum,
    /// `(acc.0 + x, max(acc.1, x))`): one private variable per part. Each step computes every
    /// part from the old values into variables of its own before any part is stored (a part
    /// may read another: `(acc.0 + x, acc.1 + acc.0 * x)`).
    fn reduce_tuple(&mut self, f: &Arg, init: View, xs: View, extent: i64, parts: &[Type]) -> R<Out> {
        let mut accs = Vec::with_capacity(parts.len());
        for (k, t) in parts.iter().enumerate() {
            let (kind, width) = elem_of(t)?;
            let e = self.read(&View::Get(k as u32, Box::new(init.clone())))?;
            let name = self.fresh("acc");
            let b = Buffer {
                name,
                space: Space::Private,
                role: Role::Temp,
                kind,
                width,
                dims: vec![],
                param: None,
                by_value: false,
            };
            let acc = self.add_buf(b);
            self.emit(Stmt::Decl(acc, Some(e)));
            accs.push(acc);
        }
        let accv = View::Tuple(accs.iter().map(|a| View::Mem(*a)).collect());
        let var = self.new_var("i", extent);
        let ctx = LoopCtx::seq("reduceSeq", var, extent);
        let (body, ctx) = self.in_loop(ctx, extent as u64, |lw| {
            let o = lw.apply(f, vec![accv.clone(), xs.at(Index::var(var))], None)?;
            let mut next = Vec::with_capacity(parts.len());
            for (k, t) in parts.iter().enumerate() {
                let e = lw.read(&View::Get(k as u32, Box::new(o.view.clone())))?;
                next.push(lw.materialize(View::Value(e), t, "next")?);
            }
            for ((acc, v), t) in accs.iter().zip(next).zip(parts) {
                lw.copy(&v, &View::Mem(*acc), t)?;
            }
            Ok(())
        })?;
        self.emit(ctx.into_stmt(body));
        Out::view(accv)
    }
}
