//! mapsat-rewrite: equality saturation over the mapsat IR.
//!
//! A checked program is added to an egg e-graph ([`lang::Lift`], [`convert`]), rewritten by rules
//! grouped by topic ([`rules`]: split-join, map fusion and fission, β- and η-reduction,
//! reduce-map fusion, partial reduction, map interchange through transposes, slides and pads
//! through maps, overlapped slide tiling in one and two dimensions, stage inlining,
//! vectorization, and the 2-D tiling and register-blocking macros, each a sequence of those
//! rules, [`rules::sequence`]) under explicit budgets
//! ([`saturate`]), and K structurally diverse variants are extracted as ordinary programs
//! ([`extract`]; with memory variants, [`staging`], and the per-tile producers they stage,
//! [`compute_at`], the 2-D tiled form, [`tiled2d`], and seeds per kind of variant, [`kinds`]),
//! each checked symbolically and at the sizes.
//! Every variant computes what the input computes (the rules are property-tested against the
//! interpreter, `tests/rules.rs`, and so are the extracted variants, `tests/variants.rs`).
//!
//! Binders are de Bruijn indices, as in the IR's arena. Shifting and β-reduction are computed on
//! terms (a class's smallest representative) in one module, [`binders`], never with explicit
//! substitution nodes; "x not free in f" conditions read the may-free analysis
//! ([`analysis`]). Conditions on sizes (a split divides the length) are decided at concrete sizes
//! (the program's defaults and the caller's values): variants are valid at those sizes, as the
//! mapping constraints are.
//!
//! ```
//! let p = mapsat_ir::parse("size N = 64\ndef sum(xs: [f32]N) : f32 = reduce(add, 0.0, xs)").unwrap();
//! let out = mapsat_rewrite::rewrite(&p, &mapsat_rewrite::Options::default()).unwrap();
//! assert!(out.variants.len() > 1);
//! ```

pub mod analysis;
pub mod binders;
pub mod compute_at;
pub mod convert;
pub mod cost;
pub mod error;
pub mod extract;
pub mod infer;
pub mod kinds;
pub mod lang;
pub mod phases;
pub mod rules;
pub mod saturate;
pub mod stage_choice;
pub mod staging;
pub mod tiled2d;
pub mod tiles;

pub use error::RewriteError;
pub use extract::Variant;
pub use saturate::{Budget, Report, StopReason};

use mapsat_ir::{Program, Sizes};

/// Default number of variants.
pub const VARIANTS: usize = 8;
/// Default split factors (each used only where it divides the length).
pub const SPLIT_FACTORS: [i64; 5] = [2, 4, 8, 16, 32];

/// Options of [`rewrite`].
#[derive(Clone, Debug)]
pub struct Options {
    /// Size values (the program's defaults fill the others).
    pub sizes: Sizes,
    /// Saturation budgets.
    pub budget: Budget,
    /// How many variants to extract.
    pub variants: usize,
    /// Candidate split factors (each used only where it divides the length).
    pub split_factors: Vec<i64>,
    /// Also split by the program's tunable sizes (size variables declared with a range and in no
    /// parameter's type), where they divide the length at the sizes.
    pub tunable_splits: bool,
    /// Also split by new tunable tile sizes, one per map of the input ([`tiles`]), declared in
    /// the variants that use them.
    pub new_tile_sizes: bool,
    /// Names the new tile sizes and vector width must not take, besides the program's sizes and
    /// parameters: those of programs the variants are to be joined with
    /// ([`mapsat_ir::stages::join`]).
    pub reserved: Vec<String>,
    /// Largest array rank a rule may create (default: one more than the largest rank of an
    /// array in the input).
    pub max_rank: Option<usize>,
    /// Only the rules with these names (all rules when `None`), in one phase.
    pub rules: Option<Vec<String>>,
    /// Guided saturation ([`phases`]): for a program with `let`s, the stage phase first (its
    /// stages inlined into their consumers), then, for a program with slides, one iteration of
    /// 2-D tiling, then every rule but vectorization, then the vectorization phase. Without, one
    /// phase of every rule.
    pub guided: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            sizes: Sizes::new(),
            budget: Budget::default(),
            variants: VARIANTS,
            split_factors: SPLIT_FACTORS.to_vec(),
            tunable_splits: true,
            new_tile_sizes: true,
            reserved: Vec::new(),
            max_rank: None,
            rules: None,
            guided: true,
        }
    }
}

/// The result of [`rewrite`].
#[derive(Clone, Debug)]
pub struct Outcome {
    /// What saturation did (all phases together).
    pub report: Report,
    /// What each phase of saturation did.
    pub phases: Vec<phases::PhaseReport>,
    /// The variants, the best by static cost first.
    pub variants: Vec<Variant>,
    /// Candidate terms that did not type-check (0 unless a rule is unsound).
    pub rejected: usize,
    /// Time spent extracting the variants.
    pub extract_time: std::time::Duration,
}

