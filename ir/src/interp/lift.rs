//! Lifted evaluation of structural functions.
//!
//! `map(f, xs)` where `f` only rearranges its argument (`zip`, tuples and `get`, `split`,
//! `join`, `transpose`, `slide`, `pad`, `at`, nested maps of those) is computed by applying
//! each operation once to the whole of `xs`, one dimension deeper, instead of once per element:
//! `map(transpose, xs)` is a transpose of dimensions 1 and 2 of `xs`, which is a view. A value
//! "at level `l`" is an array whose `l` outer dimensions stand for the elements being mapped.

use super::eval::Interp;
use super::value::{tuple_at, Array, Fill, Func, Scalar, Value};
use crate::ast::{Node, NodeId, PadMode, Prim};
use crate::size::Size;
use std::sync::Arc;

/// Largest function body (in nodes) worth lifting.
const BUDGET: usize = 1024;

struct Lifter<'c, 'a> {
    it: &'c Interp<'a>,
    /// Values of the binders inside the function, innermost last, with their levels.
    env: Vec<(Arc<Array>, usize)>,
    budget: usize,
}

impl<'a> Lifter<'_, 'a> {
    fn node(&self, id: NodeId) -> Option<&'a Node> {
        let prog: &'a crate::ast::Program = self.it.prog;
        prog.nodes.get(id.index())
    }

    fn size(&self, s: &Size) -> Option<i64> {
        s.eval(self.it.sizes)
    }

    /// The value of node `id` at level `lv`, or `None` when it is not structural.
    fn lift(&mut self, id: NodeId, lv: usize) -> Option<Arc<Array>> {
        self.budget = self.budget.checked_sub(1)?;
        match self.node(id)? {
            Node::Var(k) => {
                let (v, l) = self.env.get(self.env.len().checked_sub(1 + *k as usize)?)?;
                (*l == lv).then(|| v.clone())
            }
            Node::Let(v, b) => {
                let (v, b) = (*v, *b);
                let x = self.lift(v, lv)?;
                self.env.push((x, lv));
                let r = self.lift(b, lv);
                self.env.pop();
                r
            }
            Node::App(..) => {
                let (head, args) = self.it.prog.spine(id);
                let Node::Prim(p) = self.node(head)? else { return None };
                if args.len() != p.arity() {
                    return None;
                }
                match p {
                    Prim::Map { .. } => {
                        let xs = self.lift(args[1], lv)?;
                        self.apply(args[0], xs, lv + 1)
                    }
                    Prim::Zip(_) | Prim::Tuple(_) => {
                        let d = if matches!(p, Prim::Zip(_)) { lv + 1 } else { lv };
                        let mut comps = Vec::with_capacity(args.len());
                        for a in &args {
                            comps.push(self.lift(*a, lv)?);
                        }
                        let refs: Vec<&Array> = comps.iter().map(|c| &**c).collect();
                        tuple_at(d, &refs).ok().map(Arc::new)
                    }
                    p if is_structural(p) => {
                        let x = self.lift(args[0], lv)?;
                        self.prim1(p, x, lv)
                    }
                    _ => None,
                }
            }
            Node::Param(_) | Node::Lit(_) | Node::Prim(_) | Node::Lam(..) => None,
        }
    }

    /// A one-argument structural primitive applied at level `lv`.
    fn prim1(&self, p: &Prim, x: Arc<Array>, lv: usize) -> Option<Arc<Array>> {
        let r = match p {
            Prim::Split(m) => x.split_at(lv, self.size(m)?),
            Prim::Join => x.join_at(lv),
            Prim::Transpose => x.transpose_at(lv),
            Prim::Slide(a, b) => x.slide_at(lv, self.size(a)?, self.size(b)?),
            Prim::Pad(l, r, mode) => {
                let fill = match mode {
                    PadMode::Constant(lit) => Fill::Const(Scalar::from_lit(*lit)),
                    PadMode::Clamp => Fill::Clamp,
                };
                x.pad_at(lv, self.size(l)?, self.size(r)?, fill)
            }
            Prim::At(i) => x.index_at(lv, usize::try_from(self.size(i)?).ok()?),
            Prim::AsVector(w) => x.as_vector_at(lv, w.lanes),
            Prim::AsScalar => x.as_scalar_at(lv),
            Prim::Get(i) => return x.get_at(lv, *i as usize).map(Arc::new),
            Prim::To(_) => return Some(x),
            _ => return None,
        };
        r.ok().map(Arc::new)
    }

    /// The function at node `f` applied at level `lv` to `x` (whose dimension `lv - 1` holds
    /// the elements).
    fn apply(&mut self, f: NodeId, x: Arc<Array>, lv: usize) -> Option<Arc<Array>> {
        if x.dims.len() < lv {
            return None;
        }
        match self.node(f)? {
            Node::Lam(b, _) => {
                let b = *b;
                self.env.push((x, lv));
                let r = self.lift(b, lv);
                self.env.pop();
                r
            }
            Node::Prim(p) if p.arity() == 1 && is_structural(p) => self.prim1(p, x, lv),
            Node::App(..) => {
                let (head, args) = self.it.prog.spine(f);
                match self.node(head)? {
                    Node::Prim(Prim::Map { .. }) if args.len() == 1 => self.apply(args[0], x, lv + 1),
                    // `toLocal(mapLcl(f))` and the like: the address space changes nothing.
                    Node::Prim(Prim::To(_)) if args.len() == 1 => self.apply(args[0], x, lv),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    fn apply_value(&mut self, f: &Value, x: Arc<Array>, lv: usize) -> Option<Arc<Array>> {
        let Value::Func(func) = f else { return None };
        match &**func {
            // The closure's own environment is out of reach: a body using it is not lifted.
            Func::Closure { lam, .. } => self.apply(*lam, x, lv),
            Func::Partial { prim, args } => match (self.node(*prim)?, args.as_slice()) {
                (Node::Prim(Prim::Map { .. }), [g]) => self.apply_value(g, x, lv + 1),
                (Node::Prim(_), []) => self.apply(*prim, x, lv),
                _ => None,
            },
        }
    }
}

/// The primitives applied to a whole array at once: the layout primitives
/// ([`Prim::is_layout`]), and `toX` (an address space changes no value). `zip` and tuples are
/// lifted on their own (they take several arguments).
fn is_structural(p: &Prim) -> bool {
    p.is_layout() || matches!(p, Prim::To(_))
}

/// `map(f, xs)` by lifting `f`, when it is structural.
pub(crate) fn try_map(it: &Interp<'_>, f: &Value, xs: &Arc<Array>) -> Option<Value> {
    let mut l = Lifter { it, env: Vec::new(), budget: BUDGET };
    let r = l.apply_value(f, xs.clone(), 1)?;
    (r.dims.first() == xs.dims.first()).then_some(Value::Array(r))
}
