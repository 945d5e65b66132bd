//! The counts of the differential test and its disagreements, by kind.

use crate::verdict::{Outcome, SpaceVerdict};
use mapsat_constraints::Family;
use std::collections::BTreeMap;
use std::fmt;

/// A disagreement between the space and code generation (or the device).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Disagreement {
    /// The space accepts it, code generation refuses it.
    ValidRefused,
    /// The space accepts it, the kernel computes something else.
    ValidWrong,
    /// Only preferences reject it (lowered as written by `--mapping` on a hand-mapped
    /// program), code generation refuses it.
    PreferenceRefused,
    /// Only preferences reject it, the kernel computes something else.
    PreferenceWrong,
    /// A correctness family rejects it, code generation lowers it, and the kernel computes
    /// something else: code generation emitted a wrong kernel without a word.
    HardWrong,
    /// A correctness family rejects it, yet it lowers and computes the right result, and the
    /// families are not among those documented as stricter than needed on purpose.
    HardCorrectUndocumented,
}

impl Disagreement {
    /// Every kind, in order.
    pub const ALL: [Disagreement; 6] = [
        Disagreement::ValidRefused,
        Disagreement::ValidWrong,
        Disagreement::PreferenceRefused,
        Disagreement::PreferenceWrong,
        Disagreement::HardWrong,
        Disagreement::HardCorrectUndocumented,
    ];

    fn name(self) -> &'static str {
        match self {
            Disagreement::ValidRefused => "valid, refused by codegen",
            Disagreement::ValidWrong => "valid, wrong on the device",
            Disagreement::PreferenceRefused => "preference-invalid, refused by codegen",
            Disagreement::PreferenceWrong => "preference-invalid, wrong on the device",
            Disagreement::HardWrong => "hard-invalid, lowered, wrong on the device",
            Disagreement::HardCorrectUndocumented => "hard-invalid, lowered and correct (undocumented family)",
        }
    }
}

/// The counts.
#[derive(Default)]
pub struct Tally {
    /// Programs (examples, file tests, generated pipelines).
    pub programs: usize,
    /// Kernels (stages) of those programs with a map.
    pub kernels: usize,
    /// Mappings classified.
    pub mappings: usize,
    valid: usize,
    preference: usize,
    hard: usize,
    lowered: usize,
    refused: usize,
    ran: usize,
    correct: usize,
    /// Hard-invalid mappings that lowered and ran correctly, by the families that reject them
    /// (documented ones included): count and an example.
    stricter: BTreeMap<String, (usize, String)>,
    /// Refusals of hard-invalid mappings, by family (a mapping counts once for each family
    /// that rejects it).
    agreed_refusals: BTreeMap<Family, usize>,
    /// Disagreements: count, and the first few examples.
    disagreements: BTreeMap<Disagreement, (usize, Vec<String>)>,
}

fn families(fs: &[Family]) -> String {
    let n: Vec<String> = fs.iter().map(|f| f.number().to_string()).collect();
    format!("[{}]", n.join(","))
}

impl Tally {
    /// Records one mapping; `documented` says whether a hard-invalid mapping that runs
    /// correctly is a documented difference; `what` names it for messages.
    pub fn record(&mut self, v: &SpaceVerdict, o: &Outcome, documented: bool, what: impl Fn() -> String) {
        self.mappings += 1;
        match v {
            SpaceVerdict::Valid(_) => self.valid += 1,
            SpaceVerdict::Preference(_) => self.preference += 1,
            SpaceVerdict::Hard(_) => self.hard += 1,
        }
        match o {
            Outcome::Refused(_) => self.refused += 1,
            Outcome::Lowered => self.lowered += 1,
            Outcome::Correct | Outcome::Wrong(_) => {
                self.lowered += 1;
                self.ran += 1;
                self.correct += matches!(o, Outcome::Correct) as usize;
            }
        }
        let kind = match (v, o) {
            (SpaceVerdict::Valid(_), Outcome::Refused(_)) => Some(Disagreement::ValidRefused),
            (SpaceVerdict::Valid(_), Outcome::Wrong(_)) => Some(Disagreement::ValidWrong),
            (SpaceVerdict::Preference(_), Outcome::Refused(_)) => Some(Disagreement::PreferenceRefused),
            (SpaceVerdict::Preference(_), Outcome::Wrong(_)) => Some(Disagreement::PreferenceWrong),
            (SpaceVerdict::Hard(_), Outcome::Wrong(_)) => Some(Disagreement::HardWrong),
            (SpaceVerdict::Hard(fs), Outcome::Correct) => {
                let e = self.stricter.entry(families(fs)).or_insert_with(|| (0, what()));
                e.0 += 1;
                (!documented).then_some(Disagreement::HardCorrectUndocumented)
            }
            (SpaceVerdict::Hard(fs), Outcome::Refused(_)) => {
                for f in fs {
                    *self.agreed_refusals.entry(*f).or_default() += 1;
                }
                None
            }
            _ => None,
        };
        if let Some(k) = kind {
            let e = self.disagreements.entry(k).or_default();
            e.0 += 1;
            if e.1.len() < 5 {
                e.1.push(format!("{what}: {o:?}", what = what()));
            }
        }
    }

    /// The number of disagreements.
    pub fn disagreements(&self) -> usize {
        self.disagreements.values().map(|e| e.0).sum()
    }

    /// The examples of every disagreement.
    pub fn examples(&self) -> String {
        let mut out = String::new();
        for (k, (n, ex)) in &self.disagreements {
            out += &format!("{} ({n}):\n", k.name());
            for e in ex {
                out += &format!("  {e}\n");
            }
        }
        out
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "differential test (issue #9): the space's verdict against code generation and pocl")?;
        writeln!(f, "  programs                      {:>6}", self.programs)?;
        writeln!(f, "  kernels (stages with a map)   {:>6}", self.kernels)?;
        writeln!(f, "  mappings drawn                {:>6}", self.mappings)?;
        writeln!(f, "    valid                       {:>6}", self.valid)?;
        writeln!(f, "    invalid by preferences only {:>6}", self.preference)?;
        writeln!(f, "    invalid by a hard family    {:>6}", self.hard)?;
        writeln!(f, "  lowered                       {:>6}", self.lowered)?;
        writeln!(f, "  refused                       {:>6}", self.refused)?;
        writeln!(f, "  ran                           {:>6}", self.ran)?;
        writeln!(f, "  correct                       {:>6}", self.correct)?;
        writeln!(f, "  hard-invalid and refused, by violated family (once per family):")?;
        for (fam, n) in &self.agreed_refusals {
            writeln!(f, "    {:<27} {n:>6}", fam.number())?;
        }
        writeln!(f, "  hard-invalid, lowered and correct (space stricter), by violated families:")?;
        for (fs, (n, ex)) in &self.stricter {
            writeln!(f, "    {fs:<27} {n:>6}  e.g. {}", ex.lines().next().unwrap_or_default())?;
        }
        writeln!(f, "  disagreements                 {:>6}", self.disagreements())?;
        for k in Disagreement::ALL {
            let n = self.disagreements.get(&k).map_or(0, |e| e.0);
            writeln!(f, "    {:<45} {n:>6}", k.name())?;
        }
        Ok(())
    }
}
