//! Incremental evaluation of the constraints on the search's witness (a full assignment).
//!
//! Each constraint is a circuit: its comparisons are leaves, its connectives nodes that remember
//! their value on the witness and, for `And`/`Or`, how many children decide them (false for
//! `And`, true for `Or`) and how many are undecided. When the witness changes at one variable,
//! a constraint's new value is found by re-evaluating only the nodes that depend on that
//! variable (children first), each connective from its remembered counts and its changed
//! children: a chain-wide rule over a hundred maps then costs a few nodes, not a hundred. The
//! values are those of [`Env::eval`](crate::expr::Env::eval) (Kleene's three-valued logic).

use crate::expr::{Expr, Term};

/// Three-valued truth: false.
const FALSE: u8 = 0;
/// Three-valued truth: true.
pub(crate) const TRUE: u8 = 1;
/// Three-valued truth: undecided.
const UNKNOWN: u8 = 2;
/// The parent of a constraint's root.
const NONE: u32 = u32::MAX;

/// A node of a constraint's circuit.
enum Kind {
    /// A comparison, `In`, `Before` or constant: evaluated directly.
    Leaf(Expr),
    /// Conjunction: remembers its false and undecided children.
    And,
    /// Disjunction: remembers its true and undecided children.
    Or,
    /// Negation of the node before it.
    Not,
}

