//! The stage choices of a program as variables of one mapping space (issue #9): the
//! candidates of [`crate::variants`] (the input and its rewrite variants), one per distinct
//! stage choice, become the alternatives of a [`ChoiceSpace`], each with the spaces of its
//! kernels (`ir::stages::split`).
//!
//! Only the assembly lives here (the constraints stage does not depend on the rewrite stage):
//! the choice of each candidate comes from the rewrite stage's `stage_choice`, the space and
//! its Z3 encoding from the constraints stage.

use crate::ir::{self, Sizes};
use crate::variants::Candidate;
use mapsat_constraints::{Alternative, ChoiceSpace, Error, Options, Space};

/// A choice space and where its alternatives come from.
pub struct Choices {
    /// The space.
    pub space: ChoiceSpace,
    /// The candidate of each alternative (same order as [`ChoiceSpace::alternatives`]).
    pub programs: Vec<Candidate>,
    /// Candidates left out: one that makes the same choices as an earlier (better) one, or
    /// whose kernels have no space, with why.
    pub left_out: Vec<(Candidate, String)>,
}

/// The choice space of `candidates` (the first one per distinct stage choice; the input
/// program first), each kernel's space generated with `options` at the candidate's sizes
/// (`given`, then the candidate's defaults: a variant may declare new tile sizes). Refused
/// only when no candidate has a space.
pub fn choice_space(candidates: Vec<Candidate>, given: &Sizes, options: &Options) -> Result<Choices, Error> {
    let edges: Vec<String> =
        candidates.first().map(|c| c.stages.iter().map(|s| s.binder.clone()).collect()).unwrap_or_default();
    let (mut alternatives, mut programs, mut left_out) = (Vec::new(), Vec::new(), Vec::new());
    for c in candidates {
        let choices: Vec<ir::choice::Choice> = c.stages.iter().map(|s| s.choice).collect();
        // A variant with a kernel boundary of its own (the rewrite stage's transposed copy of
        // weights) has more kernels than its choices of the input's producers make.
        let kernels_chosen = 1 + choices.iter().filter(|c| **c == ir::choice::Choice::Global).count();
        if ir::stages::count(&c.program) > kernels_chosen {
            let why = "it adds a kernel boundary of its own (a producer the input does not have), which the input's stage choices cannot say; `mapsat tune --variants` tunes it";
            left_out.push((c, why.to_string()));
            continue;
        }
        if let Some(k) = alternatives.iter().position(|a: &Alternative| a.choices == choices) {
            let first: &Candidate = &programs[k];
            let name = first.description.split(" (").next().unwrap_or_default();
            let why = format!("its stage choices are already those of {name}");
            left_out.push((c, why));
            continue;
        }
        match kernels(&c, given, options) {
            Ok(kernels) => {
                alternatives.push(Alternative { choices, kernels });
                programs.push(c);
            }
            Err(why) => left_out.push((c, why)),
        }
    }
    let space = ChoiceSpace::new(edges, alternatives)?;
    Ok(Choices { space, programs, left_out })
}

/// The space of each kernel of a candidate, or why there is none.
fn kernels(c: &Candidate, given: &Sizes, options: &Options) -> Result<Vec<Space>, String> {
    let sizes = c.program.resolve_sizes(given).map_err(|e| e.to_string())?;
    let stages = ir::stages::split(&c.program).map_err(|e| e.message.clone())?;
    stages
        .iter()
        .map(|s| {
            let options = Options { sizes: sizes.clone(), ..options.clone() };
            Space::generate(&s.program, options).map_err(|e| format!("kernel {}: {e}", s.program.name))
        })
        .collect()
}
