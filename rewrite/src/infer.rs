//! Types of e-classes, computed node by node from the children's types.
//!
//! An e-class's type does not depend on its context because variables carry their types
//! ([`crate::lang::Lift::Var`]). Primitives are polymorphic, so a partial application is kept as
//! the primitive and the types of its arguments so far ([`Ty::Partial`]) until it is saturated.
//! What cannot be inferred here is `Unknown`; merging with a class whose type is known (every
//! rule's result is merged with the class it rewrites) fills it in.

use mapsat_ir::ast::{Lit, Prim};
use mapsat_ir::{Size, Type};

/// What is known of an e-class's type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    /// Nothing.
    Unknown,
    /// A value or function type.
    Known(Type),
    /// A lambda whose result type is known (its parameter's may not be).
    Returns(Box<Ty>),
    /// A primitive applied to fewer arguments than its arity.
    Partial(Prim, Vec<Ty>),
}

impl Ty {
    /// The type, when fully known.
    pub fn known(&self) -> Option<&Type> {
        match self {
            Ty::Known(t) => Some(t),
            _ => None,
        }
    }

    /// How much is known (used to keep the better of two on merge). A partial application of a
    /// primitive ranks above a function type: the primitive is polymorphic, and its class may be
    /// used at several types (`join` on rows of 3 and of 9), which only the primitive's own rule
    /// ([`apply`]) gets right; a function type from one use would be wrong at the others.
    pub fn rank(&self) -> u8 {
        match self {
            Ty::Unknown => 0,
            Ty::Returns(_) => 1,
            Ty::Known(Type::Fun(..)) => 2,
            Ty::Partial(..) => 3,
            Ty::Known(_) => 4,
        }
    }

    /// The array's length and element type.
    pub fn array(&self) -> Option<(&Type, &Size)> {
        self.known().and_then(Type::as_array)
    }

    /// Number of array dimensions of a value type (0 for scalars and functions).
    pub fn rank_of(t: &Type) -> usize {
        match t {
            Type::Array(e, _) => 1 + Ty::rank_of(e),
            _ => 0,
        }
    }
}

/// The type of a literal.
pub fn lit(l: Lit) -> Ty {
    Ty::Known(Type::Scalar(l.kind()))
}

/// The type of a primitive with no argument yet.
pub fn prim(p: &Prim) -> Ty {
    Ty::Partial(p.clone(), Vec::new())
}

/// The type of `f a`.
pub fn apply(f: &Ty, a: &Ty) -> Ty {
    match f {
        Ty::Known(Type::Fun(_, r)) => Ty::Known((**r).clone()),
        Ty::Returns(r) => (**r).clone(),
        Ty::Partial(p, args) => {
            let mut args = args.clone();
            args.push(a.clone());
            if args.len() < p.arity() {
                Ty::Partial(p.clone(), args)
            } else {
                saturated(p, &args).map_or(Ty::Unknown, Ty::Known)
            }
        }
        Ty::Known(_) | Ty::Unknown => Ty::Unknown,
    }
}

/// The type of a lambda with this body.
pub fn lam(param: Option<&Type>, body: &Ty) -> Ty {
    match (param, body) {
        (Some(p), Ty::Known(b)) => Ty::Known(Type::fun(p.clone(), b.clone())),
        (_, Ty::Unknown) => Ty::Unknown,
        (_, b) => Ty::Returns(Box::new(b.clone())),
    }
}

fn arr(t: &Ty) -> Option<(Type, Size)> {
    t.array().map(|(e, n)| (e.clone(), n.clone()))
}

/// The result type of a primitive applied to all its arguments.
fn saturated(p: &Prim, args: &[Ty]) -> Option<Type> {
    match p {
        Prim::Map { .. } => {
            let (e, n) = arr(&args[1])?;
            let r = apply(&args[0], &Ty::Known(e));
            Some(Type::array(r.known()?.clone(), n))
        }
        Prim::Reduce { .. } => args[1].known().cloned(),
        Prim::Zip(_) => {
            let mut elems = Vec::new();
            let (_, n) = arr(&args[0])?;
            for a in args {
                elems.push(arr(a)?.0);
            }
            Some(Type::array(Type::Tuple(elems), n))
        }
        Prim::Split(m) => {
            let (e, n) = arr(&args[0])?;
            Some(Type::array(Type::array(e, m.clone()), n.div(m)))
        }
        Prim::Join => {
            let (e, n) = arr(&args[0])?;
            let (e2, m) = e.as_array()?;
            Some(Type::array(e2.clone(), n.mul(m)))
        }
        Prim::Transpose => {
            let (e, n) = arr(&args[0])?;
            let (e2, m) = e.as_array()?;
            Some(Type::array(Type::array(e2.clone(), n), m.clone()))
        }
        Prim::Slide(size, step) => {
            let (e, n) = arr(&args[0])?;
            let len = n.sub(size).div(step).add(&Size::constant(1));
            Some(Type::array(Type::array(e, size.clone()), len))
        }
        Prim::Pad(l, r, _) => {
            let (e, n) = arr(&args[0])?;
            Some(Type::array(e, l.add(&n).add(r)))
        }
        Prim::At(_) => arr(&args[0]).map(|(e, _)| e),
        Prim::Get(i) => match args[0].known()? {
            Type::Tuple(ts) => ts.get(*i as usize).cloned(),
            _ => None,
        },
        Prim::Tuple(_) => Some(Type::Tuple(args.iter().map(|a| a.known().cloned()).collect::<Option<_>>()?)),
        Prim::To(_) | Prim::Un(_) => args[0].known().cloned(),
        Prim::Bin(op) if op.is_comparison() => Some(Type::BOOL),
        Prim::Bin(_) => args[0].known().cloned(),
        Prim::Select => args[1].known().cloned(),
        Prim::Cast(k) => Some(Type::Scalar(*k)),
        Prim::VectorFromScalar(w) => match args[0].known()? {
            Type::Scalar(k) => Some(Type::Vector(*k, w.lanes)),
            _ => None,
        },
        Prim::AsVector(w) => match arr(&args[0])? {
            (Type::Scalar(k), n) => {
                Some(Type::array(Type::Vector(k, w.lanes), n.div(&Size::constant(i64::from(w.lanes)))))
            }
            _ => None,
        },
        Prim::AsScalar => match arr(&args[0])? {
            (Type::Vector(k, w), n) => Some(Type::array(Type::Scalar(k), n.mul(&Size::constant(i64::from(w))))),
            _ => None,
        },
    }
}

/// True when two types are the same at these sizes (lengths compared by value; a length that
/// cannot be evaluated is taken as equal). What a merge of two e-classes must preserve.
pub fn same_at(a: &Type, b: &Type, sizes: &mapsat_ir::Sizes) -> bool {
    match (a, b) {
        (Type::Array(x, n), Type::Array(y, m)) => {
            let lens = match (n.eval(sizes), m.eval(sizes)) {
                (Some(n), Some(m)) => n == m,
                _ => true,
            };
            lens && same_at(x, y, sizes)
        }
        (Type::Fun(a1, r1), Type::Fun(a2, r2)) => same_at(a1, a2, sizes) && same_at(r1, r2, sizes),
        (Type::Tuple(xs), Type::Tuple(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same_at(x, y, sizes))
        }
        _ => a == b,
    }
}