struct Node {
    kind: Kind,
    parent: u32,
    /// The variables whose values it depends on, sorted (through `Eff`, ancestors too).
    vars: Vec<usize>,
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
    nodes: Vec<Node>,
    /// Children of each node (in `nodes` order, children before parents).
    children: Vec<Vec<u32>>,
    /// Root node of each constraint.
    roots: Vec<u32>,
    /// The constraints that depend on each variable.
    by_var: Vec<Vec<usize>>,
    /// `plans[i][p]`: the nodes of constraint `by_var[i][p]` that depend on variable `i`,
    /// children first; made when variable `i` is first changed (most never are in a stream).
    plans: Vec<Option<Vec<Vec<u32>>>>,
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
            nodes: Vec::new(),
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
        let n = c.nodes.len();
        (c.val, c.count, c.new_val, c.new_count, c.delta) =
            (vec![UNKNOWN; n], vec![[0; 2]; n], vec![UNKNOWN; n], vec![[0; 2]; n], vec![[0; 2]; n]);
        c
    }

    /// Makes the plans of variable `i` (on first use).
    fn make_plans(&mut self, i: usize) {
        if self.plans[i].is_none() {
            let plans = self.by_var[i]
                .iter()
                .map(|&k| {
                    let mut plan = Vec::new();
                    self.plan(self.roots[k], i, &mut plan);
                    plan
                })
                .collect();
            self.plans[i] = Some(plans);
        }
    }

    /// Adds the nodes of `e` (children first); returns its root.
    fn add(&mut self, e: &Expr, parents: &[Option<usize>]) -> u32 {
        let (kind, kids): (Kind, Vec<u32>) = match e {
            Expr::And(es) => (Kind::And, es.iter().map(|e| self.add(e, parents)).collect()),
            Expr::Or(es) => (Kind::Or, es.iter().map(|e| self.add(e, parents)).collect()),
            Expr::Not(e) => (Kind::Not, vec![self.add(e, parents)]),
            leaf => (Kind::Leaf(leaf.clone()), Vec::new()),
        };
        let mut vars = Vec::new();
        match &kind {
            Kind::Leaf(e) => crate::solve::expr_vars(e, parents, &mut vars),
            _ => kids.iter().for_each(|&k| vars.extend_from_slice(&self.nodes[k as usize].vars)),
        }
        vars.sort_unstable();
        vars.dedup();
        let id = self.nodes.len() as u32;
        for &k in &kids {
            self.nodes[k as usize].parent = id;
        }
        self.nodes.push(Node { kind, parent: NONE, vars });
        self.children.push(kids);
        id
    }

    /// Pushes the nodes under `n` (itself included) that depend on variable `i`, children first.
    fn plan(&self, n: u32, i: usize, out: &mut Vec<u32>) {
        if self.nodes[n as usize].vars.binary_search(&i).is_err() {
            return;
        }
        for &k in &self.children[n as usize] {
            self.plan(k, i, out);
        }
        out.push(n);
    }

    /// Evaluates every node on the witness `w`.
    pub(crate) fn rebuild(&mut self, w: &Values) {
        self.count.iter_mut().for_each(|c| *c = [0; 2]);
        for n in 0..self.nodes.len() {
            let v = match &self.nodes[n].kind {
                Kind::Leaf(e) => leaf(e, w),
                Kind::Not => not(self.val[n - 1]),
                Kind::And => and(self.count[n]),
                Kind::Or => or(self.count[n]),
            };
            self.val[n] = v;
            let p = self.nodes[n].parent;
            if p != NONE {
                let add = self.contribution(p, v);
                let c = &mut self.count[p as usize];
                c[0] += add[0] as u32;
                c[1] += add[1] as u32;
            }
        }
    }

    /// What a child with value `v` adds to the counts of connective `p`.
    fn contribution(&self, p: u32, v: u8) -> [i32; 2] {
        let decisive = match self.nodes[p as usize].kind {
            Kind::And => FALSE,
            _ => TRUE,
        };
        [(v == decisive) as i32, (v == UNKNOWN) as i32]
    }

    /// The value of constraint `by_var[i][p]` on the witness `w`, which differs from the one
    /// evaluated last (by [`Circuits::rebuild`] or [`Circuits::commit`]) at variable `i` only.
    pub(crate) fn eval(&mut self, i: usize, p: usize, w: &Values) -> u8 {
        self.make_plans(i);
        let plan = &self.plans[i].as_ref().expect("made")[p];
        let mut v = UNKNOWN;
        for &n in plan {
            let n = n as usize;
            v = match &self.nodes[n].kind {
                Kind::Leaf(e) => leaf(e, w),
                Kind::Not => not(self.new_val[n - 1]),
                Kind::And | Kind::Or => {
                    let (c, d) = (self.count[n], std::mem::take(&mut self.delta[n]));
                    let c = [(c[0] as i32 + d[0]) as u32, (c[1] as i32 + d[1]) as u32];
                    self.new_count[n] = c;
                    if matches!(self.nodes[n].kind, Kind::And) { and(c) } else { or(c) }
                }
            };
            self.new_val[n] = v;
            let parent = self.nodes[n].parent;
            let old = self.val[n];
            if parent != NONE && old != v {
                let (a, b) = (self.contribution(parent, v), self.contribution(parent, old));
                let d = &mut self.delta[parent as usize];
                d[0] += a[0] - b[0];
                d[1] += a[1] - b[1];
            }
        }
        v
    }

    /// Makes the witness changed at variable `i` the one remembered; every constraint of
    /// `by_var[i]` must have been evaluated on it by [`Circuits::eval`].
    pub(crate) fn commit(&mut self, i: usize) {
        for plan in self.plans[i].iter().flatten() {
            for &n in plan {
                let n = n as usize;
                self.val[n] = self.new_val[n];
                self.count[n] = self.new_count[n];
            }
        }
    }

    /// The remembered value of constraint `k` (for checks).
    pub(crate) fn value(&self, k: usize) -> u8 {
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

/// Effective code of variable `i`: its parent's when it is fused (code 1).
fn eff(w: &Values, mut i: usize) -> Option<i64> {
    loop {
        match (w.codes[i], w.parents[i]) {
            (Some(1), Some(p)) => i = p,
            (c, _) => return c,
        }
    }
}

fn term(t: &Term, w: &Values) -> Option<i64> {
    match t {
        Term::Code(i) => w.codes[*i],
        Term::Eff(i) => eff(w, *i),
        Term::Ls(d) => w.ls.get(*d).copied().flatten(),
        Term::Const(c) => Some(*c),
        Term::Mul(ts) => ts.iter().try_fold(1i64, |acc, t| Some(acc.saturating_mul(term(t, w)?))),
    }
}

/// The value of a leaf.
fn leaf(e: &Expr, w: &Values) -> u8 {
    let b = match e {
        Expr::Bool(b) => Some(*b),
        Expr::Eq(a, b) => term(a, w).zip(term(b, w)).map(|(a, b)| a == b),
        Expr::Lt(a, b) => term(a, w).zip(term(b, w)).map(|(a, b)| a < b),
        Expr::In(a, set) => term(a, w).map(|a| set.contains(&a)),
        Expr::Before(i, set) => before(&w.codes[..*i], set),
        Expr::And(_) | Expr::Or(_) | Expr::Not(_) => unreachable!("connectives are nodes"),
    };
    match b {
        Some(false) => FALSE,
        Some(true) => TRUE,
        None => UNKNOWN,
    }
}

/// Some code of `codes` in `set` (three-valued).
fn before(codes: &[Option<i64>], set: &[i64]) -> Option<bool> {
    let mut unknown = false;
    for c in codes {
        match c {
            Some(c) if set.contains(c) => return Some(true),
            None => unknown = true,
            Some(_) => {}
        }
    }
    (!unknown).then_some(false)
}
