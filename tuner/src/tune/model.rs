//! Cost models behind one small trait: the analytical model ([`super::analytic`]) and a learned
//! model, gradient-boosted trees with a listwise ranking loss (ListNet, through the pure-Rust
//! `perpetual` crate), trained on measured candidates.
//!
//! Training data are groups of candidates measured on one task (one program at one problem
//! size on one device); within a group a candidate's relevance is `log2(best time / its time)`
//! (0 for the best, −1 for twice as slow), and a failed candidate gets the group's worst
//! relevance minus one. A saved model keeps its training data, so that a later tune of another
//! program can train on them and its own measurements together (transfer).

use super::features::{FEATURES_VERSION, NAMES};
use super::forest::Forest;
use perpetual::objective::Objective;
use perpetual::{Matrix, PerpetualBooster};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Ranks candidates from their feature vectors: higher scores are predicted faster; only the
/// order of the scores means something.
pub trait CostModel {
    /// Scores of these feature rows.
    fn score(&self, rows: &[Vec<f64>]) -> Vec<f64>;
    /// A short name for reports.
    fn name(&self) -> &'static str;
}

/// The analytical model as a [`CostModel`]: the negated predicted time (a feature).
pub struct Analytic;

/// Position of the analytical prediction in the feature vector.
fn predicted_index() -> usize {
    NAMES.iter().position(|n| *n == "predicted_ms").unwrap_or(0)
}

impl CostModel for Analytic {
    fn score(&self, rows: &[Vec<f64>]) -> Vec<f64> {
        let i = predicted_index();
        rows.iter().map(|r| -r.get(i).copied().unwrap_or(0.0)).collect()
    }

    fn name(&self) -> &'static str {
        "analytical"
    }
}

/// Why a model could not be trained, saved or loaded.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The booster refused the data.
    #[error("training the model failed: {0}")]
    Train(String),
    /// The file could not be read or written.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// Measured candidates grouped by task (rows of one group are contiguous).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TrainingSet {
    /// Feature rows.
    pub rows: Vec<Vec<f64>>,
    /// Relevance of each row within its group (higher is faster).
    pub relevance: Vec<f64>,
    /// Sizes of the groups, in row order.
    pub groups: Vec<u64>,
}

impl TrainingSet {
    /// Adds one task's candidates: feature rows and measured times in ms (`None`: failed).
    pub fn add_group(&mut self, rows: Vec<Vec<f64>>, times_ms: &[Option<f64>]) {
        let best = times_ms.iter().flatten().copied().fold(f64::INFINITY, f64::min);
        let rel: Vec<Option<f64>> = times_ms.iter().map(|t| t.map(|t| (best / t.max(1e-12)).log2())).collect();
        let worst = rel.iter().flatten().copied().fold(0.0f64, f64::min);
        self.relevance.extend(rel.iter().map(|r| r.unwrap_or(worst - 1.0)));
        self.groups.push(rows.len() as u64);
        self.rows.extend(rows);
    }

