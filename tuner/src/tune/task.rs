//! A tuning task: one program at its problem sizes on one device profile, and its candidates.
//!
//! A [`Candidate`] is a point of the tunable sizes ([`super::params`]), a mapping (one code per
//! map) and a work-group size. Each point has its own mapping space, generated at the point's
//! sizes with the device's limits, so that every candidate is valid *at its own sizes*:
//! divisibility, local memory, work-group size and barrier conditions are evaluated there. The
//! work-group size is the space's local sizes when the mapping has `mapLcl` maps (they must
//! divide those loops), and otherwise a free choice checked by code generation. A candidate is
//! built (applied, lowered, printed) into a [`Built`] kernel with its counts, the analytical
//! model's prediction and its feature vector.

use super::analytic::{lanes_of, predict, Prediction};
use super::features::features;
use super::params::{self, Tunable};
use super::stats::KernelStats;
use super::TuneError;
use mapsat_codegen::{Dialect, Manifest};
use mapsat_constraints::{Code, Mapping, Options, Space};
use mapsat_ir::profile::Profile;
use mapsat_ir::{Program, Sizes};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Why a point has no concrete result shape: the program does not type-check at its sizes, or
/// the result is too large for the interpreter that checks every candidate.
#[derive(Debug)]
enum NoShape {
    Type(String),
    TooLarge(String),
}

impl std::fmt::Display for NoShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoShape::Type(e) | NoShape::TooLarge(e) => f.write_str(e),
        }
    }
}

/// Mappings sampled at the first point: the pool candidates draw from at every point (a
/// mapping of the pool is used at a point only where that point's space accepts it).
const POOL_MAPPINGS: usize = 512;
/// Mappings sampled at a point where no mapping of the pool is valid.
const MAPPINGS_PER_POINT: usize = 32;
/// Pool mappings tried at a point before sampling its own.
const POOL_TRIES: usize = 16;
/// Random points tried before concluding that no point has a valid mapping.
const POINT_TRIES: usize = 200;

/// Points of the grid tried in order, after [`POINT_TRIES`] random ones, where valid points are
/// sparse (tile sizes that divide a prime or odd size): at most this many, spread over it.
const GRID_POINTS: usize = 4096;

/// One candidate of a task.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Candidate {
    /// Values of the tunable sizes.
    pub tuning: Sizes,
    /// One code per map, in the order of [`Task::labels`].
    pub codes: Vec<Code>,
    /// The work-group size given to code generation (empty: its default).
    pub local: Vec<i64>,
}

/// A candidate lowered to a kernel, with what the models need.
#[derive(Clone, Debug)]
pub struct Built {
    /// The candidate.
    pub candidate: Candidate,
    /// Its mapping as text, `A=W0,B=L0,...`.
    pub mapping: String,
    /// The kernel source.
    pub source: String,
    /// The kernel's manifest.
    pub manifest: Manifest,
    /// Hash of the source (which names its sizes and launch shape).
    pub hash: String,
    /// What the kernel does.
    pub stats: KernelStats,
    /// The analytical model's prediction.
    pub prediction: Prediction,
    /// The feature vector.
    pub features: Vec<f64>,
}

impl Built {
    /// The structure of the mapping, for diversity: each map's level (S, F, V, L, W, G).
    pub fn structure(&self) -> String {
        self.candidate.codes.iter().map(|c| c.to_string().chars().next().unwrap_or('?')).collect()
    }
}

/// Why a candidate was not built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// Not valid at its sizes (the space, or a device limit after lowering).
    #[error("not valid at its sizes: {0}")]
    Invalid(String),
    /// Code generation refused a mapping the space accepts (a disagreement between the two).
    #[error("code generation refused it: {0}")]
    Codegen(String),
}

/// The space at one point, and mappings sampled from it when the pool had none valid there.
struct Point {
    space: Space,
    mappings: Vec<Mapping>,
}

