//! The two verdicts on one mapping of one program: the space's (valid, invalid only by its
//! preferences, or invalid by a family needed for correctness) and code generation's (applied
//! and lowered, or refused), and, for a lowered one, what it computes on the device.

use mapsat_codegen::{Dialect, Manifest};
use mapsat_constraints::{Family, Mapping, Space};
use mapsat_ir::interp::Tensor;
use mapsat_ir::profile::Profile;
use mapsat_ir::{Program, Sizes};
use mapsat_tuner::measure::{self, DeviceSpec, RunConfig, Session};
use std::collections::HashMap;

/// A program with what running it needs: its sizes, random inputs and the interpreter's result.
pub struct Case {
    /// A name for messages.
    pub name: String,
    /// The program (high level: every map abstract).
    pub program: Program,
    /// The hand-mapped program it was read back from, if it was one.
    pub written: Option<Program>,
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

/// Lowers and runs the mappings of one kernel: one device session (which builds each distinct
/// kernel once), and the outcome of each distinct kernel and launch shape, run once.
pub struct Runner {
    session: Option<Session>,
    seen: HashMap<(String, String), Outcome>,
}

impl Runner {
    /// A runner on the first OpenCL device, or one that only lowers when `device` is false.
    pub fn new(device: bool) -> Runner {
        let session = device.then(|| Session::open(DeviceSpec::OpenCl(0, 0)).expect("the OpenCL device"));
        Runner { session, seen: HashMap::new() }
    }

    /// Applies `m`, lowers it with `local` (the space's proposal for a valid mapping, else code
    /// generation's default, as `mapsat emit --mapping` does) and the profile's limits, and
    /// runs it when there is a device.
    pub fn outcome(
        &mut self,
        case: &Case,
        space: &Space,
        m: &Mapping,
        local: Option<Vec<i64>>,
        profile: &Profile,
    ) -> Outcome {
        let q = match space.apply(&case.program, m) {
            Ok(q) => q,
            Err(e) => return Outcome::Refused(format!("apply: {e}")),
        };
        let opts = mapsat_codegen::Options::for_profile(case.sizes.clone(), local, profile);
        let (src, manifest) = match mapsat_codegen::emit(&q, &opts, Dialect::OpenCl) {
            Ok(k) => k,
            Err(e) => return Outcome::Refused(format!("codegen: {e}")),
        };
        let Some(session) = self.session.as_mut() else { return Outcome::Lowered };
        let key = (src, format!("{:?}", manifest.launch));
        if let Some(o) = self.seen.get(&key) {
            return o.clone();
        }
        let o = run(session, &key.0, &manifest, case, &q);
        self.seen.insert(key, o.clone());
        o
    }
}

/// Runs a lowered kernel once and compares its output with the interpreter's.
fn run(session: &mut Session, src: &str, manifest: &Manifest, case: &Case, q: &Program) -> Outcome {
    let cfg = RunConfig { warmup: 0, runs: 1, check: false, ..RunConfig::default() };
    let shape = match measure::result_shape(q, &case.sizes) {
        Ok(s) => s,
        Err(e) => return Outcome::Wrong(format!("result shape: {e}")),
    };
    match session.run(src, manifest, &case.inputs, shape, &cfg) {
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
