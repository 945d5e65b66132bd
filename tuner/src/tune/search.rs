//! The search: batches of candidates chosen by a cost model, measured, learned from.
//!
//! Each batch of the guided search (AutoTVM's loop, with Anderson's hierarchical sampling for
//! the first batch):
//!
//! 1. **Pool.** Random valid candidates: a random point of the tunable sizes, one of the
//!    mappings sampled from that point's space, a random valid work-group size, and, for a
//!    mapping with `mapLcl` maps, the same candidate with the work group that covers those
//!    loops (one iteration per work item; `Task::covering`), which uniform draws over the many
//!    valid sizes almost never give (issue #8). After the first
//!    batch, also a local search inside the valid space: the best measured candidates are
//!    mutated (a tunable moved to a neighbouring value, a map's code changed, the work-group
//!    size changed, a covering one kept covering; every move is checked against the space at
//!    its sizes), the mutants scored
//!    by the learned model, the best mutated again, for a few generations (an evolutionary
//!    search on the model).
//! 2. **Score.** The first batch is ranked by the analytical model (zero-shot) or by a prior
//!    model loaded from an earlier tune; later batches by the model retrained on every
//!    measurement so far, blended with the analytical model while it has few measurements
//!    ([`Blend`]).
//! 3. **Choose.** Half of the first batch is the analytical model's best; the other half takes
//!    structurally different candidates (the mapping's levels, S/F/V/L/W/G per map), the best of
//!    each structure in turn. Later batches take the best by score with a cap per structure. A
//!    few percent (`epsilon`) of every batch is uniformly random.
//! 4. **Measure** each (in the worker process), log it, and retrain.
//!
//! A batch depends only on the seed, its number and the measurements of earlier batches, so
//! a resumed tune chooses the same candidates as one that was never stopped.
//!
//! Random valid sampling (the baseline) draws candidates the same way as the pool and measures
//! them in order; a kernel the guided search measured is reused, not measured again.

use super::log::Trial;
use super::model::{spearman, Analytic, Blend, CostModel, Learned, TrainingSet};
use super::task::{Built, Candidate, Rejection, Task};
use super::{BatchAccuracy, Progress, TuneOptions};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// Parents of the local search (best measured candidates).
const PARENTS: usize = 8;
/// Mutants per parent and generation.
const CHILDREN: usize = 8;
/// Generations of the local search.
const GENERATIONS: usize = 3;

/// A measured candidate of the guided search.
#[derive(Clone, Debug)]
pub(crate) struct Done {
    pub(crate) trial: Trial,
    pub(crate) candidate: Candidate,
    pub(crate) features: Vec<f64>,
}

/// Counts of the candidates that were built but not measured.
#[derive(Clone, Debug, Default)]
pub struct Rejections {
    /// Not valid at their sizes (after lowering: over a device limit).
    pub invalid: u64,
    /// Some of their reasons (at most 5).
    pub invalid_examples: Vec<String>,
    /// Refused by code generation although the space accepts them.
    pub codegen: u64,
    /// Some of code generation's messages (at most 5).
    pub codegen_examples: Vec<String>,
}

/// The state of a tune between batches.
pub(crate) struct Search<'a> {
    pub(crate) task: &'a Task,
    pub(crate) opts: &'a TuneOptions,
    pub(crate) guided: Vec<Done>,
    pub(crate) random: Vec<Trial>,
    pub(crate) model: Option<Learned>,
    pub(crate) rejections: Rejections,
    pub(crate) accuracy: Vec<BatchAccuracy>,
    pub(crate) build_s: f64,
}

