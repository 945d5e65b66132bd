//! The saturation loop, with explicit budgets and the reason it stopped.
//!
//! Each iteration searches every rule on every class (a snapshot of the e-graph: matches are
//! collected first, then added), merges the results, and rebuilds. Terms larger than the term
//! size limit are not added (with the rank limit of the rules, this bounds split/join towers).
//! A macro's matches run its steps ([`crate::rules::sequence`]) in their turn; each step that changed the e-graph counts under its primitive rule's name,
//! each such sequence under the macro's.

use crate::analysis::LiftGraph;
use crate::rules::sequence::{Start, Steps};
use crate::rules::{Build, Ctx, Params, Rule};
use egg::Id;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// Default node budget.
pub const NODE_LIMIT: usize = 20_000;
/// Default iteration budget.
pub const ITER_LIMIT: usize = 8;
/// Default time budget.
pub const TIME_LIMIT: Duration = Duration::from_secs(5);
/// Default largest term a rule may add (nodes).
pub const TERM_LIMIT: usize = 200;

/// Budgets of one saturation.
#[derive(Clone, Debug)]
pub struct Budget {
    /// Stop once the e-graph has more nodes (checked while adding; after the final rebuild, which
    /// merges equal nodes, the reported count may be lower).
    pub nodes: usize,
    /// Stop after this many iterations.
    pub iterations: usize,
    /// Stop once this much time has passed (checked between rule applications, so one
    /// iteration's search is not cut short).
    pub time: Duration,
    /// Largest term a rule may add.
    pub term: usize,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget { nodes: NODE_LIMIT, iterations: ITER_LIMIT, time: TIME_LIMIT, term: TERM_LIMIT }
    }
}

/// Why saturation stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// No rule added anything new: every rewrite within the limits is in the e-graph.
    Saturated,
    /// The node budget was reached.
    NodeLimit,
    /// The iteration budget was reached.
    IterationLimit,
    /// The time budget was reached.
    TimeLimit,
}

impl StopReason {
    /// A short name (`saturated`, `node-limit`, ...).
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Saturated => "saturated",
            StopReason::NodeLimit => "node-limit",
            StopReason::IterationLimit => "iteration-limit",
            StopReason::TimeLimit => "time-limit",
        }
    }
}

/// What a saturation did.
#[derive(Clone, Debug)]
pub struct Report {
    /// Why it stopped.
    pub stop: StopReason,
    /// Iterations run.
    pub iterations: usize,
    /// E-nodes at the end.
    pub nodes: usize,
    /// E-classes at the end.
    pub classes: usize,
    /// Wall time.
    pub time: Duration,
    /// How many times each rule changed the e-graph (added a term not yet equal to the class).
    pub applied: BTreeMap<String, usize>,
}

/// Runs the rules on the e-graph until a budget is used up or nothing changes.
pub fn saturate(eg: &mut LiftGraph, rules: &[&dyn Rule], params: &Params, budget: &Budget) -> Report {
    let start = Instant::now();
    let mut applied: BTreeMap<String, usize> = rules.iter().map(|r| (r.name().to_string(), 0)).collect();
    let mut iterations = 0;
    // The macro starts already run (rule, classes, labels, sizes): run again, a sequence adds
    // the terms it added before (each step's term is a function of its classes), at the cost of
    // a rebuild and a context per step.
    let mut ran: BTreeSet<String> = BTreeSet::new();
    let stop = loop {
        if iterations >= budget.iterations {
            break StopReason::IterationLimit;
        }
        iterations += 1;
        let matches = search(eg, rules, params, budget);
        let mut changed = false;
        let mut limit = None;
        for (rule, class, found) in matches {
            match found {
                Found::Term(build) => {
                    let id = build.add(eg);
                    if eg.union(class, id) {
                        changed = true;
                        *applied.entry(rules[rule].name().to_string()).or_default() += 1;
                    }
                }
                Found::Steps(start) => {
                    let Some(seq) = rules[rule].sequence() else { continue };
                    let ids: Vec<Id> = start.ids.iter().map(|i| eg.find(*i)).collect();
                    let key = format!("{rule} {} {ids:?} {:?} {:?}", eg.find(class), start.labels, start.sizes);
                    if !ran.insert(key) {
                        continue;
                    }
                    let mut steps = Steps::new(eg, params);
                    // A sequence that stops half-way has still applied its steps so far.
                    let _ = seq.run(&mut steps, class, &start);
                    let mut any = false;
                    for (step, did) in steps.applied {
                        if did {
                            any = true;
                            *applied.entry(step.to_string()).or_default() += 1;
                        }
                    }
                    if any {
                        changed = true;
                        *applied.entry(rules[rule].name().to_string()).or_default() += 1;
                    }
                }
            }
            if eg.total_number_of_nodes() > budget.nodes {
                limit = Some(StopReason::NodeLimit);
                break;
            }
            if start.elapsed() > budget.time {
                limit = Some(StopReason::TimeLimit);
                break;
            }
        }
        eg.rebuild();
        if let Some(l) = limit {
            break l;
        }
        if !changed {
            break StopReason::Saturated;
        }
    };
    Report {
        stop,
        iterations,
        nodes: eg.total_number_of_nodes(),
        classes: eg.number_of_classes(),
        time: start.elapsed(),
        applied,
    }
}

/// A match: a term to merge with its class, or where a macro's steps start.
enum Found {
    Term(Build),
    Steps(Start),
}

/// Every match of every rule on a snapshot of the e-graph, in a fixed order (by rule, then
/// class): the terms of a primitive rule, where the steps of a macro start.
fn search(eg: &LiftGraph, rules: &[&dyn Rule], params: &Params, budget: &Budget) -> Vec<(usize, Id, Found)> {
    let cx = Ctx::new(eg, params);
    let mut classes: Vec<Id> = eg.classes().map(|c| c.id).collect();
    classes.sort();
    let mut out = Vec::new();
    for (k, rule) in rules.iter().enumerate() {
        for &c in &classes {
            for b in rule.search(&cx, c) {
                if b.size(eg) <= budget.term {
                    out.push((k, c, Found::Term(b)));
                }
            }
            if let Some(seq) = rule.sequence() {
                out.extend(seq.starts(&cx, c).into_iter().map(|s| (k, c, Found::Steps(s))));
            }
        }
    }
    out
}
