//! One walk over the kernel IR, for the passes that look at (or change) its statements,
//! expressions, places and indices (in the style of syn's `visit` and `visit_mut`): a pass
//! implements [`Visit`] (or [`VisitMut`]) and overrides the methods for the nodes it cares
//! about; the default methods go on into the children through the `walk_*` functions, which an
//! override calls to keep going.
//!
//! Children are visited in the order they are printed: a declaration's initial value; a
//! store's place, then its value; a loop's or a block's statements; an expression's operands
//! from left to right.

use crate::index::Index;
use crate::kir::{Expr, Place, Stmt};

/// A read-only walk. Every method's default visits the children.
pub trait Visit {
    /// A list of statements (a body, a block).
    fn visit_stmts(&mut self, stmts: &[Stmt]) {
        walk_stmts(self, stmts);
    }

    /// A statement.
    fn visit_stmt(&mut self, s: &Stmt) {
        walk_stmt(self, s);
    }

    /// An expression.
    fn visit_expr(&mut self, e: &Expr) {
        walk_expr(self, e);
    }

    /// A place read or written.
    fn visit_place(&mut self, p: &Place) {
        walk_place(self, p);
    }

    /// An index (of a place, or used as a value, or tested by `pad`): a leaf.
    fn visit_index(&mut self, _i: &Index) {}
}

/// Visits each statement.
pub fn walk_stmts<V: Visit + ?Sized>(v: &mut V, stmts: &[Stmt]) {
    for s in stmts {
        v.visit_stmt(s);
    }
}

/// Visits the children of a statement.
pub fn walk_stmt<V: Visit + ?Sized>(v: &mut V, s: &Stmt) {
    match s {
        Stmt::Decl(_, Some(e)) => v.visit_expr(e),
        Stmt::Store(p, e) => {
            v.visit_place(p);
            v.visit_expr(e);
        }
        Stmt::Loop { body, .. } | Stmt::Block(body) => v.visit_stmts(body),
        Stmt::Decl(_, None) | Stmt::Comment(_) | Stmt::BarrierSlot(_) | Stmt::Barrier { .. } => {}
    }
}

/// Visits the children of an expression.
pub fn walk_expr<V: Visit + ?Sized>(v: &mut V, e: &Expr) {
    match e {
        Expr::Lit(_) => {}
        Expr::Int(i) | Expr::InRange(i, ..) => v.visit_index(i),
        Expr::Load(p) => v.visit_place(p),
        Expr::Bin(_, a, b) => {
            v.visit_expr(a);
            v.visit_expr(b);
        }
        Expr::Un(_, a) | Expr::Cast(_, a) | Expr::Lane(a, _) | Expr::Splat(a, _) => v.visit_expr(a),
        Expr::Select(c, a, b) => {
            v.visit_expr(c);
            v.visit_expr(a);
            v.visit_expr(b);
        }
        Expr::Vector(_, es) => es.iter().for_each(|e| v.visit_expr(e)),
    }
}

/// Visits the index of a place.
pub fn walk_place<V: Visit + ?Sized>(v: &mut V, p: &Place) {
    v.visit_index(&p.index);
}

/// A walk that may change what it visits in place. Every method's default visits the children.
pub trait VisitMut {
    /// A list of statements (a body, a block): an override may also add or remove statements.
    fn visit_stmts_mut(&mut self, stmts: &mut Vec<Stmt>) {
        walk_stmts_mut(self, stmts);
    }

    /// A statement.
    fn visit_stmt_mut(&mut self, s: &mut Stmt) {
        walk_stmt_mut(self, s);
    }

    /// An expression.
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        walk_expr_mut(self, e);
    }

    /// A place read or written.
    fn visit_place_mut(&mut self, p: &mut Place) {
        walk_place_mut(self, p);
    }

    /// An index: a leaf.
    fn visit_index_mut(&mut self, _i: &mut Index) {}
}

/// Visits each statement.
pub fn walk_stmts_mut<V: VisitMut + ?Sized>(v: &mut V, stmts: &mut Vec<Stmt>) {
    for s in stmts {
        v.visit_stmt_mut(s);
    }
}

/// Visits the children of a statement.
pub fn walk_stmt_mut<V: VisitMut + ?Sized>(v: &mut V, s: &mut Stmt) {
    match s {
        Stmt::Decl(_, Some(e)) => v.visit_expr_mut(e),
        Stmt::Store(p, e) => {
            v.visit_place_mut(p);
            v.visit_expr_mut(e);
        }
        Stmt::Loop { body, .. } | Stmt::Block(body) => v.visit_stmts_mut(body),
        Stmt::Decl(_, None) | Stmt::Comment(_) | Stmt::BarrierSlot(_) | Stmt::Barrier { .. } => {}
    }
}