/// A program at its problem sizes on a device profile: see the module documentation.
pub struct Task {
    /// The program (high level: its maps are mapped by the candidates).
    pub program: Program,
    /// Values of every size variable that is not tunable.
    pub problem: Sizes,
    /// The tunable sizes.
    pub tunables: Vec<Tunable>,
    /// The device's limits and rates.
    pub profile: Profile,
    /// The kernel language.
    pub dialect: Dialect,
    /// The sequential-map fusion heuristic (rule 8) in the spaces.
    pub fusion: bool,
    /// OpenCL kernels are built with [`mapsat_codegen::REASSOCIATE`] (see [`Task::reassociating`]).
    pub reassociate: bool,
    /// Labels of the maps that take a code.
    pub labels: Vec<String>,
    /// A point with valid mappings (the program's defaults when they are one).
    pub first_point: Sizes,
    /// The shape of the result at the first point: every point must give this shape (tiles
    /// that do not divide the data change it).
    pub result_shape: Vec<usize>,
    /// Mappings sampled at the first point.
    pool: Vec<Mapping>,
    /// Hash of the program, its problem sizes, the options and the device profile.
    pub hash: String,
    points: RefCell<HashMap<Sizes, Option<Rc<Point>>>>,
    /// [`Task::shaped_points`], once computed.
    shaped: std::cell::OnceCell<Vec<Sizes>>,
    seed: u64,
}

/// Does `m` satisfy every constraint of `space` that does not involve local sizes?
fn valid(space: &Space, m: &Mapping) -> bool {
    space.evaluate(m).map(|(v, _)| v.is_empty()).unwrap_or(false)
}

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

impl Task {
    /// The task of `program` at the `given` sizes (the program's defaults for the others,
    /// tunable sizes excepted) on a device described by `profile`. A program without a map
    /// that computes (it only reduces or rearranges data) has one mapping, the empty one: one
    /// work item runs it, and only its tunable sizes are searched ([`Task::with_a_choice`]
    /// refuses it when it has none).
    pub fn new(
        program: Program,
        given: &Sizes,
        profile: Profile,
        dialect: Dialect,
        fusion: bool,
        seed: u64,
    ) -> Result<Task, TuneError> {
        mapsat_ir::check::check(&program).map_err(|e| TuneError::Program(e.message))?;
        // A parameter no kernel takes makes every candidate a refusal: said once, first.
        mapsat_codegen::check_params(&program).map_err(|e| TuneError::Program(e.to_string()))?;
        let mut problem = given.clone();
        for v in &program.sizes {
            if let (false, Some(d)) = (problem.contains(&v.name), v.default) {
                problem.insert(v.name.clone(), d);
            }
        }
        let tunables = params::tunables(&program, given, &problem);
        for t in &tunables {
            problem.remove(&t.name);
        }
        let tunable = |name: &str| tunables.iter().any(|t| t.name == name);
        if let Some(v) = program.sizes.iter().find(|v| !problem.contains(&v.name) && !tunable(&v.name)) {
            return Err(TuneError::Program(format!("size `{0}` has no value: give --size {0}=VALUE", v.name)));
        }
        // The whole profile: a calibrated one may share its name with the built-in one.
        let device = serde_json::to_string(&profile).unwrap_or_else(|_| profile.name.clone());
        let text = format!("{}\n{problem}\nfusion={fusion}\n{device}", mapsat_ir::print(&program));
        let mut task = Task {
            hash: hex(text.as_bytes()),
            program,
            problem,
            tunables,
            profile,
            dialect,
            fusion,
            reassociate: false,
            labels: Vec::new(),
            first_point: Sizes::new(),
            result_shape: Vec::new(),
            pool: Vec::new(),
            points: RefCell::new(HashMap::new()),
            shaped: std::cell::OnceCell::new(),
            seed,
        };
        task.first_point = task.find_first_point()?;
        let p = task.point(&task.first_point).ok_or_else(|| TuneError::NoValidMapping("no first point".into()))?;
        task.labels = p.space.labels().to_vec();
        task.pool = p.space.sample(POOL_MAPPINGS, task.seed).map_err(|e| TuneError::Program(e.to_string()))?;
        task.pool.extend(p.mappings.iter().cloned());
        Ok(task)
    }

