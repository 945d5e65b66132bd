//! The two verdicts on one mapping of one program: the space's (valid, invalid only by its
//! preferences, or invalid by a family needed for correctness) and code generation's (applied
//! and lowered, or refused), and, for a lowered one, what it computes on the device.

use mapsat_constraints::{Family, Mapping, Space};
use mapsat_ir::interp::Tensor;
use mapsat_ir::profile::Profile;
use mapsat_ir::{Program, Sizes};
use mapsat_tuner::measure::{self, DeviceSpec, RunConfig};

/// A program with what running it needs: its sizes, random inputs and the interpreter's result.
pub struct Case {
    /// A name for messages.
    pub name: String,
    /// The program (high level: every map abstract).
    pub program: Program,
    /// Its sizes.
    pub sizes: Sizes,
    /// Random inputs.
    pub inputs: Vec<Tensor>,
    /// The interpreter's result on them.
    pub want: Tensor,
}

/// What the space says of a mapping.
#[derive(Clone, Debug, PartialEq)]
pub enum SpaceVerdict {
    /// Valid, with the local sizes the space proposes (when it has tuning parameters).
    Valid(Option<Vec<i64>>),
    /// Invalid only by preference families ([`Family::is_preference`]): lowered as written,
    /// with a warning, by `--mapping` on a hand-mapped program.
    Preference(Vec<Family>),
    /// Invalid by these families, at least one of them not a preference.
    Hard(Vec<Family>),
}

/// What code generation and the device did with it.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// `Space::apply` or `mapsat_codegen::lower` refused it (the message).
    Refused(String),
    /// Lowered; not run (no device).
    Lowered,
    /// Lowered and ran, with the interpreter's result.
    Correct,
    /// Lowered and ran (or failed to run) with another result (what went wrong).
    Wrong(String),
}

/// The space's verdict on `m`.
pub fn space_verdict(space: &Space, m: &Mapping) -> SpaceVerdict {
    let e = space.explain(m).expect("one code per map");
    if e.valid {
        let local = if space.local_size_count() > 0 { e.local_sizes } else { None };
        return SpaceVerdict::Valid(local);
    }
    let mut families: Vec<Family> = e.violated.iter().map(|c| c.family).collect();
    families.sort_unstable();
    families.dedup();
    if families.iter().all(|f| f.is_preference()) {
        SpaceVerdict::Preference(families)
    } else {
        SpaceVerdict::Hard(families)
    }
}

/// Applies `m`, lowers it with `local` (the space's proposal for a valid mapping, else code
/// generation's default, as `mapsat emit --mapping` does) and the profile's limits, and runs
/// it on the first OpenCL device when `device`.
pub fn outcome(
    case: &Case,
    space: &Space,
    m: &Mapping,
    local: Option<Vec<i64>>,
    profile: &Profile,
    device: bool,
) -> Outcome {
    let q = match space.apply(&case.program, m) {
        Ok(q) => q,
        Err(e) => return Outcome::Refused(format!("apply: {e}")),
    };
    let opts = mapsat_codegen::Options {
        sizes: case.sizes.clone(),
        local: local.clone(),
        max_work_group_size: Some(profile.max_work_group_size as i64),
        max_work_item_sizes: Some(profile.max_work_item_sizes.map(|x| x as i64)),
    };
    if let Err(e) = mapsat_codegen::lower(&q, &opts) {
        return Outcome::Refused(format!("codegen: {e}"));
    }
    if !device {
        return Outcome::Lowered;
    }
    let cfg = RunConfig { warmup: 0, runs: 1, check: false, ..RunConfig::default() };
    match measure::run(&q, &case.sizes, local, &case.inputs, DeviceSpec::OpenCl(0, 0), &cfg) {
        Ok(r) => {
            let c = r.output.compare(&case.want, 1e-3, 1e-4);
            if c.ok {
                Outcome::Correct
            } else {
                Outcome::Wrong(format!("{} wrong elements, first {:?}", c.mismatches, c.first_mismatch))
            }
        }
        Err(e) => Outcome::Wrong(format!("run: {e}")),
    }
}