/// Visits the children of an expression.
pub fn walk_expr_mut<V: VisitMut + ?Sized>(v: &mut V, e: &mut Expr) {
    match e {
        Expr::Lit(_) => {}
        Expr::Int(i) | Expr::InRange(i, ..) => v.visit_index_mut(i),
        Expr::Load(p) => v.visit_place_mut(p),
        Expr::Bin(_, a, b) => {
            v.visit_expr_mut(a);
            v.visit_expr_mut(b);
        }
        Expr::Un(_, a) | Expr::Cast(_, a) | Expr::Lane(a, _) | Expr::Splat(a, _) => v.visit_expr_mut(a),
        Expr::Select(c, a, b) => {
            v.visit_expr_mut(c);
            v.visit_expr_mut(a);
            v.visit_expr_mut(b);
        }
        Expr::Vector(_, es) => es.iter_mut().for_each(|e| v.visit_expr_mut(e)),
    }
}

/// Visits the index of a place.
pub fn walk_place_mut<V: VisitMut + ?Sized>(v: &mut V, p: &mut Place) {
    v.visit_index_mut(&mut p.index);
}

/// Calls `f` on every index in `stmts`.
pub fn for_each_index(stmts: &[Stmt], f: impl FnMut(&Index)) {
    struct Each<F>(F);
    impl<F: FnMut(&Index)> Visit for Each<F> {
        fn visit_index(&mut self, i: &Index) {
            (self.0)(i);
        }
    }
    Each(f).visit_stmts(stmts);
}

/// Replaces every index in `stmts` by `f` of it.
pub fn map_indices(stmts: &mut Vec<Stmt>, f: impl FnMut(&Index) -> Index) {
    struct Map<F>(F);
    impl<F: FnMut(&Index) -> Index> VisitMut for Map<F> {
        fn visit_index_mut(&mut self, i: &mut Index) {
            *i = (self.0)(i);
        }
    }
    Map(f).visit_stmts_mut(stmts);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kir::{BufId, LoopKind, Trips, VarId};
    use mapsat_ir::ast::BinOp;

    fn place(b: usize, i: Index) -> Place {
        Place { buf: BufId(b), index: i, width: 1, lane: None }
    }

    /// `for i: out[i] = x[i + 1] + (pad test of i) ? x[i] : x[2]`, with a comment and a block.
    fn body() -> Vec<Stmt> {
        let i = Index::var(VarId(0));
        let sel = Expr::Select(
            Box::new(Expr::InRange(i.plus(3), 0, 10)),
            Box::new(Expr::Load(place(0, i.clone()))),
            Box::new(Expr::Load(place(0, Index::constant(2)))),
        );
        let value = Expr::Bin(BinOp::Add, Box::new(Expr::Load(place(0, i.plus(1)))), Box::new(sel));
        let store = Stmt::Store(place(1, i.clone()), value);
        vec![
            Stmt::Comment("c".into()),
            Stmt::Loop {
                var: VarId(0),
                kind: LoopKind::Seq,
                extent: 8,
                stride: 1,
                trips: Trips::Loop,
                origin: "mapSeq".into(),
                body: vec![Stmt::Block(vec![store])],
            },
        ]
    }

    #[derive(Default)]
    struct Indices(Vec<String>);

    impl Visit for Indices {
        fn visit_index(&mut self, i: &Index) {
            self.0.push(i.to_string());
        }
    }

    #[test]
    fn visits_every_index_in_print_order() {
        let mut v = Indices::default();
        v.visit_stmts(&body());
        assert_eq!(v.0, ["v0", "v0 + 1", "v0 + 3", "v0", "2"]);
    }

    struct Shift;

    impl VisitMut for Shift {
        fn visit_index_mut(&mut self, i: &mut Index) {
            *i = i.plus(100);
        }
    }

    #[test]
    fn changes_every_index_in_place() {
        let mut b = body();
        Shift.visit_stmts_mut(&mut b);
        let mut v = Indices::default();
        v.visit_stmts(&b);
        assert_eq!(v.0, ["v0 + 100", "v0 + 101", "v0 + 103", "v0 + 100", "102"]);
        map_indices(&mut b, |i| i.plus(-100));
        let mut seen = Vec::new();
        for_each_index(&b, |i| seen.push(i.to_string()));
        assert_eq!(seen, ["v0", "v0 + 1", "v0 + 3", "v0", "2"]);
    }
}