impl<'a> Search<'a> {
    pub(crate) fn new(task: &'a Task, opts: &'a TuneOptions) -> Search<'a> {
        Search {
            task,
            opts,
            guided: Vec::new(),
            random: Vec::new(),
            model: None,
            rejections: Rejections::default(),
            accuracy: Vec::new(),
            build_s: 0.0,
        }
    }

    /// Builds a candidate, counting rejections.
    pub(crate) fn build(&mut self, c: &Candidate) -> Option<Built> {
        let t = Instant::now();
        let r = self.task.build(c);
        self.build_s += t.elapsed().as_secs_f64();
        let (count, examples, msg) = match r {
            Ok(b) => return Some(b),
            Err(Rejection::Invalid(msg)) => (&mut self.rejections.invalid, &mut self.rejections.invalid_examples, msg),
            Err(Rejection::Codegen(msg)) => (&mut self.rejections.codegen, &mut self.rejections.codegen_examples, msg),
        };
        *count += 1;
        let m = match self.task.mapping_text(&c.codes) {
            m if m.is_empty() => "the empty mapping".to_string(),
            m => m,
        };
        let at = if c.tuning.is_empty() { String::new() } else { format!(" at {}", c.tuning) };
        let example = format!("{m}{at}: {msg}");
        if examples.len() < 5 && !examples.contains(&example) {
            examples.push(example);
        }
        None
    }

    fn rng(&self, batch: u64, salt: u64) -> StdRng {
        StdRng::seed_from_u64(self.opts.seed ^ batch.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt)
    }

    /// Kernels measured by the guided search before batch `b`.
    fn seen_before(&self, b: u64) -> HashSet<String> {
        self.guided.iter().filter(|d| d.trial.batch < b).map(|d| d.trial.kernel.clone()).collect()
    }

    /// Up to `n` random valid candidates whose kernels are not in `seen`.
    fn random_pool(&mut self, n: usize, rng: &mut StdRng, seen: &HashSet<String>) -> Vec<Built> {
        let mut out: Vec<Built> = Vec::new();
        let mut hashes = HashSet::new();
        for _ in 0..n * 4 {
            if out.len() >= n {
                break;
            }
            let Some(c) = self.task.random_candidate(rng) else { break };
            // With its work group covering its mapLcl loops too (see `Task::covering`).
            let cover = self.task.covering(&c);
            for c in std::iter::once(c).chain(cover) {
                if let Some(b) = self.build(&c) {
                    if !seen.contains(&b.hash) && hashes.insert(b.hash.clone()) {
                        out.push(b);
                    }
                }
            }
        }
        out.truncate(n);
        out
    }

    /// The local search on the model (see the module documentation).
    fn evolve(&mut self, model: &dyn CostModel, rng: &mut StdRng, avoid: &HashSet<String>) -> Vec<Built> {
        let mut best: Vec<&Done> = self.guided.iter().filter(|d| d.trial.ok()).collect();
        best.sort_by(|a, b| a.trial.rank_ms().total_cmp(&b.trial.rank_ms()));
        let mut parents: Vec<Candidate> = best.iter().take(PARENTS).map(|d| d.candidate.clone()).collect();
        let mut out: Vec<Built> = Vec::new();
        let mut hashes: HashSet<String> = avoid.clone();
        for _ in 0..GENERATIONS {
            let mut children = Vec::new();
            for p in &parents {
                for _ in 0..CHILDREN {
                    let Some(c) = self.task.mutate(p, rng) else { continue };
                    if let Some(b) = self.build(&c) {
                        if hashes.insert(b.hash.clone()) {
                            children.push(b);
                        }
                    }
                }
            }
            if children.is_empty() {
                break;
            }
            let scores = model.score(&children.iter().map(|b| b.features.clone()).collect::<Vec<_>>());
            let mut order: Vec<usize> = (0..children.len()).collect();
            order.sort_by(|&i, &j| scores[j].total_cmp(&scores[i]));
            parents = order.iter().take(PARENTS).map(|&i| children[i].candidate.clone()).collect();
            out.extend(children);
        }
        out
    }

    /// The candidates of guided batch `b` (of `n` trials), with the learned model's scores.
    pub(crate) fn batch(&mut self, b: u64, n: usize) -> Vec<(Built, Option<f64>)> {
        let seen = self.seen_before(b);
        let mut rng = self.rng(b, 0);
        let mut pool = self.random_pool(self.opts.pool, &mut rng, &seen);
        let random_part = pool.len();
        let model = self.model.take();
        if let Some(m) = &model {
            let mut avoid = seen.clone();
            avoid.extend(pool.iter().map(|x| x.hash.clone()));
            let mutants = self.evolve(&Blend { learned: m }, &mut rng, &avoid);
            pool.extend(mutants);
        }
        let rows: Vec<Vec<f64>> = pool.iter().map(|x| x.features.clone()).collect();
        // Chosen by the blend; the learned model's own scores are logged (its accuracy).
        let (scores, learned) = match &model {
            Some(m) => {
                let learned = m.score(&rows);
                (Blend { learned: m }.with_learned(&learned, &rows), Some(learned))
            }
            None => (Analytic.score(&rows), None),
        };
        self.model = model;
        let eps = if n >= 8 { ((n as f64 * self.opts.epsilon).round() as usize).max(1) } else { 0 };
        let mut chosen = choose(&pool, &scores, n.saturating_sub(eps), b == 0);
        let taken: HashSet<usize> = chosen.iter().copied().collect();
        let mut rest: Vec<usize> = (0..random_part).filter(|i| !taken.contains(i)).collect();
        rest.shuffle(&mut rng);
        chosen.extend(rest.into_iter().take(n - chosen.len().min(n)));
        chosen.truncate(n);
        chosen.into_iter().map(|i| (pool[i].clone(), learned.as_ref().map(|l| l[i]))).collect()
    }

    /// Retrains the learned model on the guided trials of batches before `b` (and the prior
    /// model's data).
    pub(crate) fn retrain(&mut self, b: u64, progress: &mut dyn Progress) {
        let done: Vec<&Done> = self.guided.iter().filter(|d| d.trial.batch < b).collect();
        if done.iter().all(|d| !d.trial.ok()) {
            return;
        }
        let mut data = TrainingSet::default();
        let times: Vec<Option<f64>> = done.iter().map(|d| d.trial.ok().then(|| d.trial.rank_ms())).collect();
        data.add_group(done.iter().map(|d| d.features.clone()).collect(), &times);
        if let Some(prior) = &self.opts.prior {
            data = prior.data.merged(&data);
        }
        match Learned::fit(data) {
            Ok(m) => self.model = Some(m),
            Err(e) => progress.note(&format!("the learned model was not retrained: {e}")),
        }
    }

    /// How well each model ranked batch `b` before it was measured.
    pub(crate) fn score_batch(&mut self, b: u64) {
        let done: Vec<&Done> = self.guided.iter().filter(|d| d.trial.batch == b && d.trial.ok()).collect();
        if done.len() < 3 {
            return;
        }
        let speed: Vec<f64> = done.iter().map(|d| -d.trial.rank_ms()).collect();
        let analytic: Vec<f64> = done.iter().map(|d| -d.trial.predicted_ms).collect();
        let learned: Option<Vec<f64>> = done.iter().map(|d| d.trial.learned_score).collect();
        self.accuracy.push(BatchAccuracy {
            batch: b,
            measured: done.len(),
            analytic_spearman: spearman(&analytic, &speed),
            learned_spearman: learned.map(|l| spearman(&l, &speed)),
        });
    }

    /// A candidate for the random baseline whose kernel is not one of `drawn` (the baseline's
    /// draws before it: replaying a resumed tune's draws, only those before each one).
    pub(crate) fn random_candidate(&mut self, rng: &mut StdRng, drawn: &HashSet<String>) -> Option<Built> {
        for _ in 0..64 {
            let c = self.task.random_candidate(rng)?;
            if let Some(b) = self.build(&c) {
                if !drawn.contains(&b.hash) {
                    return Some(b);
                }
            }
        }
        None
    }

    /// The guided trial that measured this kernel.
    pub(crate) fn guided_of(&self, hash: &str) -> Option<&Trial> {
        self.guided.iter().map(|d| &d.trial).find(|t| t.kernel == hash)
    }
}

