//! Incremental evaluation of the constraints on the search's witness (a full assignment).
//!
//! Each constraint is a circuit: its comparisons are leaves, its connectives nodes that remember
//! their value on the witness and, for `And`/`Or`, how many children decide them (false for
//! `And`, true for `Or`) and how many are undecided. When the witness changes at one variable,
//! a constraint's new value is found by re-evaluating only the nodes that depend on that
//! variable (children first), each connective from its remembered counts and its changed
//! children: a chain-wide rule over a hundred maps then costs a few nodes, not a hundred. The
//! values are those of [`Env::eval`](crate::expr::Env::eval) (Kleene's three-valued logic).

mod leaf;
#[cfg(test)]
mod tests;

use crate::expr::Expr;
use leaf::Table;

/// Three-valued truth: false.
const FALSE: u8 = 0;
/// Three-valued truth: true.
pub(crate) const TRUE: u8 = 1;
/// Three-valued truth: undecided.
const UNKNOWN: u8 = 2;
/// The parent of a constraint's root.
const NONE: u32 = u32::MAX;

/// What a node is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A table on the code of a variable (`mask` and `none` of the node, as [`Table`]).
    Code(u32),
    /// A table on the effective code of a variable.
    Eff(u32),
    /// Any other leaf (an index in `leaves`).
    Direct(u32),
    /// Conjunction: remembers its false and undecided children.
    And,
    /// Disjunction: remembers its true and undecided children.
    Or,
    /// Negation of the node before it.
    Not,
}

/// The values a witness gives the variables and tuning parameters.
pub(crate) struct Values<'a> {
    /// Codes (all assigned).
    pub codes: &'a [Option<i64>],
    /// Parent variable of each variable.
    pub parents: &'a [Option<usize>],
    /// Tuning values.
    pub ls: &'a [Option<i64>],
}

/// The circuits of a space's constraints with their values on the witness, and, for each
/// variable and each constraint that depends on it, the nodes to re-evaluate when it changes.
pub(crate) struct Circuits {
    /// What each node is (children before parents).
    kind: Vec<Kind>,
    /// Each node's parent ([`NONE`] for a root).
    parent: Vec<u32>,
    /// For each node, what its parent's counts count: [`FALSE`] children (`And`), [`TRUE`]
    /// children (`Or`), or nothing ([`UNKNOWN`]: a root, or under a `Not`).
    counted: Vec<u8>,
    /// Each table's values at the codes, and when unassigned (see [`Table`]).
    mask: Vec<u64>,
    none: Vec<u8>,
    /// The leaves evaluated directly.
    leaves: Vec<Expr>,
    /// The variables each node depends on, sorted (through `Eff`, ancestors too).
    vars: Vec<Vec<usize>>,
    /// Children of each node.
    children: Vec<Vec<u32>>,
    /// Root node of each constraint.
    roots: Vec<u32>,
    /// The constraints that depend on each variable.
    by_var: Vec<Vec<usize>>,
    /// For each variable `i` (made when it first changes: most never do in a stream), the
    /// nodes that depend on it, constraint after constraint in the order of `by_var[i]`,
    /// children first, and where each constraint's nodes end.
    plans: Vec<Option<(Vec<u32>, Vec<u32>)>>,
    /// Value of each node on the witness.
    val: Vec<u8>,
    /// Deciding and undecided children of each connective on the witness.
    count: Vec<[u32; 2]>,
    /// Values and counts on the witness changed at one variable (valid for the nodes of the
    /// plans evaluated since the last change).
    new_val: Vec<u8>,
    new_count: Vec<[u32; 2]>,
    /// Changes of the counts from changed children, while a plan is evaluated.
    delta: Vec<[i32; 2]>,
}

