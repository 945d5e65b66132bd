//! Layout maps: an unlabelled `map` whose function only reorganizes data (the maps inside
//! `padND2`, `slideND2`, `zipND3`, or `map(join)`) is a view too: element `i` is `f(xs[i])`,
//! lowered when an access reaches it; written to, it passes its destination through the inverse
//! of `f` (`join`/`split`/`transpose`/`asVector`/`asScalar` chains).

use super::expr::{Arg, Out};
use super::types::{array_len, signature};
use super::view::{InvOp, View};
use super::{Lower, R};
use crate::error::CodegenErrorKind as K;
use crate::kir::MapLowering;
use mapsat_ir::ast::{MapKind, Node, NodeId, Prim};
use mapsat_ir::Type;

impl Lower<'_> {
    /// True when `f` only reorganizes data (layout primitives, [`Prim::is_layout`], and nested
    /// unmapped maps of such functions): `map(f, xs)` is then a view, with nothing to compute or
    /// to map onto threads. The constraint analysis classifies maps the same way, so the maps
    /// it leaves unmapped (its layout maps) are lowered here.
    pub(super) fn layout_only(&self, f: &Arg) -> bool {
        let Arg::Node(n) = f else { return false };
        let mut todo = vec![*n];
        while let Some(n) = todo.pop() {
            match self.p.node(n) {
                Node::Var(_) | Node::Param(_) => {}
                Node::Lam(b, _) => todo.push(*b),
                Node::App(a, b) => todo.extend([*a, *b]),
                Node::Prim(p) if p.is_layout() => {}
                Node::Prim(Prim::Map { kind: MapKind::Abstract, .. }) => {}
                _ => return false,
            }
        }
        true
    }

    /// `map(f, xs)` with a layout-only `f`: a lazy view of `xs`. With a destination, `xs` writes
    /// through the inverse of `f` when `f` is invertible (`join`, `split`, `transpose`, ...).
    pub(super) fn layout_map(&mut self, f: &Arg, xs: &Arg, dest: Option<View>) -> R<Out> {
        let Arg::Node(fnode) = f else { return Err(K::Internal("layout map of a value".into()).into()) };
        let inv = match &dest {
            Some(_) => self.inverse(*fnode)?,
            None => None,
        };
        let o = match (inv, dest) {
            (Some(inv), Some(d)) => self.gen_arg(xs, Some(View::MapInv { inv, inner: Box::new(d) }))?,
            _ => self.gen_arg(xs, None)?,
        };
        Ok(Out { view: View::MapF { f: *fnode, env: self.env.clone(), inner: Box::new(o.view) }, written: o.written })
    }

    /// The inverse of a layout function made of `join`, `split`, `transpose`, `asVector`,
    /// `asScalar` and `map` of such steps (a bare primitive or a lambda applying a chain of them to its parameter),
    /// as steps applied to a destination; `None` when it has no such inverse.
    fn inverse(&mut self, f: NodeId) -> R<Option<Vec<InvOp>>> {
        match self.p.node(f) {
            Node::Lam(b, _) => self.inverse_of_body(*b),
            _ => Ok(self.inverse_step(f)?.map(|op| vec![op])),
        }
    }

    /// The inverse of a function's body `b` as a function of its variable 0: a chain of
    /// invertible layout steps applied to it (`None` otherwise).
    pub(super) fn inverse_of_body(&mut self, b: NodeId) -> R<Option<Vec<InvOp>>> {
        let mut ops = Vec::new();
        let mut cur = b;
        loop {
            match self.p.node(cur) {
                Node::Var(0) => return Ok(Some(ops)),
                // A step, or a lambda applied (`fun(y => map(asScalar, transpose(y)))(map(join,
                // x))`, as the rewrite stage leaves one): its body's chain of its own variable.
                Node::App(g, x) => {
                    let steps = match self.p.node(*g) {
                        Node::Lam(inner, _) => self.inverse_of_body(*inner)?,
                        _ => self.inverse_step(*g)?.map(|op| vec![op]),
                    };
                    match steps {
                        Some(steps) => {
                            ops.extend(steps);
                            cur = *x;
                        }
                        None => return Ok(None),
                    }
                }
                _ => return Ok(None),
            }
        }
    }

    /// `body` applied to the value of `arg` (a `let`, or a lambda applied to it) where `body` is
    /// a chain of invertible layout steps of its variable with inverse `ops`: `arg` writes
    /// straight into `dest` through the inverse (instead of into a temporary that the layout
    /// reads back, possibly across work groups), and `body` is a view of it.
    pub(super) fn through_inverse(&mut self, arg: &Arg, ops: Vec<InvOp>, dest: View, body: NodeId) -> R<Out> {
        let d = ops.into_iter().fold(dest, |d, op| op.apply(d));
        let o = self.gen_arg(arg, Some(d))?;
        self.env.push(o.view);
        let r = self.gen(body, Vec::new(), None);
        self.env.pop();
        Ok(Out { view: r?.view, written: o.written })
    }

    /// The inverse of one layout primitive `g`, or of an unmapped `map(h)` of an invertible
    /// layout function `h` (the inverse of `h` on each element), if it has one.
    fn inverse_step(&mut self, g: NodeId) -> R<Option<InvOp>> {
        if let Node::App(m, h) = self.p.node(g) {
            if let Node::Prim(Prim::Map { kind: MapKind::Abstract, label }) = self.p.node(*m) {
                let inv = self.inverse(*h)?;
                if inv.is_some() {
                    self.lowered(label, MapLowering::View);
                }
                return Ok(inv.map(InvOp::Map));
            }
        }
        let Node::Prim(prim) = self.p.node(g) else { return Ok(None) };
        let (args, res) = signature(&self.ty(g)?);
        let Some(arg) = args.first() else { return Ok(None) };
        Ok(match prim {
            Prim::Join => Some(InvOp::Split(array_len(&array_len(arg)?.1)?.0)),
            Prim::Split(_) => Some(InvOp::Join(array_len(&array_len(&res)?.1)?.0)),
            Prim::Transpose => Some(InvOp::Transpose),
            Prim::AsVector(w) => Some(InvOp::AsScalar(w.lanes)),
            Prim::AsScalar => match array_len(arg)?.1 {
                Type::Vector(_, w) => Some(InvOp::AsVector(w)),
                _ => None,
            },
            _ => None,
        })
    }
}
