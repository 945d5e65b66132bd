//! Expressions: the walk over the program's application spines. A node is lowered to a view
//! (see [`super::view`]), or, given a destination view, writes its value there (maps, reduces
//! and the layout primitives around them); scalar primitives build kernel-IR expressions.

use super::types::signature;
use super::view::{St, View};
use super::{Lower, R};
use crate::error::{CodegenError, CodegenErrorKind as K};
use crate::kir::*;
use mapsat_ir::ast::{Node, NodeId, Prim};
use mapsat_ir::{ScalarKind, Type};

/// The result of lowering an expression.
pub(super) struct Out {
    /// The value.
    pub(super) view: View,
    /// True when the value was written to the destination that was passed in.
    pub(super) written: bool,
}

impl Out {
    /// A value not written to a destination.
    pub(super) fn view(view: View) -> R<Out> {
        Ok(Out { view, written: false })
    }
}

/// An argument of a primitive: a node still to lower, or a value already lowered.
#[derive(Clone)]
pub(super) enum Arg {
    /// A node of the program.
    Node(NodeId),
    /// A lowered value.
    View(View),
}

/// Argument `k`'s type in the signature of `prim`.
pub(super) fn nth_ty(prim: &Prim, arg_tys: &[Type], k: usize) -> R<Type> {
    arg_tys.get(k).cloned().ok_or_else(|| K::Internal(format!("missing argument type of `{}`", prim.name())).into())
}