    /// The first point (the program's defaults when they have a valid mapping, else a random
    /// point that has one); it sets [`Task::result_shape`]: the defaults' result shape, or,
    /// where the defaults do not type-check at the problem's sizes (a tile size that does not
    /// divide), that of the first random point that has a valid mapping.
    fn find_first_point(&mut self) -> Result<Sizes, TuneError> {
        let default = params::default_point(&self.tunables);
        let mut shape_fixed = false;
        if let Some(p) = &default {
            if let Some(shape) = self.shape_at(p) {
                self.result_shape = shape;
                shape_fixed = true;
                if self.point(p).is_some() {
                    return Ok(p.clone());
                }
            }
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed);
        let random: Vec<Sizes> = (0..POINT_TRIES).map(|_| params::random_point(&self.tunables, &mut rng)).collect();
        let grid: Vec<Sizes> = params::spread_points(&self.tunables, GRID_POINTS).collect();
        for p in random.into_iter().chain(grid) {
            if !shape_fixed && self.shape_at(&p).is_none() {
                continue;
            }
            if !shape_fixed {
                self.result_shape = self.shape_at(&p).unwrap_or_default();
                self.points.borrow_mut().clear();
            }
            if self.point(&p).is_some() {
                return Ok(p);
            }
        }
        // Say why the program's own sizes fail: a result the interpreter cannot compute is no
        // candidate either (every candidate is checked against it), whatever the mappings.
        let at = params::default_point(&self.tunables).unwrap_or_default();
        match self.shape_or_error(&at) {
            Err(NoShape::TooLarge(e)) => Err(TuneError::Program(format!(
                "cannot tune at {}: {e} (every candidate is checked against the interpreter's result)",
                self.sizes_at(&at)
            ))),
            // Without tunable sizes, an ill-typed program (a split its sizes do not divide) is
            // the program's error, not the mappings'.
            Err(NoShape::Type(e)) if self.tunables.is_empty() => {
                Err(TuneError::Program(format!("at {}: {e}", self.problem.or(&at))))
            }
            _ if self.tunables.is_empty() => Err(TuneError::NoValidMapping(self.why_not(&at))),
            _ => Err(TuneError::NoValidMapping(format!(
                "none at the points of its tunable sizes tried ({}); at their defaults, {}",
                params::ranges(&self.tunables),
                self.why_not(&at)
            ))),
        }
    }

    /// The point at which the interpreter computes the expected result of every candidate.
    /// Every point computes the same function, so it is the one cheapest to interpret: from
    /// the first point, each tunable in turn at its largest value that keeps the result's
    /// shape (fewer, larger tiles and blocks are fewer steps of the interpreter: the tunable
    /// conv at 56x56, 64 -> 64 took 28 s there against 77 s at its defaults). It needs no
    /// valid mapping: the interpreter runs the program as written.
    pub fn reference_point(&self) -> Sizes {
        let mut at = self.first_point.clone();
        for t in &self.tunables {
            for v in t.values.iter().rev() {
                let mut p = at.clone();
                p.insert(t.name.clone(), *v);
                if self.shape_at(&p).is_some_and(|s| s == self.result_shape) {
                    at = p;
                    break;
                }
            }
        }
        at
    }

    /// The concrete shape of the result at a point (`None` when it does not type-check or is
    /// too large for the interpreter: [`Task::shape_or_error`] says which).
    fn shape_at(&self, tuning: &Sizes) -> Option<Vec<usize>> {
        self.shape_or_error(tuning).ok()
    }

    /// The concrete shape of the result at a point, or why it has none.
    fn shape_or_error(&self, tuning: &Sizes) -> Result<Vec<usize>, NoShape> {
        let sizes = self.sizes_at(tuning);
        let info = mapsat_ir::check::check_with_sizes(&self.program, &sizes).map_err(|e| NoShape::Type(e.message))?;
        let shape = mapsat_ir::interp::concrete_shape(&info.result, &sizes);
        shape.map(|(_, s)| s).map_err(|e| NoShape::TooLarge(e.to_string()))
    }