impl Circuits {
    /// The circuits of `exprs`; `by_var[i]` lists the constraints that depend on variable `i`.
    pub(crate) fn new(exprs: &[&Expr], parents: &[Option<usize>], by_var: &[Vec<usize>]) -> Circuits {
        let mut c = Circuits {
            kind: Vec::new(),
            parent: Vec::new(),
            counted: Vec::new(),
            mask: Vec::new(),
            none: Vec::new(),
            leaves: Vec::new(),
            vars: Vec::new(),
            children: Vec::new(),
            roots: Vec::new(),
            by_var: by_var.to_vec(),
            plans: vec![None; by_var.len()],
            val: Vec::new(),
            count: Vec::new(),
            new_val: Vec::new(),
            new_count: Vec::new(),
            delta: Vec::new(),
        };
        for e in exprs {
            let root = c.add(e, parents);
            c.roots.push(root);
        }
        let n = c.kind.len();
        (c.val, c.count, c.new_val, c.new_count, c.delta) =
            (vec![UNKNOWN; n], vec![[0; 2]; n], vec![UNKNOWN; n], vec![[0; 2]; n], vec![[0; 2]; n]);
        c
    }

    /// Makes the plans of variable `i` (on first use).
    fn make_plans(&mut self, i: usize) {
        if self.plans[i].is_none() {
            let (mut nodes, mut ends) = (Vec::new(), Vec::new());
            for &k in &self.by_var[i] {
                self.plan(self.roots[k], i, &mut nodes);
                ends.push(nodes.len() as u32);
            }
            self.plans[i] = Some((nodes, ends));
        }
    }

    /// Adds the nodes of `e` (children first); returns its root. A subtree that reads one code
    /// term only is one leaf.
    fn add(&mut self, e: &Expr, parents: &[Option<usize>]) -> u32 {
        let (mut mask, mut none) = (0, UNKNOWN);
        let (kind, kids): (Kind, Vec<u32>) = match (Table::of(e), e) {
            (Some(Table { var, eff, mask: m, none: u }), _) => {
                (mask, none) = (m, u);
                (if eff { Kind::Eff(var as u32) } else { Kind::Code(var as u32) }, Vec::new())
            }
            (_, Expr::And(es)) => (Kind::And, es.iter().map(|e| self.add(e, parents)).collect()),
            (_, Expr::Or(es)) => (Kind::Or, es.iter().map(|e| self.add(e, parents)).collect()),
            (_, Expr::Not(e)) => (Kind::Not, vec![self.add(e, parents)]),
            _ => {
                self.leaves.push(e.clone());
                (Kind::Direct(self.leaves.len() as u32 - 1), Vec::new())
            }
        };
        let mut vars = Vec::new();
        match kind {
            Kind::And | Kind::Or | Kind::Not => {
                kids.iter().for_each(|&k| vars.extend_from_slice(&self.vars[k as usize]))
            }
            _ => crate::solve::expr_vars(e, parents, &mut vars),
        }
        vars.sort_unstable();
        vars.dedup();
        let id = self.kind.len() as u32;
        let counted = match kind {
            Kind::And => FALSE,
            Kind::Or => TRUE,
            _ => UNKNOWN,
        };
        for &k in &kids {
            self.parent[k as usize] = id;
            self.counted[k as usize] = counted;
        }
        self.kind.push(kind);
        self.parent.push(NONE);
        self.counted.push(UNKNOWN);
        self.mask.push(mask);
        self.none.push(none);
        self.vars.push(vars);
        self.children.push(kids);
        id
    }

    /// Pushes the nodes under `n` (itself included) that depend on variable `i`, children first.
    fn plan(&self, n: u32, i: usize, out: &mut Vec<u32>) {
        if self.vars[n as usize].binary_search(&i).is_err() {
            return;
        }
        for &k in &self.children[n as usize] {
            self.plan(k, i, out);
        }
        out.push(n);
    }

    /// The value of node `n` from its leaf, its child or its counts `c`.
    #[inline]
    fn value(&self, n: usize, w: &Values, child: &[u8], c: [u32; 2]) -> u8 {
        match self.kind[n] {
            Kind::Code(x) => self.table(n, w.codes[x as usize]),
            Kind::Eff(x) => self.table(n, leaf::effective(w, x as usize)),
            Kind::Direct(l) => leaf::direct(&self.leaves[l as usize], w),
            Kind::Not => not(child[n - 1]),
            Kind::And => and(c),
            Kind::Or => or(c),
        }
    }

    /// The value of table `n` at code `t`.
    #[inline]
    fn table(&self, n: usize, t: Option<i64>) -> u8 {
        match t {
            None => self.none[n],
            Some(c) => {
                debug_assert!(crate::Code::from_int(c).is_some(), "code {c}");
                ((self.mask[n] >> (c & 63)) & 1) as u8
            }
        }
    }

