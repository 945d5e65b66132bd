//! Issue #9's differential test, both directions: "the space decides validity; code generation
//! lowers every mapping the space accepts, or the difference is a bug in one of them".
//!
//! Programs: every example of `examples/`, every program of the file tests' `kernels/` suite
//! (hand-mapped, read back as the high-level program they map, `readback::unmapped`), and
//! generated pipelines of 2 to 6 stages (`generate.rs`: maps, reductions, slides, zips,
//! transposes, 1-D and 2-D, with random kernel boundaries). A program with kernel boundaries
//! is cut into its kernels (`mapsat_ir::stages`), each a program of its own, with its own
//! random inputs.
//!
//! Mappings, for each kernel: the one written in it (a hand-mapped file test), valid ones
//! sampled by the solver, each of them with one code changed at random (near misses, mostly
//! invalid by one family), and uniformly random assignments of the 12 codes (mostly invalid
//! by several). Each is classified twice:
//!
//! - the space's verdict (`Space::explain`, with the `pocl-cpu` profile): valid, invalid only by
//!   the preference families 4, 5, 7, 8 (`Family::is_preference`: `--mapping` lowers those as
//!   written, with a warning), or invalid by a hard family;
//! - code generation's: `Space::apply` and `mapsat_codegen::lower` (with the profile's limits
//!   and the space's local sizes for a valid mapping, else code generation's default) lower it
//!   or refuse it; a lowered one is run on the first OpenCL device (pocl in CI) and compared
//!   with the interpreter.
//!
//! Disagreements (`tally.rs`), each a bug in the space or in code generation, of which there
//! must be none: valid or preference-invalid but refused, or wrong on the device; hard-invalid,
//! lowered, and wrong on the device (code generation must never emit a wrong kernel: it
//! refuses what it cannot lower correctly); hard-invalid, lowered and correct, unless the
//! families are documented below as stricter than correctness needs, on purpose.
//!
//! # Families stricter than correctness, on purpose
//!
//! Code generation checks what it needs to emit a correct kernel; some hard families say more,
//! and a mapping they alone reject can lower and run correctly. [`documented`] lists them:
//!
//! - Family 9 (vectorization) is a performance rule, not a correctness rule: `V` stands for
//!   vector loads and stores, which code generation emits only for the maps the analysis finds
//!   vectorizable; elsewhere it lowers `mapVec` as a sequential loop, with the right result and
//!   no vectorization. The space keeps `V` for where it means something (a mapping would
//!   otherwise promise a vectorization it does not get, and the search would try the same
//!   sequential kernel twice).
//! - Families 2 and 10 (local memory scoping, synchronizability), alone or with 9, when every
//!   map writing a buffer another map reads runs within one work group (`S`, `V`, `mapLcl`, or
//!   fused into one of these): each work group (or work item) then computes the buffer it reads
//!   itself, so the reads the space rejects ("elements written by other work groups or
//!   threads") find the values they expect: the work is repeated in every group. Where the
//!   repeated writes go to one buffer shared by the threads that repeat them, they race (with
//!   equal values). Code generation refuses that race for global temporaries (`RacyWrite`,
//!   after pocl computed a wrong result for one, issue #9's pipe31; family 10 rejects it too),
//!   not yet for local memory or the output (a temporary mapLcl writes in a single work group
//!   is kept in local memory: `twostage` with `A=L0,B=L1`), which pocl runs correctly here.
//!   The space, which rejects these, is right; code generation is the one to tighten.
//!
//! - Family 1 (private memory scoping), with the above, when each map it names runs within one
//!   work group (`mapLcl`): code generation keeps what such a map writes for the others in
//!   local memory behind a barrier, and copies it into the private variables after it
//!   (`matmul_outer`'s accumulators started by `Z=L2`: `sh_Z`, then `acc_0 = vload16(.., sh_Z)`),
//!   which is correct; the space's rule (private memory written by one thread) is the simpler
//!   contract.
//!
//! Every other hard family is a correctness rule: where code generation lowers a mapping it
//! rejects, the kernel must be wrong (or the family too strict: a disagreement to fix).
//!
//! Sizes: `MAPSAT_DIFFERENTIAL_SAMPLES` valid samples (and as many near misses and random
//! assignments) per kernel, 1 by default; `MAPSAT_DIFFERENTIAL_PROGRAMS` generated pipelines, 6
//! by default (`scripts/test.sh`, and so CI, sets more). The counts are printed
//! (`--no-capture`). Without an OpenCL device the runs are skipped (the verdicts are still
//! compared), unless `MAPSAT_REQUIRE_OPENCL=1`.