/// Saturates a program with every rule and extracts diverse variants.
pub fn rewrite(p: &Program, opts: &Options) -> Result<Outcome, RewriteError> {
    let mut sizes = p.resolve_sizes(&opts.sizes)?;
    let info = mapsat_ir::check::check(p)?;
    mapsat_ir::check::check_with_sizes(p, &sizes)?;
    let tiles = match opts.new_tile_sizes {
        true => tiles::new_tile_sizes(p, &info, &sizes, &opts.split_factors, &opts.reserved),
        false => Vec::new(),
    };
    for t in &tiles {
        sizes.insert(t.size.name.clone(), t.size.default.unwrap_or(1));
    }
    let width = opts.new_tile_sizes.then(|| {
        let mut taken: std::collections::BTreeSet<String> = sizes.iter().map(|(k, _)| k.to_string()).collect();
        taken.extend(p.params.iter().map(|q| q.name.clone()));
        taken.extend(opts.reserved.iter().cloned());
        tiles::new_vector_width(&taken)
    });
    if let Some(w) = &width {
        sizes.insert(w.name.clone(), w.default.unwrap_or(4));
    }
    let mut eg = analysis::LiftGraph::new(analysis::Meta {
        params: p.params.iter().map(|q| q.ty.clone()).collect(),
        sizes: sizes.clone(),
    });
    let (root, names) = convert::add_program(&mut eg, p, &info);
    let max_rank = opts.max_rank.unwrap_or_else(|| default_rank(&info));
    let mut factors: Vec<mapsat_ir::Size> = opts.split_factors.iter().map(|n| mapsat_ir::Size::constant(*n)).collect();
    if opts.tunable_splits {
        factors.extend(tunable(p).iter().map(|v| mapsat_ir::Size::var(v)));
    }
    let var = |t: &tiles::Tile| mapsat_ir::Size::var(&t.size.name);
    let by_label = tiles.iter().filter(|t| t.reduction.is_none()).map(|t| (t.label.clone(), var(t))).collect();
    let reduction_tiles = tiles.iter().filter_map(|t| Some((t.reduction?, var(t)))).collect();
    let vector_width = width.as_ref().map(|w| w.name.clone());
    let params = rules::Params {
        sizes: sizes.clone(),
        factors,
        tiles: by_label,
        reduction_tiles,
        max_rank,
        vector_width,
        root: Some(root),
    };
    let all = rules::all();
    let all_names: Vec<String> = all.iter().map(|r| r.name().to_string()).collect();
    if let Some(bad) = opts.rules.iter().flatten().find(|n| !all_names.contains(n)) {
        return Err(RewriteError::Options(format!("no rule `{bad}` (rules: {})", all_names.join(", "))));
    }
    // An iteration budget of 0 asks for no rewriting at all.
    let guided = opts.guided && opts.rules.is_none() && opts.budget.iterations > 0;
    let last = phases::Phase {
        name: "rules".into(),
        rules: opts
            .rules
            .clone()
            .unwrap_or_else(|| all_names.into_iter().filter(|n| in_rules_phase(n, guided)).collect()),
        iterations: opts.budget.iterations,
        reserve: match guided {
            true => opts.budget.nodes / phases::VECTOR_RESERVE,
            false => 0,
        },
    };
    let has_let = p.nodes.iter().any(|n| matches!(n, mapsat_ir::Node::Let(..)));
    let has_slide = p.nodes.iter().any(|n| matches!(n, mapsat_ir::Node::Prim(mapsat_ir::Prim::Slide(..))));
    let mut plan = match guided && has_let {
        true => vec![phases::stages(opts.budget.nodes)],
        false => vec![],
    };
    if guided && has_slide {
        plan.push(phases::tiles2d(opts.budget.nodes));
    }
    plan.push(last);
    if guided {
        plan.push(phases::vectorize());
    }
    let (report, phases) = phases::run(&mut eg, &all, &params, &opts.budget, &plan);
    let src = extract::Source { template: p, root, names: &names, sizes: &sizes, tiles: &tiles, width: width.as_ref() };
    let start = std::time::Instant::now();
    let (mut variants, rejected) = extract::variants(&eg, &src, opts.variants);
    for v in &mut variants {
        tiles::pin_defaults(&mut v.program, &sizes);
        v.stages = stage_choice::of(p, &v.program);
    }
    Ok(Outcome { report, phases, variants, rejected, extract_time: start.elapsed() })
}

/// True for the rules of the main phase: all but `map-fission-nest` (`map-fission` makes every
/// term it makes), the steps of the macros only ([`rules::STEPS_ONLY`]) and, when guided, the
/// vectorization phase's ([`phases::vectorize`]).
fn in_rules_phase(name: &str, guided: bool) -> bool {
    name != "map-fission-nest"
        && !rules::STEPS_ONLY.contains(&name)
        && !(guided && phases::VECTOR_RULES.contains(&name))
}

/// The program's tunable sizes: declared with a range and in no parameter's type.
pub fn tunable(p: &Program) -> Vec<String> {
    let in_params: Vec<String> = p.params.iter().flat_map(|q| q.ty.size_vars()).collect();
    p.sizes.iter().filter(|v| v.max.is_some() && !in_params.contains(&v.name)).map(|v| v.name.clone()).collect()
}

/// One more than the largest rank of an array in the program.
fn default_rank(info: &mapsat_ir::check::TypeInfo) -> usize {
    info.types.iter().flatten().map(infer::Ty::rank_of).max().unwrap_or(0) + 1
}