    /// Why a point has no valid mapping.
    fn why_not(&self, at: &Sizes) -> String {
        let sizes = self.problem.or(at);
        let shape = match self.shape_or_error(at) {
            Ok(s) => s,
            Err(e) => return format!("at {sizes}: {e}"),
        };
        if shape != self.result_shape {
            return format!(
                "at {sizes} the result has shape {shape:?}, not {:?} (tiles that do not divide the data)",
                self.result_shape
            );
        }
        match self.space_at(&sizes) {
            Err(e) => format!("at {sizes}: {e}"),
            Ok(_) => format!("at {sizes} no mapping satisfies the constraints (see `mapsat space`)"),
        }
    }

    /// The task when it has something to choose, a map or a tunable size; else
    /// [`TuneError::NoMaps`]: a whole program without either is not tuned (its one candidate
    /// runs with `mapsat run`), where a kernel of several is, so that the sequence is timed
    /// whole.
    pub fn with_a_choice(self) -> Result<Task, TuneError> {
        if !self.labels.is_empty() || !self.tunables.is_empty() {
            return Ok(self);
        }
        let at = self.sizes_at(&self.first_point);
        let why = mapsat_constraints::Error::NoMaps;
        // A program without sizes is not "at " nothing.
        Err(TuneError::NoMaps(if at.is_empty() { why.to_string() } else { format!("at {at}: {why}") }))
    }

    fn space_at(&self, sizes: &Sizes) -> Result<Space, mapsat_constraints::Error> {
        let options = Options {
            fusion: self.fusion,
            profile: Some(self.profile.clone()),
            sizes: sizes.clone(),
            empty_without_maps: true,
            ..Options::default()
        };
        Space::generate(&self.program, options)
    }

    /// Every size value of a candidate at this point.
    pub fn sizes_at(&self, tuning: &Sizes) -> Sizes {
        self.problem.or(tuning)
    }

    /// The space at a point and some of its mappings; `None` when the point has none.
    fn point(&self, tuning: &Sizes) -> Option<Rc<Point>> {
        if let Some(p) = self.points.borrow().get(tuning) {
            return p.clone();
        }
        let sizes = self.sizes_at(tuning);
        let point = (|| {
            if self.shape_at(tuning)? != self.result_shape {
                return None;
            }
            let space = self.space_at(&sizes).ok()?;
            // Most pool mappings are valid at most points: sample only where none is.
            let mut mappings: Vec<Mapping> =
                self.pool.iter().take(POOL_TRIES).filter(|m| valid(&space, m)).cloned().collect();
            if mappings.is_empty() {
                let seed = self.seed ^ u64::from_str_radix(&hex(sizes.to_string().as_bytes())[..15], 16).unwrap_or(0);
                mappings = space.sample(MAPPINGS_PER_POINT, seed).ok()?;
            }
            (!mappings.is_empty()).then(|| Rc::new(Point { space, mappings }))
        })();
        self.points.borrow_mut().insert(tuning.clone(), point.clone());
        point
    }

    /// The mapping of a candidate as text.
    pub fn mapping_text(&self, codes: &[Code]) -> String {
        self.labels.iter().zip(codes).map(|(l, c)| format!("{l}={c}")).collect::<Vec<_>>().join(",")
    }

    /// Parses a mapping (`A=W0,...`) at a point.
    pub fn parse_mapping(&self, tuning: &Sizes, text: &str) -> Result<Vec<Code>, Rejection> {
        let p = self.point(tuning).ok_or_else(|| Rejection::Invalid(self.why_not(tuning)))?;
        p.space.parse_mapping(text).map(|m| m.codes).map_err(|e| Rejection::Invalid(e.to_string()))
    }