    /// Why the set is not one [`TrainingSet::add_group`] builds, if it is not: rows of the
    /// features' width, finite values, one relevance per row, groups that cover the rows.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(r) = self.rows.iter().find(|r| r.len() != NAMES.len()) {
            return Err(format!("a row of {} features, not {}", r.len(), NAMES.len()));
        }
        if self.rows.iter().flatten().chain(&self.relevance).any(|x| !x.is_finite()) {
            return Err("a value that is not a finite number".into());
        }
        if self.relevance.len() != self.rows.len() {
            return Err(format!("{} relevances for {} rows", self.relevance.len(), self.rows.len()));
        }
        let covered = self.groups.iter().try_fold(0u64, |n, g| n.checked_add(*g).filter(|_| *g > 0));
        if covered != Some(self.rows.len() as u64) {
            return Err(format!("groups {:?} do not cover {} rows", self.groups, self.rows.len()));
        }
        Ok(())
    }

    /// Both sets, this one's groups first.
    pub fn merged(&self, other: &TrainingSet) -> TrainingSet {
        let mut out = self.clone();
        out.rows.extend(other.rows.iter().cloned());
        out.relevance.extend(other.relevance.iter().copied());
        out.groups.extend(other.groups.iter().copied());
        out
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True without rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// Column-major data of feature rows, as `perpetual` takes it.
fn columns(rows: &[Vec<f64>]) -> Vec<f64> {
    let cols = NAMES.len();
    let mut data = vec![0.0; rows.len() * cols];
    for (i, r) in rows.iter().enumerate() {
        for (j, x) in r.iter().take(cols).enumerate() {
            data[j * rows.len() + i] = *x;
        }
    }
    data
}

/// The learned model: see the module documentation.
#[derive(Clone, Serialize, Deserialize)]
pub struct Learned {
    /// The feature layout the model was trained with.
    pub features_version: u32,
    /// Not saved: [`Learned::load`] trains it again from `data` (deterministic).
    #[serde(skip)]
    booster: PerpetualBooster,
    /// The booster's trees, flattened for prediction (`None`: the booster predicts).
    #[serde(skip)]
    forest: Option<Forest>,
    /// What it was trained on.
    pub data: TrainingSet,
}

/// Rows from which prediction runs on every core.
const PARALLEL_ROWS: usize = 1024;

/// The booster's complexity budget (perpetual's single hyper-parameter).
const BUDGET: f32 = 1.0;

impl Learned {
    /// Trains on `data` (deterministic for the same data).
    pub fn fit(data: TrainingSet) -> Result<Learned, ModelError> {
        if data.is_empty() {
            return Err(ModelError::Train("no measured candidate to learn from".into()));
        }
        let x = columns(&data.rows);
        let matrix = Matrix::new(&x, data.rows.len(), NAMES.len());
        let mut booster = PerpetualBooster::default()
            .set_objective(Objective::ListNetLoss)
            .set_budget(BUDGET)
            .set_seed(0)
            .set_num_threads(Some(1));
        booster
            .fit(&matrix, &data.relevance, None, Some(&data.groups))
            .map_err(|e| ModelError::Train(e.to_string()))?;
        let forest = Forest::of(&booster);
        Ok(Learned { features_version: FEATURES_VERSION, booster, forest, data })
    }

    /// Writes the model (and its training data) as JSON.
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        let err = |m: String| ModelError::File { path: path.display().to_string(), message: m };
        let text = serde_json::to_string(self).map_err(|e| err(e.to_string()))?;
        mapsat_ir::files::write(path, text).map_err(|e| err(e.to_string()))
    }

    /// Reads a model written by [`Learned::save`], refusing one of another feature layout or
    /// whose training data do not agree with themselves. The model is trained again from those
    /// data (training is deterministic: the same model as saved): the saved trees are not
    /// trusted, since a file edited or damaged elsewhere could index features that do not
    /// exist or loop.
    pub fn load(path: &Path) -> Result<Learned, ModelError> {
        let err = |m: String| ModelError::File { path: path.display().to_string(), message: m };
        // A model's training rows take about 2 kB each: 256 MiB holds 100,000 trials.
        let text = mapsat_ir::files::read_text(path, 256 << 20).map_err(|e| err(e.to_string()))?;
        let m: Learned = serde_json::from_str(&text).map_err(|e| err(format!("not a mapsat cost model ({e})")))?;
        if m.features_version != FEATURES_VERSION {
            return Err(err(format!(
                "the model uses features of version {}, this mapsat computes version {FEATURES_VERSION}",
                m.features_version
            )));
        }
        m.data.validate().map_err(|e| err(format!("not a valid mapsat cost model: {e}")))?;
        Learned::fit(m.data).map_err(|e| err(e.to_string()))
    }
}

impl CostModel for Learned {
    fn score(&self, rows: &[Vec<f64>]) -> Vec<f64> {
        if let Some(forest) = &self.forest {
            return rows.iter().map(|r| forest.predict(r)).collect();
        }
        if rows.is_empty() {
            return Vec::new();
        }
        let x = columns(rows);
        self.booster.predict(&Matrix::new(&x, rows.len(), NAMES.len()), rows.len() >= PARALLEL_ROWS)
    }

    fn name(&self) -> &'static str {
        "learned"
    }
}

/// Training rows at which [`Blend`] gives the learned model all the weight.
pub const BLEND_ROWS: usize = 48;

/// The learned model while it has been trained on few measurements, blended with the
/// analytical model (its prior): the weighted mean of their ranks, the learned model's weight
/// growing with its training rows up to 1 at [`BLEND_ROWS`]. A model trained on one batch
/// ranks worse than the analytical model (issue #8: on the tiled matmul, batches chosen by it
/// alone spent most of their trials on kernels 10x slower than the best).
pub struct Blend<'a> {
    /// The learned model.
    pub learned: &'a Learned,
}

