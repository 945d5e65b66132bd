//! Guided saturation by rule phases.
//!
//! Plain saturation applies every rule in every iteration, so a variant that needs a long chain
//! of rewrites is found only after as many iterations, by which time the rules that multiply
//! terms (split-join, partial reductions) have filled the node budget. Inlining a stage
//! into a 2-D stencil is such a chain (ten rewrites for the separable blur: `let-inline`,
//! fission, interchange, transpose cancellation, fusion, β, `pad-map`, `slide-map`, fusion, β).
//!
//! Phases guide it: each phase runs a subset of the rules to saturation or its own iteration
//! budget, on the same e-graph, before the next; the node and time budgets hold for all phases
//! together. This is the staged form of guidance (RISE's sketch-guided search runs one
//! saturation per sketch step the same way); goals are rule sets here, not sketches.

use crate::analysis::LiftGraph;
use crate::rules::{Params, Rule};
use crate::saturate::{saturate, Budget, Report, StopReason};
use std::time::Instant;

/// One phase: a name, the rules it runs, and its iteration budget.
#[derive(Clone, Debug)]
pub struct Phase {
    /// Its name in reports.
    pub name: String,
    /// The names of the rules it runs.
    pub rules: Vec<String>,
    /// Its iteration budget.
    pub iterations: usize,
    /// Nodes of the budget it leaves to the phases after it: it stops once the e-graph has more
    /// than the budget's nodes less these (0: it may use all).
    pub reserve: usize,
}

/// The stage phase's rules: those that move a producer into its consumer (no rule that
/// multiplies terms).
pub const STAGE_RULES: [&str; 10] = [
    "let-inline",
    "map-fission-nest",
    "map-interchange",
    "transpose-transpose",
    "eta",
    "map-fusion",
    "beta",
    "pad-map",
    "slide-map",
    "reduce-map-fusion",
];

/// Iterations of the stage phase (the longest chain it is meant to complete, with room).
pub const STAGE_ITERATIONS: usize = 16;

/// The share of the node budget the stage phase leaves to the phases after it (1/4): the
/// fission and interchange of a 2-D stencil's stages (jacobi2d's `mapND2`s) fill any budget
/// before the stage phase saturates, and would leave the other rules no room.
pub const STAGE_RESERVE: usize = 4;

/// The stage phase: inlining `let`-bound stages into their consumers, leaving `1/STAGE_RESERVE`
/// of the `nodes` budget to the phases after it.
pub fn stages(nodes: usize) -> Phase {
    Phase {
        name: "stages".into(),
        rules: STAGE_RULES.map(String::from).to_vec(),
        iterations: STAGE_ITERATIONS,
        reserve: nodes / STAGE_RESERVE,
    }
}

/// The 2-D tiling phase's rules.
pub const TILE2D_RULES: [&str; 1] = ["slide2d-tiling"];

/// The 2-D tiling phase, before the main one: one iteration of `slide2d-tiling` on the stencils
/// the input (and the stage phase) hold. In the main phase, its matches come after those of
/// every rule listed before it, which fill the budget first when the main phase starts from a
/// large e-graph (jacobi2d after the stage phase). It leaves the vectorization phase its share
/// of the `nodes` budget, as the main phase does.
pub fn tiles2d(nodes: usize) -> Phase {
    let rules = TILE2D_RULES.map(String::from).to_vec();
    Phase { name: "tiles2d".into(), rules, iterations: 1, reserve: nodes / VECTOR_RESERVE }
}

/// The vectorization phase's rules ([`crate::rules::vectorize`]).
pub const VECTOR_RULES: [&str; 3] = ["vectorize-map", "asscalar-asvector", "asvector-asscalar"];

/// Iterations of the vectorization phase: one vectorizes every map over scalars the earlier
/// phases made, the second removes the `asScalar(asVector(..))` pairs between them.
pub const VECTOR_ITERATIONS: usize = 2;

/// The share of the node budget the phases before vectorization leave to it (1/20): a main
/// phase that fills the budget (matmul, the convolutions) would otherwise leave it no room, and
/// no variant would be vectorized.
pub const VECTOR_RESERVE: usize = 20;

/// The vectorization phase, last: a lowering step (Lift's memory-mapping stage and RISE's
/// `loweringStep` vectorize after the algorithmic rewrites), so that the algorithmic rules
/// neither multiply nor rewrite the vectorized forms.
pub fn vectorize() -> Phase {
    Phase {
        name: "vectorize".into(),
        rules: VECTOR_RULES.map(String::from).to_vec(),
        iterations: VECTOR_ITERATIONS,
        reserve: 0,
    }
}

/// What one phase did.
#[derive(Clone, Debug)]
pub struct PhaseReport {
    /// The phase's name.
    pub name: String,
    /// What its saturation did.
    pub report: Report,
}

/// Runs the phases in order on `eg` (rules by name from `rules`), each within its iteration
/// budget and what is left of `budget`'s nodes (less its reserve) and time; stops early when one
/// runs out of the budget's nodes or time (a phase that stops at its reserve does not stop the
/// phases after it).
/// Returns each phase's report and the combined one (iterations and applications summed, the
/// last stop reason other than saturation, else saturation, and the e-graph's final size): a
/// main phase stopped by a budget is reported as such even when the vectorization phase after
/// it saturates.
pub fn run(
    eg: &mut LiftGraph,
    rules: &[Box<dyn Rule>],
    params: &Params,
    budget: &Budget,
    phases: &[Phase],
) -> (Report, Vec<PhaseReport>) {
    let start = Instant::now();
    let mut out: Vec<PhaseReport> = Vec::new();
    for phase in phases {
        let chosen: Vec<&dyn Rule> =
            rules.iter().filter(|r| phase.rules.iter().any(|n| n == r.name())).map(|r| r.as_ref()).collect();
        let left = Budget {
            iterations: phase.iterations,
            time: budget.time.saturating_sub(start.elapsed()),
            nodes: budget.nodes.saturating_sub(phase.reserve),
            ..budget.clone()
        };
        let report = saturate(eg, &chosen, params, &left);
        let limited = match report.stop {
            StopReason::TimeLimit => true,
            StopReason::NodeLimit => eg.total_number_of_nodes() > budget.nodes || phase.reserve == 0,
            _ => false,
        };
        out.push(PhaseReport { name: phase.name.clone(), report });
        if limited {
            break;
        }
    }
    (combined(&out, start.elapsed()), out)
}

fn combined(phases: &[PhaseReport], time: std::time::Duration) -> Report {
    let last = &phases.last().expect("at least one phase").report;
    let stop = phases.iter().rev().map(|p| p.report.stop).find(|s| *s != StopReason::Saturated).unwrap_or(last.stop);
    let mut applied = std::collections::BTreeMap::new();
    for p in phases {
        for (rule, n) in &p.report.applied {
            *applied.entry(rule.clone()).or_insert(0) += n;
        }
    }
    Report {
        stop,
        iterations: phases.iter().map(|p| p.report.iterations).sum(),
        nodes: last.nodes,
        classes: last.classes,
        time,
        applied,
    }
}