impl Lower<'_> {
    /// Lowers node `e` applied to the values `extra` (after its own arguments), writing the result
    /// to `dest` where it can.
    pub(super) fn gen(&mut self, e: NodeId, extra: Vec<View>, dest: Option<View>) -> R<Out> {
        let (head, nargs) = self.p.spine(e);
        let mut args: Vec<Arg> = nargs.into_iter().map(Arg::Node).collect();
        args.extend(extra.into_iter().map(Arg::View));
        match self.p.node(head).clone() {
            Node::Param(i) => {
                let b = self.params.get(i as usize).copied().flatten();
                match b {
                    Some(b) if args.is_empty() => Out::view(View::Mem(b)),
                    _ => Err(K::Internal(format!("bad use of parameter {i}")).into()),
                }
            }
            Node::Var(k) => {
                let k = k as usize;
                match self.env.len().checked_sub(k + 1).and_then(|i| self.env.get(i)) {
                    Some(v) if args.is_empty() => Out::view(v.clone()),
                    _ => Err(K::Internal(format!("bad variable {k}")).into()),
                }
            }
            Node::Lit(l) => Out::view(View::Value(Expr::Lit(l))),
            Node::Lam(body, _) => {
                if let (Some(d), [a]) = (&dest, &args[..]) {
                    if let Some(ops) = self.inverse_of_body(body)? {
                        return self.through_inverse(a, ops, d.clone(), body);
                    }
                }
                let mut vals = Vec::new();
                for a in &args {
                    vals.push(self.data(a)?);
                }
                if vals.is_empty() {
                    return Err(CodegenError::new(
                        K::Unsupported("a function used as a value".into()),
                        self.span(head),
                    ));
                }
                let first = vals.remove(0);
                self.env.push(first);
                let r = self.gen(body, vals, dest);
                self.env.pop();
                r
            }
            Node::Let(v, b) => {
                if let (Some(d), true) = (&dest, args.is_empty()) {
                    if let Some(ops) = self.inverse_of_body(b)? {
                        return self.through_inverse(&Arg::Node(v), ops, d.clone(), b);
                    }
                }
                let mut vals = Vec::new();
                for a in &args {
                    vals.push(self.data(a)?);
                }
                let val = self.gen(v, Vec::new(), None)?.view;
                let vt = self.ty(v)?;
                let binder = self.p.meta.get(head.index()).and_then(|m| m.binder.clone()).unwrap_or_else(|| "t".into());
                let val = self.materialize(val, &vt, &binder)?;
                self.env.push(val);
                let r = self.gen(b, vals, dest);
                self.env.pop();
                r
            }
            Node::Prim(prim) => self.prim(head, &prim, args, dest),
            Node::App(..) => Err(K::Internal("spine head is an application".into()).into()),
        }
    }

    /// The value of an argument.
    pub(super) fn data(&mut self, a: &Arg) -> R<View> {
        match a {
            Arg::Node(n) => Ok(self.gen(*n, Vec::new(), None)?.view),
            Arg::View(v) => Ok(v.clone()),
        }
    }

    /// An argument lowered with a destination.
    pub(super) fn gen_arg(&mut self, a: &Arg, dest: Option<View>) -> R<Out> {
        match a {
            Arg::Node(n) => self.gen(*n, Vec::new(), dest),
            Arg::View(v) => Out::view(v.clone()),
        }
    }

    /// A function argument applied to values.
    pub(super) fn apply(&mut self, f: &Arg, args: Vec<View>, dest: Option<View>) -> R<Out> {
        match f {
            Arg::Node(n) => self.gen(*n, args, dest),
            Arg::View(_) => Err(K::Internal("a value used as a function".into()).into()),
        }
    }

    /// The value of a view as an expression (a load, or the computed value).
    pub(super) fn read(&mut self, v: &View) -> R<Expr> {
        let mut st = St::new();
        self.resolve(v, &mut st, false)?.into_expr()
    }

    /// Counts the floating-point operations of one scalar operation of result type `t`, times
    /// the trips of the enclosing loops.
    fn count_flops(&mut self, t: &Type) {
        let w = match t {
            Type::Scalar(ScalarKind::F32) => 1,
            Type::Vector(ScalarKind::F32, w) => *w as u64,
            _ => 0,
        };
        self.flops = self.flops.saturating_add(self.mult.saturating_mul(w));
    }

    /// A primitive applied to all its arguments.
    fn prim(&mut self, head: NodeId, prim: &Prim, args: Vec<Arg>, dest: Option<View>) -> R<Out> {
        if args.len() != prim.arity() {
            return Err(K::Internal(format!("`{}` with {} arguments", prim.name(), args.len())).into());
        }
        let (arg_tys, res) = signature(&self.ty(head)?);
        let arg_ty = |k: usize| nth_ty(prim, &arg_tys, k);
        match prim {
            Prim::Map { kind, label } => self.map(head, *kind, label, &args[0], &args[1], &arg_ty(1)?, &res, dest),
            Prim::Reduce { seq } => {
                if !*seq {
                    return Err(CodegenError::new(
                        K::Unmapped { map: "reduce".into(), reason: "use reduceSeq".into() },
                        self.span(head),
                    ));
                }
                self.reduce(&args[0], &args[1], &args[2], &arg_ty(2)?, &res, dest)
            }
            Prim::To(space) => self.to(head, *space, &args[0], dest),
            Prim::Bin(_) | Prim::Un(_) | Prim::Select | Prim::Cast(_) | Prim::VectorFromScalar(_) => {
                self.scalar_prim(prim, &args, &res)
            }
            // Every other primitive is a layout primitive (`Prim::is_layout`).
            _ => self.layout_prim(prim, &args, &arg_tys, &res, dest),
        }
    }

    /// A scalar operation: an expression of the values of its arguments.
    fn scalar_prim(&mut self, prim: &Prim, args: &[Arg], res: &Type) -> R<Out> {
        match prim {
            Prim::Bin(op) => {
                let a = self.data(&args[0])?;
                let b = self.data(&args[1])?;
                let (a, b) = (self.read(&a)?, self.read(&b)?);
                if !op.is_comparison() && !op.is_logical() {
                    self.count_flops(res);
                }
                Out::view(View::Value(Expr::Bin(*op, Box::new(a), Box::new(b))))
            }
            Prim::Un(op) => {
                let a = self.data(&args[0])?;
                let a = self.read(&a)?;
                self.count_flops(res);
                Out::view(View::Value(Expr::Un(*op, Box::new(a))))
            }
            Prim::Select => {
                let c = self.data(&args[0])?;
                let c = self.read(&c)?;
                let a = self.data(&args[1])?;
                let b = self.data(&args[2])?;
                Out::view(self.select(&c, a, b, res)?)
            }
            Prim::Cast(k) => {
                let a = self.data(&args[0])?;
                let a = self.read(&a)?;
                Out::view(View::Value(Expr::Cast(*k, Box::new(a))))
            }
            Prim::VectorFromScalar(w) => {
                let a = self.data(&args[0])?;
                let a = self.read(&a)?;
                Out::view(View::Value(Expr::Splat(Box::new(a), w.lanes)))
            }
            _ => Err(K::Internal(format!("`{}` is not a scalar operation", prim.name())).into()),
        }
    }

    /// `select(c, a, b)` of values of type `ty`: of scalars and vectors a C select, of tuples of
    /// them one select per part (an argmax's `select(p.0 > acc.0, p, acc)`).
    fn select(&mut self, c: &Expr, a: View, b: View, ty: &Type) -> R<View> {
        match ty {
            Type::Scalar(_) | Type::Vector(..) => {
                let (a, b) = (self.read(&a)?, self.read(&b)?);
                Ok(View::Value(Expr::Select(Box::new(c.clone()), Box::new(a), Box::new(b))))
            }
            Type::Tuple(parts) => {
                let mut out = Vec::with_capacity(parts.len());
                for (k, t) in parts.iter().enumerate() {
                    let part = |v: &View| View::Get(k as u32, Box::new(v.clone()));
                    out.push(self.select(c, part(&a), part(&b), t)?);
                }
                Ok(View::Tuple(out))
            }
            _ => Err(K::Unsupported(format!(
                "`select` of values of type {ty}: kernels select scalars, vectors and tuples of them only (select each element instead: a map over a zip of the arrays)"
            ))
            .into()),
        }
    }
}