    /// The valid work-group sizes of a mapping that has `mapLcl` maps (`None` otherwise).
    fn lcl_sizes(&self, space: &Space, m: &Mapping) -> Option<Vec<Vec<i64>>> {
        m.codes.iter().any(|c| matches!(c, Code::Lcl(_))).then(|| space.local_sizes(m).unwrap_or_default())
    }

    /// A work-group size for a mapping: one of the space's local sizes with `mapLcl` maps, a
    /// random power-of-two shape within the device's limits for `mapGlb` ones, none otherwise.
    fn random_local(&self, space: &Space, m: &Mapping, rng: &mut impl Rng) -> Option<Vec<i64>> {
        if let Some(ls) = self.lcl_sizes(space, m) {
            return ls.choose(rng).cloned();
        }
        let used: Vec<usize> =
            m.codes.iter().filter_map(|c| if let Code::Glb(d) = c { Some(*d as usize) } else { None }).collect();
        let Some(dims) = used.iter().max().map(|d| d + 1) else { return Some(Vec::new()) };
        let max = self.profile.max_work_group_size as i64;
        for _ in 0..32 {
            // Dimensions no map uses get 1: more work items there would only idle.
            let l: Vec<i64> = (0..dims)
                .map(|d| {
                    let cap = (self.profile.max_work_item_sizes[d] as i64).min(if d == 0 { 256 } else { 16 });
                    if used.contains(&d) {
                        1i64 << rng.gen_range(0..=cap.max(1).ilog2())
                    } else {
                        1
                    }
                })
                .collect();
            if l.iter().product::<i64>() <= max {
                return Some(l);
            }
        }
        Some(vec![1; dims])
    }

    /// The candidate with a work-group size when it has none and its mapping needs one (it
    /// has `mapLcl` maps): the space's valid size with the most work items.
    pub fn complete_local(&self, c: Candidate) -> Candidate {
        let Some(p) = self.point(&c.tuning) else { return c };
        let m = Mapping { codes: c.codes.clone() };
        match self.lcl_sizes(&p.space, &m) {
            Some(ls) if c.local.is_empty() => {
                let local = ls.into_iter().max_by_key(|l| l.iter().product::<i64>()).unwrap_or_default();
                Candidate { local, ..c }
            }
            _ => c,
        }
    }

    /// The candidate with the work-group size that gives its `mapLcl` loops one iteration per
    /// work item where the device allows it (the space's suggested size: the most work items,
    /// at most each dimension's longest `mapLcl` loop); `None` when its mapping has no
    /// `mapLcl` map or the candidate already has that size. Random draws rarely give it: the
    /// valid sizes are many (every divisor in every dimension) and mostly small.
    pub fn covering(&self, c: &Candidate) -> Option<Candidate> {
        let p = self.point(&c.tuning)?;
        let m = Mapping { codes: c.codes.clone() };
        if !m.codes.iter().any(|x| matches!(x, Code::Lcl(_))) {
            return None;
        }
        let local = p.space.suggested_local_size(&m).ok()??;
        (local != c.local && self.local_ok(&p.space, &m, &local)).then(|| Candidate { local, ..c.clone() })
    }

    /// Is `local` a valid work-group size for `m` in `space`?
    fn local_ok(&self, space: &Space, m: &Mapping, local: &[i64]) -> bool {
        if m.codes.iter().any(|c| matches!(c, Code::Lcl(_))) {
            space.valid_with_local_sizes(m, local).unwrap_or(false)
        } else {
            local.iter().product::<i64>() <= self.profile.max_work_group_size as i64
        }
    }

    /// A mapping valid at a point: from the pool when one of a few draws is valid there, else
    /// one of the point's own samples.
    fn mapping_at(&self, p: &Point, rng: &mut impl Rng) -> Option<Mapping> {
        for _ in 0..POOL_TRIES {
            let m = self.pool.choose(rng)?;
            if valid(&p.space, m) {
                return Some(m.clone());
            }
        }
        p.mappings.choose(rng).cloned()
    }

