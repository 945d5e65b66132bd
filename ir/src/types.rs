//! Types: scalars, vectors, tuples, arrays with symbolic lengths, and functions.

use crate::size::Size;
use std::collections::HashMap;
use std::fmt;

/// A scalar element type (serialized by its name in the text format: `f32`, `i32`, `bool`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScalarKind {
    /// 32-bit float.
    F32,
    /// 32-bit signed integer.
    I32,
    /// Boolean.
    Bool,
}

impl ScalarKind {
    /// The name used in the text format.
    pub fn name(self) -> &'static str {
        match self {
            ScalarKind::F32 => "f32",
            ScalarKind::I32 => "i32",
            ScalarKind::Bool => "bool",
        }
    }

    /// Size in bytes of one element in memory.
    pub fn bytes(self) -> u64 {
        match self {
            ScalarKind::F32 | ScalarKind::I32 => 4,
            ScalarKind::Bool => 1,
        }
    }
}

/// A type of the IR.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Type {
    /// A scalar.
    Scalar(ScalarKind),
    /// A short vector of `width` scalars (`f32x4`), as produced by `asVector`.
    Vector(ScalarKind, u32),
    /// A tuple (two or more components).
    Tuple(Vec<Type>),
    /// An array `[elem]len`.
    Array(Box<Type>, Size),
    /// A function from one argument to a result; multi-argument functions are curried.
    Fun(Box<Type>, Box<Type>),
}

impl Type {
    /// `f32`.
    pub const F32: Type = Type::Scalar(ScalarKind::F32);
    /// `i32`.
    pub const I32: Type = Type::Scalar(ScalarKind::I32);
    /// `bool`.
    pub const BOOL: Type = Type::Scalar(ScalarKind::Bool);

    /// `[elem]len`.
    pub fn array(elem: Type, len: Size) -> Type {
        Type::Array(Box::new(elem), len)
    }

    /// `arg -> res`.
    pub fn fun(arg: Type, res: Type) -> Type {
        Type::Fun(Box::new(arg), Box::new(res))
    }

    /// The element type and length of an array type.
    pub fn as_array(&self) -> Option<(&Type, &Size)> {
        match self {
            Type::Array(e, n) => Some((e, n)),
            _ => None,
        }
    }

    /// Replaces size variables by the given sizes.
    pub fn substitute(&self, values: &HashMap<String, Size>) -> Type {
        match self {
            Type::Scalar(_) | Type::Vector(..) => self.clone(),
            Type::Tuple(ts) => Type::Tuple(ts.iter().map(|t| t.substitute(values)).collect()),
            Type::Array(e, n) => Type::array(e.substitute(values), n.substitute(values)),
            Type::Fun(a, r) => Type::fun(a.substitute(values), r.substitute(values)),
        }
    }

    /// The size variables the type mentions, in order of appearance, each once.
    pub fn size_vars(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut add = |n: &Size| {
            for v in n.vars() {
                if !out.contains(&v) {
                    out.push(v);
                }
            }
        };
        fn walk(t: &Type, add: &mut dyn FnMut(&Size)) {
            match t {
                Type::Scalar(_) | Type::Vector(..) => {}
                Type::Tuple(ts) => ts.iter().for_each(|t| walk(t, add)),
                Type::Array(e, n) => {
                    add(n);
                    walk(e, add);
                }
                Type::Fun(a, r) => {
                    walk(a, add);
                    walk(r, add);
                }
            }
        }
        walk(self, &mut add);
        out
    }

    /// The array lengths from the outside in and the innermost non-array element.
    pub fn dims(&self) -> (Vec<&Size>, &Type) {
        let mut dims = Vec::new();
        let mut t = self;
        while let Type::Array(e, n) = t {
            dims.push(n);
            t = e;
        }
        (dims, t)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Scalar(k) => write!(f, "{}", k.name()),
            Type::Vector(k, w) => write!(f, "{}x{}", k.name(), w),
            Type::Tuple(ts) => {
                write!(f, "(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{t}")?;
                }
                write!(f, ")")
            }
            Type::Array(e, n) if n.is_simple() => write!(f, "[{e}]{n}"),
            Type::Array(e, n) => write!(f, "[{e}]({n})"),
            Type::Fun(a, r) => match **a {
                Type::Fun(..) => write!(f, "({a}) -> {r}"),
                _ => write!(f, "{a} -> {r}"),
            },
        }
    }
}
