//! The e-graph language: the IR's nodes with e-class children.
//!
//! One e-node per [`mapsat_ir::Node`] variant. Two differences from the arena, both for the
//! e-graph's sake: a variable carries the type it has where it occurs (so that an e-class has
//! one type whatever binders surround it: `Var(0)` of a row and `Var(0)` of a pair are different
//! e-classes), and binder names are not part of a node (they are kept beside the e-graph, see
//! [`crate::convert`]). Map labels are part of the `map` primitive, as in the arena.

use egg::{Id, Language};
use mapsat_ir::ast::Lit;
use mapsat_ir::{Prim, Type};

/// An e-node of the IR.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lift {
    /// A program parameter, by position.
    Param(u32),
    /// A de Bruijn variable, with its type where known.
    Var(u32, Option<Type>),
    /// A literal.
    Lit(Lit),
    /// A primitive, not yet applied.
    Prim(Prim),
    /// `f a`.
    App([Id; 2]),
    /// A one-parameter lambda and its parameter's annotation (as written; not inferred).
    Lam(Option<Type>, [Id; 1]),
    /// `let x = value in body`: children `[value, body]`.
    Let([Id; 2]),
}

impl Lift {
    /// `f a` as a node.
    pub fn app(f: Id, a: Id) -> Lift {
        Lift::App([f, a])
    }

    /// The map primitive with this label.
    pub fn map(label: &str) -> Lift {
        Lift::Prim(Prim::Map { kind: mapsat_ir::ast::MapKind::Abstract, label: label.to_string() })
    }
}

impl Language for Lift {
    type Discriminant = Lift;

    fn discriminant(&self) -> Lift {
        let mut d = self.clone();
        d.for_each_mut(|c| *c = Id::from(0usize));
        d
    }

    fn matches(&self, other: &Self) -> bool {
        self.discriminant() == other.discriminant()
    }

    fn children(&self) -> &[Id] {
        match self {
            Lift::App(c) | Lift::Let(c) => c,
            Lift::Lam(_, c) => c,
            Lift::Param(_) | Lift::Var(..) | Lift::Lit(_) | Lift::Prim(_) => &[],
        }
    }

    fn children_mut(&mut self) -> &mut [Id] {
        match self {
            Lift::App(c) | Lift::Let(c) => c,
            Lift::Lam(_, c) => c,
            Lift::Param(_) | Lift::Var(..) | Lift::Lit(_) | Lift::Prim(_) => &mut [],
        }
    }
}

impl std::fmt::Display for Lift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lift::Param(i) => write!(f, "p{i}"),
            Lift::Var(i, _) => write!(f, "%{i}"),
            Lift::Lit(l) => write!(f, "{l}"),
            Lift::Prim(p) => match p {
                mapsat_ir::Prim::Map { label, .. } => write!(f, "map@{label}"),
                mapsat_ir::Prim::Split(n) => write!(f, "split{n}"),
                p => write!(f, "{}", p.name()),
            },
            Lift::App(_) => write!(f, "app"),
            Lift::Lam(..) => write!(f, "lam"),
            Lift::Let(_) => write!(f, "let"),
        }
    }
}
