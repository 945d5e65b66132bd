//! The surface syntax tree: what the parser reads, with names, before elaboration.

use crate::ast::{BinOp, Lit, Span, UnOp};
use crate::size::Size;
use crate::types::Type;

/// Kinds of static arguments a primitive takes before its data arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StaticKind {
    /// A size expression.
    Size,
    /// A plain integer (dimension, vector width, tuple index).
    Int,
    /// A scalar literal (pad value).
    Lit,
}

/// A static argument's value.
#[derive(Clone, Debug)]
pub enum Static {
    /// A size.
    Size(Size),
    /// An integer.
    Int(i64),
    /// A literal.
    Lit(Lit),
}

/// A surface expression.
#[derive(Clone, Debug)]
pub enum SExpr {
    /// A name: variable, parameter, or a primitive used as a function value.
    Ident(String, Span),
    /// A literal.
    Lit(Lit, Span),
    /// `fun(x: T, y => body)`.
    Lam {
        /// Parameters with optional types.
        params: Vec<(String, Option<Type>, Span)>,
        /// Body.
        body: Box<SExpr>,
        /// Whole lambda.
        span: Span,
    },
    /// A primitive or macro with its label, static arguments and (some of its) data arguments.
    Prim {
        /// Its name.
        name: String,
        /// Where the name is.
        name_span: Span,
        /// `@label`.
        label: Option<(String, Span)>,
        /// Static arguments.
        statics: Vec<(Static, Span)>,
        /// Data and function arguments.
        args: Vec<SExpr>,
        /// The whole call.
        span: Span,
    },
    /// `f(args)` for anything but a primitive.
    Call(Box<SExpr>, Vec<SExpr>, Span),
    /// `f $ x`.
    Apply(Box<SExpr>, Box<SExpr>, Span),
    /// `f o g o h`.
    Comp(Vec<SExpr>, Span),
    /// `let x = v in body`.
    Let {
        /// Bound name.
        name: String,
        /// Where the name is.
        name_span: Span,
        /// Value.
        value: Box<SExpr>,
        /// Body.
        body: Box<SExpr>,
        /// Whole expression.
        span: Span,
    },
    /// `(a, b)`.
    Tuple(Vec<SExpr>, Span),
    /// `t.i`: expression, index, index span, whole span.
    Field(Box<SExpr>, i64, Span, Span),
    /// Infix operator.
    Bin(BinOp, Box<SExpr>, Box<SExpr>, Span),
    /// Prefix operator.
    Un(UnOp, Box<SExpr>, Span),
}

impl SExpr {
    /// The expression's span.
    pub fn span(&self) -> Span {
        match self {
            SExpr::Ident(_, s) | SExpr::Lit(_, s) | SExpr::Call(_, _, s) | SExpr::Apply(_, _, s) => *s,
            SExpr::Comp(_, s) | SExpr::Tuple(_, s) | SExpr::Field(_, _, _, s) | SExpr::Bin(_, _, _, s) => *s,
            SExpr::Un(_, _, s) => *s,
            SExpr::Lam { span, .. } | SExpr::Prim { span, .. } | SExpr::Let { span, .. } => *span,
        }
    }
}

/// A size declaration.
#[derive(Clone, Debug)]
pub struct SSizeDecl {
    pub(crate) name: String,
    pub(crate) min: i64,
    pub(crate) max: Option<i64>,
    pub(crate) default: Option<i64>,
    pub(crate) span: Span,
}

/// A parameter.
#[derive(Clone, Debug)]
pub struct SParam {
    pub(crate) name: String,
    pub(crate) ty: Type,
    pub(crate) span: Span,
}

/// A parsed file.
#[derive(Clone, Debug)]
pub struct SFile {
    pub(crate) sizes: Vec<SSizeDecl>,
    pub(crate) name: String,
    pub(crate) params: Vec<SParam>,
    pub(crate) ret: Option<(Type, Span)>,
    pub(crate) body: SExpr,
}