#[path = "../common/mod.rs"]
mod common;
mod generate;
mod tally;
mod verdict;

use common::Rng;
use mapsat_constraints::{Code, Error as SpaceError, Family, MapId, Mapping, Options, Space};
use mapsat_ir::profile::Profile;
use mapsat_ir::{Program, Sizes};
use std::collections::HashSet;
use std::path::Path;
use tally::Tally;
use verdict::{Case, SpaceVerdict};

/// Kernels with more input elements than this at their default sizes are left out (the wide
/// file tests, meant to be emitted, not run at their defaults).
const MAX_ELEMENTS: usize = 1 << 16;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// Is the rejection of `m`, a hard-invalid mapping (by `families`) that computes the right
/// result, documented as deliberate (see the module's documentation)?
fn documented(space: &Space, m: &Mapping, families: &[Family]) -> bool {
    use Family::*;
    let hard: Vec<Family> = families.iter().copied().filter(|f| !f.is_preference()).collect();
    if hard == [Vectorization] {
        return true;
    }
    let repeated = hard.iter().all(|f| matches!(f, PrivateScope | LocalScope | Sync | Vectorization));
    let writers_within = space.barriers().iter().all(|b| within_group(space, m, b.writer));
    // Family 1's maps within one work group too (their writes kept in local memory).
    let violated = space.explain(m).map(|e| e.violated).unwrap_or_default();
    let private = violated.iter().filter(|c| c.family == PrivateScope);
    repeated && writers_within && private.flat_map(|c| &c.maps).all(|&id| within_group(space, m, id))
}

/// Does map `id` run within one work group (S, V, mapLcl, or fused into such a map)?
fn within_group(space: &Space, m: &Mapping, id: MapId) -> bool {
    match m[id] {
        Code::Fused => space.parent(id).is_some_and(|p| within_group(space, m, p)),
        c => matches!(c, Code::Seq | Code::Vec | Code::Lcl(_)),
    }
}

/// The programs: name and text.
fn corpus(generated: usize) -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for dir in ["examples", "tests/filetests/kernels"] {
        let mut files: Vec<_> =
            std::fs::read_dir(root.join(dir)).expect("a directory").flatten().map(|e| e.path()).collect();
        files.sort();
        for f in files.iter().filter(|f| f.extension().is_some_and(|e| e == "lift")) {
            let name = format!("{dir}/{}", f.file_name().and_then(|s| s.to_str()).unwrap_or_default());
            out.push((name, std::fs::read_to_string(f).expect("read")));
        }
    }
    for seed in 0..generated as u64 {
        out.push((format!("pipe{seed}"), generate::pipeline(seed)));
    }
    out
}

/// The kernels of a program, each ready to run: `None` for those too large.
fn cases(name: &str, text: &str) -> Vec<Option<Case>> {
    let written = mapsat_ir::parse(text).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    let whole = mapsat_constraints::readback::unmapped(&written);
    // A hand-mapped program's own mapping, stage by stage, is one of the mappings drawn.
    let hand: Vec<Option<Program>> = match mapsat_constraints::readback::is_hand_mapped(&written) {
        true => mapsat_ir::stages::split(&written).expect("stages").into_iter().map(|s| Some(s.program)).collect(),
        false => Vec::new(),
    };
    let mut out = Vec::new();
    for (k, stage) in mapsat_ir::stages::split(&whole).expect("stages").into_iter().enumerate() {
        let p = stage.program;
        let written = hand.get(k).cloned().flatten();
        let sizes = p.resolve_sizes(&Sizes::new()).expect("sizes");
        let inputs = mapsat_ir::interp::random_inputs(&p, &sizes, 9 + k as u64).expect("inputs");
        if inputs.iter().map(|t| t.shape.iter().product::<usize>()).sum::<usize>() > MAX_ELEMENTS {
            out.push(None);
            continue;
        }
        let want = mapsat_ir::interp::eval(&p, &sizes, &inputs).expect("interpreter");
        out.push(Some(Case { name: format!("{name}/{}", p.name), program: p, written, sizes, inputs, want }));
    }
    out
}