    /// A random valid candidate: a random point, a mapping valid there, a random work-group
    /// size (`None` when no point has a valid mapping).
    pub fn random_candidate(&self, rng: &mut impl Rng) -> Option<Candidate> {
        for k in 0..2 * POINT_TRIES {
            // Past the random draws, points of the grid where the result has its shape (the
            // valid points may be a few of many).
            let tuning = match k < POINT_TRIES {
                true => params::random_point(&self.tunables, rng),
                false => self.shaped_points().choose(rng)?.clone(),
            };
            let Some(p) = self.point(&tuning) else { continue };
            let m = self.mapping_at(&p, rng)?;
            let Some(local) = self.random_local(&p.space, &m, rng) else { continue };
            return Some(Candidate { tuning, codes: m.codes, local });
        }
        None
    }

    /// The points of the grid ([`GRID_POINTS`] at most) at which the result has its shape.
    fn shaped_points(&self) -> &[Sizes] {
        self.shaped.get_or_init(|| {
            params::spread_points(&self.tunables, GRID_POINTS)
                .filter(|p| self.shape_at(p).is_some_and(|s| s == self.result_shape))
                .collect()
        })
    }

    /// A valid candidate next to `c`: one tunable moved, one map's code changed, or the
    /// work-group size changed (see the module documentation of [`super::search`]).
    pub fn mutate(&self, c: &Candidate, rng: &mut impl Rng) -> Option<Candidate> {
        let choice = rng.gen_range(0..10);
        if choice < 3 && !self.tunables.is_empty() {
            let tuning = params::neighbour(&self.tunables, &c.tuning, rng)?;
            let p = self.point(&tuning)?;
            let keep = Mapping { codes: c.codes.clone() };
            let m = if valid(&p.space, &keep) { keep } else { self.mapping_at(&p, rng)? };
            // A parent whose work group covers its mapLcl loops keeps covering them.
            if c.codes == m.codes && self.covering(c).is_none() {
                if let Some(n) =
                    self.covering(&Candidate { tuning: tuning.clone(), codes: m.codes.clone(), local: Vec::new() })
                {
                    return Some(n);
                }
            }
            return self.with_local(&p.space, tuning, m, &c.local, rng);
        }
        let p = self.point(&c.tuning)?;
        if choice < 7 {
            for _ in 0..16 {
                let i = rng.gen_range(0..c.codes.len());
                let id = p.space.ids().nth(i)?;
                let code = *p.space.domain(id).choose(rng)?;
                if code == c.codes[i] {
                    continue;
                }
                let mut codes = c.codes.clone();
                codes[i] = code;
                let m = Mapping { codes };
                if valid(&p.space, &m) {
                    if let Some(n) = self.with_local(&p.space, c.tuning.clone(), m, &c.local, rng) {
                        return Some(n);
                    }
                }
            }
            return None;
        }
        let m = Mapping { codes: c.codes.clone() };
        if rng.gen_bool(0.25) {
            if let Some(n) = self.covering(c) {
                return Some(n);
            }
        }
        let local = match self.lcl_sizes(&p.space, &m) {
            Some(ls) => ls.choose(rng)?.clone(),
            None if c.local.is_empty() => return None,
            None => {
                let mut l = c.local.clone();
                let d = rng.gen_range(0..l.len());
                l[d] = if rng.gen_bool(0.5) || l[d] == 1 { l[d] * 2 } else { l[d] / 2 };
                l
            }
        };
        self.local_ok(&p.space, &m, &local).then(|| Candidate { tuning: c.tuning.clone(), codes: m.codes, local })
    }

    /// `m` at `tuning` with `local` if it is valid there, else a random valid work-group size.
    fn with_local(
        &self,
        space: &Space,
        tuning: Sizes,
        m: Mapping,
        local: &[i64],
        rng: &mut impl Rng,
    ) -> Option<Candidate> {
        let local = if self.local_ok(space, &m, local) && !local.is_empty() {
            local.to_vec()
        } else {
            self.random_local(space, &m, rng)?
        };
        Some(Candidate { tuning, codes: m.codes, local })
    }

