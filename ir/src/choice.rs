//! Stage choices: where a producer's values are computed, for each producer–consumer edge of a
//! program (a `let x = toM(e) in ...`). Halide's inline, compute_at and compute_root.
//!
//! Only the vocabulary lives here: the rewrite stage reads a variant's choices back from its
//! text (`mapsat_rewrite::stage_choice`), and the constraints stage offers them as variables of
//! a mapping space (`mapsat_constraints::ChoiceSpace`).

use crate::ast::AddressSpace;
use std::fmt;

/// Where a program computes a producer's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Choice {
    /// Recomputed in its consumer.
    Inline,
    /// In private memory, per work item.
    Private,
    /// In local memory, per work group (with the halo its consumer's windows need).
    Local,
    /// In global memory, by a kernel of its own (a kernel boundary).
    Global,
}

impl Choice {
    /// Every choice, in order.
    pub const ALL: [Choice; 4] = [Choice::Inline, Choice::Private, Choice::Local, Choice::Global];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Choice::Inline => "inline",
            Choice::Private => "private",
            Choice::Local => "local",
            Choice::Global => "global",
        }
    }

    /// The choice named `name` ([`Choice::name`]).
    pub fn parse(name: &str) -> Option<Choice> {
        Choice::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The choice of computing into memory `space`.
    pub fn of(space: AddressSpace) -> Choice {
        match space {
            AddressSpace::Global => Choice::Global,
            AddressSpace::Local => Choice::Local,
            AddressSpace::Private => Choice::Private,
        }
    }
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One producer and the choice made for it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StageChoice {
    /// The producer's `let` name in the input program.
    pub binder: String,
    /// The choice.
    pub choice: Choice,
}

/// `h inline, v global` (empty when there is no producer).
pub fn describe(choices: &[StageChoice]) -> String {
    choices.iter().map(|c| format!("{} {}", c.binder, c.choice.name())).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for c in Choice::ALL {
            assert_eq!(Choice::parse(c.name()), Some(c));
        }
        assert_eq!(Choice::parse("root"), None);
    }
}