/// The mappings drawn for one kernel: the one written in it (a hand-mapped file test), `n`
/// valid samples, a near miss of each, `n` random assignments; distinct.
fn draws(space: &Space, case: &Case, n: usize, seed: u64) -> Vec<Mapping> {
    let mut rng = Rng(seed);
    let valid = space.sample(n, seed).expect("sample");
    let mut out: Vec<Mapping> = case.written.iter().filter_map(|w| space.written_mapping(w).ok()).collect();
    out.extend(valid.iter().cloned());
    for m in &valid {
        let mut near = m.clone();
        let i = rng.below(near.codes.len() as u64) as usize;
        let others: Vec<Code> = Code::ALL.into_iter().filter(|c| *c != near.codes[i]).collect();
        near.codes[i] = rng.pick(&others);
        out.push(near);
    }
    for _ in 0..n {
        out.push(Mapping { codes: (0..space.len()).map(|_| rng.pick(&Code::ALL)).collect() });
    }
    let mut seen = HashSet::new();
    out.retain(|m| seen.insert(m.clone()));
    out
}

/// The seed of a program's draws, from its name (FNV-1a): adding a file to the corpus does not
/// draw other mappings of the others (it did, by their place in the corpus).
fn seed_of(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// Classifies the drawn mappings of one kernel into `tally`.
fn check_kernel(case: &Case, profile: &Profile, n: usize, seed: u64, device: bool, tally: &mut Tally) {
    let options = Options { profile: Some(profile.clone()), ..Options::default() };
    let space = match Space::generate(&case.program, options) {
        Ok(s) => s,
        Err(SpaceError::NoMaps) => return,
        Err(e) => panic!("{}: {e}", case.name),
    };
    tally.kernels += 1;
    let mut runner = verdict::Runner::new(device);
    for m in draws(&space, case, n, seed) {
        let v = verdict::space_verdict(&space, &m);
        let local = match &v {
            SpaceVerdict::Valid(l) => l.clone(),
            _ => None,
        };
        let o = runner.outcome(case, &space, &m, local, profile);
        let doc = match &v {
            SpaceVerdict::Hard(fs) => documented(&space, &m, fs),
            _ => false,
        };
        let generated = case.name.starts_with("pipe");
        tally.record(&v, &o, doc, || {
            let text = if generated { format!("\n{}", mapsat_ir::print(&case.program)) } else { String::new() };
            format!("{} {}{text}", case.name, space.show(&m))
        });
    }
}

#[test]
fn the_space_and_code_generation_agree() {
    let device = common::opencl_present();
    let profile = Profile::builtin("pocl-cpu").expect("pocl-cpu profile");
    let n = env("MAPSAT_DIFFERENTIAL_SAMPLES", 1);
    let mut tally = Tally::default();
    for (name, text) in &corpus(env("MAPSAT_DIFFERENTIAL_PROGRAMS", 6)) {
        tally.programs += 1;
        for case in cases(name, text).into_iter().flatten() {
            check_kernel(&case, &profile, n, seed_of(name), device, &mut tally);
        }
    }
    eprintln!("{tally}");
    assert!(tally.kernels > 0 && tally.mappings > 0);
    assert!(tally.disagreements() == 0, "{} disagreements:\n{}", tally.disagreements(), tally.examples());
}