    /// Hash of the program's text alone (the task's hash also covers its sizes and options).
    pub fn text_hash(&self) -> String {
        hex(mapsat_ir::print(&self.program).as_bytes())
    }

    /// The task with its OpenCL kernels built with [`mapsat_codegen::REASSOCIATE`]: the device
    /// compiler may reorder floating-point sums (and vectorize them); every kernel is still
    /// checked against the interpreter within the tolerance.
    pub fn reassociating(mut self) -> Task {
        self.reassociate = true;
        self.hash = hex(format!("{}\nreassociate", self.hash).as_bytes());
        self
    }

    /// The candidate a trial of the log measured, built again.
    pub fn rebuild(&self, t: &super::log::Trial) -> Result<Built, Rejection> {
        let codes = self.parse_mapping(&t.tuning, &t.mapping)?;
        self.build(&Candidate { tuning: t.tuning.clone(), codes, local: t.local.clone() })
    }

    /// The mapped program of a candidate, with its sizes as the defaults (so that `mapsat run`
    /// reproduces the kernel).
    pub fn mapped_program(&self, c: &Candidate) -> Result<Program, Rejection> {
        let p = self.point(&c.tuning).ok_or_else(|| Rejection::Invalid(self.why_not(&c.tuning)))?;
        let m = Mapping { codes: c.codes.clone() };
        let mut q = p.space.apply(&self.program, &m).map_err(|e| Rejection::Codegen(e.to_string()))?;
        let sizes = self.sizes_at(&c.tuning);
        for v in q.sizes.iter_mut() {
            v.default = sizes.get(&v.name).or(v.default);
        }
        // Its vector widths at these sizes, as its defaults now say.
        let q = mapsat_ir::widths::specialize(&q, &sizes).map_err(Rejection::Invalid)?.into_owned();
        Ok(q)
    }