    /// Evaluates every node on the witness `w`.
    pub(crate) fn rebuild(&mut self, w: &Values) {
        self.count.iter_mut().for_each(|c| *c = [0; 2]);
        for n in 0..self.kind.len() {
            let v = self.value(n, w, &self.val, self.count[n]);
            self.val[n] = v;
            let counted = self.counted[n];
            if counted != UNKNOWN {
                let c = &mut self.count[self.parent[n] as usize];
                c[0] += (v == counted) as u32;
                c[1] += (v == UNKNOWN) as u32;
            }
        }
    }

    /// The value of constraint `by_var[i][p]` on the witness `w`, which differs from the one
    /// evaluated last (by [`Circuits::rebuild`] or [`Circuits::commit`]) at variable `i` only.
    pub(crate) fn eval(&mut self, i: usize, p: usize, w: &Values) -> u8 {
        self.make_plans(i);
        let Some((nodes, ends)) = self.plans[i].take() else { unreachable!("made") };
        let start = if p == 0 { 0 } else { ends[p - 1] as usize };
        let v = self.run(&nodes[start..ends[p] as usize], w);
        self.plans[i] = Some((nodes, ends));
        v
    }

    /// The first constraint of `by_var[i]` (its position) that is not true on the witness `w`,
    /// which differs from the one evaluated last at variable `i` only: every constraint of
    /// `by_var[i]` is evaluated, in one pass.
    pub(crate) fn first_failing(&mut self, i: usize, w: &Values) -> Option<usize> {
        self.make_plans(i);
        let Some((nodes, ends)) = self.plans[i].take() else { unreachable!("made") };
        self.run(&nodes, w);
        // A constraint's root is the last of its nodes.
        let failing = ends.iter().position(|&e| self.new_val[nodes[e as usize - 1] as usize] != TRUE);
        self.plans[i] = Some((nodes, ends));
        failing
    }

    /// Evaluates the nodes of a plan (children first) on `w`; returns the last one's value.
    fn run(&mut self, plan: &[u32], w: &Values) -> u8 {
        let mut v = UNKNOWN;
        for &n in plan {
            let n = n as usize;
            let mut c = [0; 2];
            if matches!(self.kind[n], Kind::And | Kind::Or) {
                let d = std::mem::take(&mut self.delta[n]);
                c = [(self.count[n][0] as i32 + d[0]) as u32, (self.count[n][1] as i32 + d[1]) as u32];
                self.new_count[n] = c;
            }
            v = self.value(n, w, &self.new_val, c);
            self.new_val[n] = v;
            let (counted, old) = (self.counted[n], self.val[n]);
            if counted != UNKNOWN && old != v {
                let d = &mut self.delta[self.parent[n] as usize];
                d[0] += (v == counted) as i32 - (old == counted) as i32;
                d[1] += (v == UNKNOWN) as i32 - (old == UNKNOWN) as i32;
            }
        }
        v
    }

    /// Makes the witness changed at variable `i` the one remembered; every constraint of
    /// `by_var[i]` must have been evaluated on it by [`Circuits::eval`].
    pub(crate) fn commit(&mut self, i: usize) {
        for &n in self.plans[i].iter().flat_map(|(nodes, _)| nodes) {
            let n = n as usize;
            self.val[n] = self.new_val[n];
            self.count[n] = self.new_count[n];
        }
    }

    /// The remembered value of constraint `k` (for checks).
    pub(crate) fn root_value(&self, k: usize) -> u8 {
        self.val[self.roots[k] as usize]
    }
}

fn not(v: u8) -> u8 {
    match v {
        FALSE => TRUE,
        TRUE => FALSE,
        _ => UNKNOWN,
    }
}

/// A conjunction's value from its false and undecided children.
fn and(c: [u32; 2]) -> u8 {
    if c[0] > 0 {
        FALSE
    } else if c[1] > 0 {
        UNKNOWN
    } else {
        TRUE
    }
}

/// A disjunction's value from its true and undecided children.
fn or(c: [u32; 2]) -> u8 {
    if c[0] > 0 {
        TRUE
    } else if c[1] > 0 {
        UNKNOWN
    } else {
        FALSE
    }
}