/// Indices of `n` pool members. `first`: half the best by score, then the rest by structure in
/// turn (the best of every structure not yet chosen, then the second best, ...). Otherwise by
/// score with at most a quarter of the batch (and at least 2) per structure.
fn choose(pool: &[Built], scores: &[f64], n: usize, first: bool) -> Vec<usize> {
    let mut order: Vec<usize> = (0..pool.len()).collect();
    order.sort_by(|&i, &j| scores[j].total_cmp(&scores[i]).then(pool[i].hash.cmp(&pool[j].hash)));
    let mut buckets: Vec<(String, Vec<usize>)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for &i in &order {
        let key = pool[i].structure();
        let k = *at.entry(key.clone()).or_insert_with(|| {
            buckets.push((key, Vec::new()));
            buckets.len() - 1
        });
        buckets[k].1.push(i);
    }
    let mut out: Vec<usize> = Vec::new();
    if first {
        out.extend(order.iter().take(n / 2));
        let mut rank = 0;
        while out.len() < n && buckets.iter().any(|(_, b)| b.len() > rank) {
            let next: Vec<usize> =
                buckets.iter().filter_map(|(_, b)| b.get(rank)).filter(|i| !out.contains(i)).copied().collect();
            out.extend(next.into_iter().take(n - out.len()));
            rank += 1;
        }
        return out;
    }
    let cap = (n / 4).max(2);
    let mut per: HashMap<String, usize> = HashMap::new();
    for &i in &order {
        if out.len() >= n {
            break;
        }
        let c = per.entry(pool[i].structure()).or_insert(0);
        if *c < cap {
            *c += 1;
            out.push(i);
        }
    }
    // Fill up past the caps when there are few structures.
    for &i in &order {
        if out.len() >= n {
            break;
        }
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mapsat_constraints::Code;
    use mapsat_ir::Sizes;

    /// Issue #8: the guided pool holds, next to each candidate with `mapLcl` maps, the same
    /// candidate with the work group that covers its `mapLcl` loops (for matmul_tiled at
    /// 256, `tM=64,tN=8` with `C=L1,D=L0`: `[8,64,1]`, 5x faster than any other kernel
    /// measured). Drawn uniformly from 28 valid sizes, it was in almost no pool.
    #[test]
    fn the_pool_holds_work_groups_that_cover_the_local_maps() {
        let task = crate::tune::task::tests::example_task("matmul_tiled.lift", &[("M", 256), ("K", 256), ("N", 256)]);
        let tuning = Sizes::new().with("tK", 16).with("tM", 64).with("tN", 8);
        let codes = task.parse_mapping(&tuning, "A=W0,B=W1,C=L1,D=L0,E=S,F=S").unwrap();
        let c = Candidate { tuning, codes, local: vec![2, 4, 1] };
        assert_eq!(task.covering(&c).unwrap().local, vec![8, 64, 1]);

        let opts = TuneOptions::default();
        let mut search = Search::new(&task, &opts);
        let mut rng = search.rng(0, 0);
        let pool = search.random_pool(48, &mut rng, &HashSet::new());
        let lcl: Vec<&Built> =
            pool.iter().filter(|b| b.candidate.codes.iter().any(|c| matches!(c, Code::Lcl(_)))).collect();
        assert!(lcl.len() >= 8, "{} candidates with mapLcl maps", lcl.len());
        let covering = lcl.iter().filter(|b| task.covering(&b.candidate).is_none()).count();
        assert!(covering * 2 >= lcl.len(), "{covering} of {} cover their mapLcl loops", lcl.len());
    }
}