    /// Builds a candidate (see the module documentation).
    pub fn build(&self, c: &Candidate) -> Result<Built, Rejection> {
        let p = self.point(&c.tuning).ok_or_else(|| Rejection::Invalid(self.why_not(&c.tuning)))?;
        let m = Mapping { codes: c.codes.clone() };
        match p.space.evaluate(&m) {
            Ok((violated, _)) if !violated.is_empty() => return Err(Rejection::Invalid(violated[0].text.clone())),
            Err(e) => return Err(Rejection::Invalid(e.to_string())),
            Ok(_) => {}
        }
        if !self.local_ok(&p.space, &m, &c.local) {
            return Err(Rejection::Invalid(format!("work-group size {:?} is not valid with this mapping", c.local)));
        }
        let q = p.space.apply(&self.program, &m).map_err(|e| Rejection::Codegen(e.to_string()))?;
        let local = (!c.local.is_empty()).then(|| c.local.clone());
        let opts = mapsat_codegen::Options::for_profile(self.sizes_at(&c.tuning), local, &self.profile);
        // A launch beyond the profile's limits (a work group's private memory, known only after
        // lowering) is not valid at these sizes; any other refusal is a disagreement.
        let kernel = mapsat_codegen::lower(&q, &opts).map_err(|e| match e.kind {
            mapsat_codegen::CodegenErrorKind::LaunchLimit(_) => Rejection::Invalid(e.to_string()),
            _ => Rejection::Codegen(e.to_string()),
        })?;
        let mem = kernel.memory();
        if mem.local_bytes > self.profile.local_mem_bytes {
            return Err(Rejection::Invalid(format!(
                "{} bytes of local memory per work group; {} has {}",
                mem.local_bytes, self.profile.name, self.profile.local_mem_bytes
            )));
        }
        let source = mapsat_codegen::print(&kernel, self.dialect).map_err(|e| Rejection::Codegen(e.to_string()))?;
        let mut manifest =
            mapsat_codegen::manifest(&kernel, self.dialect, &format!("{}.{}", kernel.name, self.dialect.extension()));
        manifest.build_options = mapsat_codegen::build_options(self.dialect, self.reassociate);
        let stats = KernelStats::of(&kernel, lanes_of(&self.profile, !manifest.build_options.is_empty()));
        let prediction = predict(&stats, &self.profile);
        let features = features(&stats, &kernel.launch, &prediction, &c.codes, &self.profile);
        Ok(Built {
            mapping: self.mapping_text(&c.codes),
            hash: hex(format!("{}\n{source}", manifest.build_options).as_bytes()),
            candidate: c.clone(),
            source,
            manifest,
            stats,
            prediction,
            features,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The OpenCL task of `examples/FILE` at the `given` sizes on the pocl-cpu profile.
    pub(crate) fn example_task(file: &str, given: &[(&str, i64)]) -> Task {
        let path = format!("{}/../examples/{file}", env!("CARGO_MANIFEST_DIR"));
        let p = mapsat_ir::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
        let given: Sizes = given.iter().map(|(k, v)| (*k, *v)).collect();
        let profile = Profile::builtin("pocl-cpu").unwrap();
        Task::new(p, &given, profile, Dialect::OpenCl, true, 3).expect("a task")
    }

    /// At a size its default tile sizes do not divide, the tunable conv still has a task: its
    /// first point is one whose tiles cover the whole output (`tH`, `tW` dividing 14).
    #[test]
    fn defaults_that_do_not_tile_the_problem_give_way_to_a_point_that_does() {
        let task = example_task("conv_blocked.lift", &[("inH", 14), ("inW", 14), ("inChs", 8), ("outChs", 8)]);
        assert_eq!(task.result_shape, vec![14, 14, 8]);
        let (th, tw) = (task.first_point.get("tH").unwrap(), task.first_point.get("tW").unwrap());
        assert!(14 % th == 0 && 14 % tw == 0, "{:?}", task.first_point);
    }

    /// The expected result is computed at the largest tiles and blocks that keep the result's
    /// shape, and it is the first point's result.
    #[test]
    fn the_reference_point_has_the_largest_tiles_and_the_same_result() {
        let task = example_task("conv_blocked.lift", &[("inH", 12), ("inW", 12), ("inChs", 4), ("outChs", 8)]);
        let at = task.reference_point();
        // tH and tW divide 12 (at most 64: 12 itself), oB divides 8.
        assert_eq!((at.get("tH"), at.get("tW"), at.get("oB")), (Some(12), Some(12), Some(8)), "{at:?}");
        let eval = |p: &Sizes| {
            let sizes = task.sizes_at(p);
            let inputs = mapsat_ir::interp::random_inputs(&task.program, &sizes, 5).unwrap();
            mapsat_ir::interp::eval(&task.program, &sizes, &inputs).unwrap()
        };
        let (a, b) = (eval(&at), eval(&task.first_point));
        assert_eq!(a.shape, b.shape);
        let c = a.compare(&b, 1e-5, 1e-5);
        assert!(c.ok, "max abs diff {}", c.max_abs_diff);
    }

    /// A work group whose private memory is beyond the profile's `private_group_bytes` (it
    /// crashed pocl's worker) is not valid at its sizes, not a disagreement with the space; the
    /// same candidate with a smaller group is built.
    #[test]
    fn a_work_group_over_the_private_memory_limit_is_not_valid() {
        let task = example_task("conv_hwio.lift", &[("inH", 28), ("inW", 28), ("inChs", 32), ("outChs", 32)]);
        let tuning: Sizes = [("tH", 7), ("tW", 7)].into_iter().collect();
        let codes = task.parse_mapping(&tuning, "TY=G1,TX=G0,O=S,Z=S,A=S").expect("mapping");
        let big = Candidate { tuning: tuning.clone(), codes: codes.clone(), local: vec![128, 16] };
        match task.build(&big) {
            Err(Rejection::Invalid(why)) => assert!(why.contains("private_group_bytes"), "{why}"),
            other => panic!("{:?}", other.map(|b| b.features.len())),
        }
        assert!(task.build(&Candidate { tuning, codes, local: vec![4, 4] }).is_ok());
    }
}