impl Blend<'_> {
    /// The learned model's weight.
    pub fn weight(&self) -> f64 {
        (self.learned.data.rows.len() as f64 / BLEND_ROWS as f64).min(1.0)
    }

    /// The blend's scores of `rows`, given the learned model's own scores of them.
    pub fn with_learned(&self, learned: &[f64], rows: &[Vec<f64>]) -> Vec<f64> {
        let w = self.weight();
        let learned = ranks(learned);
        if w >= 1.0 {
            return learned;
        }
        let analytic = ranks(&Analytic.score(rows));
        learned.iter().zip(&analytic).map(|(l, a)| w * l + (1.0 - w) * a).collect()
    }
}

impl CostModel for Blend<'_> {
    fn score(&self, rows: &[Vec<f64>]) -> Vec<f64> {
        self.with_learned(&self.learned.score(rows), rows)
    }

    fn name(&self) -> &'static str {
        "learned, blended with the analytical model"
    }
}

/// The ranks of a sequence, from 0 (smallest); ties get their average rank.
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&i, &j| v[i].total_cmp(&v[j]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0;
        for k in i..=j {
            r[idx[k]] = avg;
        }
        i = j + 1;
    }
    r
}

/// Spearman's rank correlation of two sequences (ties get their average rank); 0 for fewer
/// than two pairs.
pub fn spearman(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    if n < 2 {
        return 0.0;
    }
    let (ra, rb) = (ranks(&a[..n]), ranks(&b[..n]));
    let mean = (n as f64 - 1.0) / 2.0;
    let (mut num, mut da, mut db) = (0.0, 0.0, 0.0);
    for i in 0..n {
        num += (ra[i] - mean) * (rb[i] - mean);
        da += (ra[i] - mean).powi(2);
        db += (rb[i] - mean).powi(2);
    }
    if da == 0.0 || db == 0.0 {
        0.0
    } else {
        num / (da * db).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_of_known_orders() {
        assert!((spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]) - 1.0).abs() < 1e-12);
        assert!((spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]) + 1.0).abs() < 1e-12);
        // Hand-computed: ranks (1,2,3,4) and (2,1,4,3): d² = 4, rho = 1 - 6*4/(4*15) = 0.6.
        assert!((spearman(&[1.0, 2.0, 3.0, 4.0], &[2.0, 1.0, 4.0, 3.0]) - 0.6).abs() < 1e-12);
        assert_eq!(spearman(&[1.0], &[1.0]), 0.0);
    }

    /// A model file whose trees were damaged (a feature index beyond the rows, as an edit or
    /// another version could leave) loads as the model of its data; data that do not agree
    /// with themselves are refused, never handed to the booster.
    #[test]
    fn a_damaged_model_file_is_retrained_or_refused() {
        let mut t = TrainingSet::default();
        let rows: Vec<Vec<f64>> =
            (0..12).map(|i| (0..NAMES.len()).map(|j| ((i * 7 + j * 3) % 11) as f64).collect()).collect();
        let times: Vec<Option<f64>> = (0..12).map(|i| Some(1.0 + ((i * 5) % 12) as f64)).collect();
        t.add_group(rows.clone(), &times);
        let model = Learned::fit(t).unwrap();
        let dir = std::env::temp_dir().join(format!("mapsat-model-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.json");
        model.save(&path).unwrap();
        let mut json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        fn damage(v: &mut serde_json::Value) {
            match v {
                serde_json::Value::Object(m) => m.iter_mut().for_each(|(k, v)| match k.as_str() {
                    "split_feature" => *v = serde_json::json!(99999),
                    _ => damage(v),
                }),
                serde_json::Value::Array(a) => a.iter_mut().for_each(damage),
                _ => {}
            }
        }
        // A file with trees (as models were saved before they were trained again on load),
        // damaged.
        json["booster"] = serde_json::to_value(&model.booster).unwrap();
        damage(&mut json["booster"]);
        assert!(json.to_string().contains("\"split_feature\":99999"));
        std::fs::write(&path, json.to_string()).unwrap();
        let loaded = Learned::load(&path).unwrap();
        assert_eq!(loaded.score(&rows), model.score(&rows));
        for (field, bad) in [("groups", serde_json::json!([999])), ("relevance", serde_json::json!([1.0]))] {
            let mut j = json.clone();
            j["data"][field] = bad;
            std::fs::write(&path, j.to_string()).unwrap();
            let e = Learned::load(&path).err().expect("refused").to_string();
            assert!(e.contains("not a valid mapsat cost model"), "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The flattened trees predict what the booster predicts, for rows it was trained on,
    /// rows it never saw and rows with missing (NaN) features.
    #[test]
    fn the_flattened_trees_predict_as_the_booster() {
        use rand::{rngs::StdRng, Rng, SeedableRng};
        let mut rng = StdRng::seed_from_u64(5);
        let row = |rng: &mut StdRng| -> Vec<f64> { (0..NAMES.len()).map(|_| rng.gen_range(0.0..8.0)).collect() };
        let mut t = TrainingSet::default();
        for _ in 0..6 {
            let rows: Vec<Vec<f64>> = (0..40).map(|_| row(&mut rng)).collect();
            let times: Vec<Option<f64>> = rows.iter().map(|r| Some((r[0] - r[3] + r[7] * 0.5).exp())).collect();
            t.add_group(rows, &times);
        }
        let mut rows = t.rows.clone();
        rows.extend((0..200).map(|_| row(&mut rng)));
        for r in rows.iter_mut().step_by(7) {
            r[rng.gen_range(0..8)] = f64::NAN;
        }
        let model = Learned::fit(t).unwrap();
        let forest = model.forest.as_ref().expect("a ranking booster is all trees");
        assert!(forest.trees() > 1, "{} trees", forest.trees());
        let x = columns(&rows);
        let booster = model.booster.predict(&Matrix::new(&x, rows.len(), NAMES.len()), false);
        let flat = model.score(&rows);
        for (b, f) in booster.iter().zip(&flat) {
            assert!((b - f).abs() <= 1e-9 * b.abs().max(1.0), "booster {b}, flattened {f}");
        }
    }

    #[test]
    fn relevance_is_relative_to_the_best() {
        let mut t = TrainingSet::default();
        t.add_group(vec![vec![0.0; NAMES.len()]; 3], &[Some(2.0), Some(1.0), None]);
        assert_eq!(t.relevance, vec![-1.0, 0.0, -2.0]);
        assert_eq!(t.groups, vec![3]);
    }

    #[test]
    fn a_blend_follows_the_analytical_model_until_the_learned_one_has_enough_data() {
        // The measured time grows with feature 0; the analytical prediction with feature 1.
        let p = predicted_index();
        let mut state = 11u64;
        let mut rows = |n: usize| -> Vec<Vec<f64>> {
            (0..n)
                .map(|_| {
                    let mut row: Vec<f64> = (0..NAMES.len())
                        .map(|_| {
                            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                            (state >> 11) as f64 / (1u64 << 53) as f64 * 4.0
                        })
                        .collect();
                    row[p] = row[1];
                    row
                })
                .collect()
        };
        let trained = |rows: Vec<Vec<f64>>| {
            let times: Vec<Option<f64>> = rows.iter().map(|r| Some(r[0].exp())).collect();
            let mut data = TrainingSet::default();
            data.add_group(rows, &times);
            Learned::fit(data).unwrap()
        };
        let test = rows(64);
        let analytic = Analytic.score(&test);
        let few = trained(rows(BLEND_ROWS / 3));
        let blend = Blend { learned: &few };
        assert!((blend.weight() - 1.0 / 3.0).abs() < 1e-12);
        let scores = blend.score(&test);
        assert!(spearman(&scores, &analytic) > spearman(&scores, &few.score(&test)), "{scores:?}");
        // With BLEND_ROWS rows, the learned model alone.
        let enough = trained(rows(BLEND_ROWS));
        let blend = Blend { learned: &enough };
        assert_eq!(blend.weight(), 1.0);
        assert!((spearman(&blend.score(&test), &enough.score(&test)) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn the_learned_model_ranks_a_learnable_order() {
        // Time grows with feature 0 and falls with feature 1; other features are noise.
        let mut data = TrainingSet::default();
        let mut rng_state = 7u64;
        let mut next = || {
            rng_state = rng_state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (rng_state >> 11) as f64 / (1u64 << 53) as f64
        };
        let make = |next: &mut dyn FnMut() -> f64| {
            let mut rows = Vec::new();
            let mut times = Vec::new();
            for _ in 0..64 {
                let row: Vec<f64> = (0..NAMES.len()).map(|_| next() * 4.0).collect();
                times.push(Some((row[0] - row[1] + 5.0).exp()));
                rows.push(row);
            }
            (rows, times)
        };
        for _ in 0..3 {
            let (rows, times) = make(&mut next);
            data.add_group(rows, &times);
        }
        let model = Learned::fit(data).unwrap();
        let (rows, times) = make(&mut next);
        let scores = model.score(&rows);
        let neg_times: Vec<f64> = times.iter().map(|t| -t.unwrap()).collect();
        let rho = spearman(&scores, &neg_times);
        assert!(rho > 0.8, "held-out Spearman {rho}");
    }
}
