//! The incremental values agree with [`Env::eval`] after any sequence of one-variable changes.

use super::{Circuits, Values, TRUE};
use crate::expr::{Env, Expr, Term};
use crate::Code;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Variables 0..5: 1 nested in 0, 2 in 1, 4 in 3.
const PARENTS: [Option<usize>; 5] = [None, Some(0), Some(1), None, Some(3)];

/// Constraints of every shape: tables (one term under connectives), comparisons of two terms,
/// `Before`, products with a tuning parameter, and nested connectives.
fn exprs() -> Vec<Expr> {
    let (e, c) = (Term::Eff, Term::Code);
    vec![
        Expr::local(e(2)),
        Expr::negate(Expr::And(vec![
            Expr::Or((0..5).map(|i| Expr::global(e(i))).collect()),
            Expr::Or((0..5).map(|i| Expr::grouped(e(i))).collect()),
        ])),
        Expr::implies(Expr::code_is(4, Code::Lcl(1)), Expr::Before(4, vec![10, 20, 30])),
        Expr::Or(vec![Expr::Eq(e(2), e(4)), Expr::negate(Expr::Lt(c(0), c(3)))]),
        Expr::Lt(Term::Mul(vec![Term::Ls(0), Term::Const(2)]), Term::Const(9)),
        Expr::And(vec![Expr::Bool(true), Expr::In(c(1), vec![0, 1]), Expr::Or(vec![])]),
    ]
}

fn truth(b: Option<bool>) -> u8 {
    match b {
        Some(true) => TRUE,
        Some(false) => 0,
        None => 2,
    }
}

#[test]
fn incremental_values_agree_with_evaluation() {
    let exprs = exprs();
    let refs: Vec<&Expr> = exprs.iter().collect();
    let by_var: Vec<Vec<usize>> = (0..5)
        .map(|i| {
            (0..exprs.len())
                .filter(|&k| {
                    let mut vars = Vec::new();
                    crate::solve::expr_vars(&exprs[k], &PARENTS, &mut vars);
                    vars.contains(&i)
                })
                .collect()
        })
        .collect();
    let mut rng = StdRng::seed_from_u64(11);
    let code = |rng: &mut StdRng| Some(Code::ALL[rng.gen_range(0..Code::ALL.len())].to_int());
    let mut codes: Vec<Option<i64>> = (0..5).map(|_| code(&mut rng)).collect();
    let ls = [Some(4)];
    let mut c = Circuits::new(&refs, &PARENTS, &by_var);
    c.rebuild(&Values { codes: &codes, parents: &PARENTS, ls: &ls });
    for _ in 0..2000 {
        let i = rng.gen_range(0..5);
        let old = codes[i];
        codes[i] = code(&mut rng);
        let w = Values { codes: &codes, parents: &PARENTS, ls: &ls };
        let env = Env::new(&codes, &PARENTS, &ls);
        for (p, &k) in by_var[i].iter().enumerate() {
            assert_eq!(c.eval(i, p, &w), truth(env.eval(&exprs[k])), "constraint {k} at {codes:?}");
        }
        let first = by_var[i].iter().position(|&k| env.eval(&exprs[k]) != Some(true));
        assert_eq!(c.first_failing(i, &w), first);
        if rng.gen_bool(0.5) {
            c.commit(i);
        } else {
            codes[i] = old;
        }
        let env = Env::new(&codes, &PARENTS, &ls);
        for (k, e) in exprs.iter().enumerate() {
            assert_eq!(c.root_value(k), truth(env.eval(e)), "constraint {k} at {codes:?}");
        }
    }
}
