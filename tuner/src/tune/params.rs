//! Tuning parameters besides the mapping: the *tunable sizes* of a program, size variables
//! declared with a bounded range (`size tH in 1..64 = 4`) that appear in no parameter type
//! (tile sizes, blocking factors), that the program uses, and that the user did not fix with
//! `--size`.
//!
//! They are enumerated outside the Z3 space (as ATF does): each tunable gets a list of
//! candidate values (powers of two and divisors of the problem sizes, within its range), and a
//! point (one value per tunable) is valid when the program type-checks at those sizes (every
//! `split` divides, every `slide` fits) and its mapping space, generated at those sizes, is not
//! empty. A size written as a vector width (`asVector(vw, xs)`) takes only the values of a
//! width (2, 3, 4, 8, 16). Z3 could hold them too, but every constraint family is generated
//! from concrete lengths, strides and footprints that these values change: one space per point
//! is simpler and exact, and the points are few.

use mapsat_ir::{Program, Sizes};
use rand::Rng;

/// Most candidate values kept per tunable (spread over its list).
pub const MAX_VALUES: usize = 24;

/// One tunable size and its candidate values, in increasing order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tunable {
    /// The size variable.
    pub name: String,
    /// Its candidate values.
    pub values: Vec<i64>,
    /// The program's default, when it is among the values.
    pub default: Option<i64>,
}

/// The values tried of each tunable size, `t in {2, 4, 6, 8}, vw in {2, 4, 8, 16}` (its
/// declared range's powers of two, divisors of the problem sizes and default); a long list is
/// cut in the middle.
pub fn ranges(tunables: &[Tunable]) -> String {
    let values = |t: &Tunable| match t.values.len() {
        0 => format!("{} (no value)", t.name),
        n if n <= 12 => format!("{} in {{{}}}", t.name, join(&t.values)),
        n => format!("{} in {{{}, ..., {}}} ({n} values)", t.name, join(&t.values[..6]), join(&t.values[n - 3..])),
    };
    tunables.iter().map(values).collect::<Vec<_>>().join(", ")
}

fn join(values: &[i64]) -> String {
    values.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
}

/// Names of the size variables that appear in some parameter type.
fn parameter_sizes(p: &Program) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for q in &p.params {
        for v in q.ty.size_vars() {
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

/// The tunable sizes of `p` (see the module documentation); `fixed` are the sizes the user
/// gave, `problem` the problem sizes' values (whose divisors are candidate values).
pub fn tunables(p: &Program, fixed: &Sizes, problem: &Sizes) -> Vec<Tunable> {
    let in_params = parameter_sizes(p);
    let widths = mapsat_ir::widths::vars(p);
    // A size the program declares but does not use (a tile size of another kernel of its
    // pipeline) changes nothing: not tuned.
    let used = p.used_sizes();
    let mut out = Vec::new();
    for v in &p.sizes {
        let Some(max) = v.max else { continue };
        if in_params.contains(&v.name) || fixed.contains(&v.name) || !used.contains(&v.name) {
            continue;
        }
        let lo = v.min.max(1);
        let mut values: Vec<i64> = Vec::new();
        let mut p2 = 1i64;
        while p2 <= max {
            values.push(p2);
            p2 = match p2.checked_mul(2) {
                Some(x) => x,
                None => break,
            };
        }
        for (_, n) in problem.iter() {
            values.extend(divisors(n).into_iter().filter(|d| *d <= max));
        }
        values.extend(v.default);
        values.retain(|x| *x >= lo && *x <= max);
        if widths.contains(&v.name) {
            values.retain(|x| mapsat_ir::widths::lanes(*x).is_ok());
        }
        values.sort_unstable();
        values.dedup();
        let values = thin(values, v.default);
        let default = v.default.filter(|d| values.contains(d));
        out.push(Tunable { name: v.name.clone(), values, default });
    }
    out
}

/// The divisors of `n` (none for `n < 1`; at most the first 64).
fn divisors(n: i64) -> Vec<i64> {
    if n < 1 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut d = 1;
    while d * d <= n && out.len() < 64 {
        if n % d == 0 {
            out.push(d);
            out.push(n / d);
        }
        d += 1;
    }
    out
}

/// At most [`MAX_VALUES`] values, evenly spread, the default kept.
fn thin(values: Vec<i64>, default: Option<i64>) -> Vec<i64> {
    if values.len() <= MAX_VALUES {
        return values;
    }
    let step = values.len() as f64 / MAX_VALUES as f64;
    let mut out: Vec<i64> = (0..MAX_VALUES).map(|i| values[(i as f64 * step) as usize]).collect();
    out.extend(default);
    out.sort_unstable();
    out.dedup();
    out
}

/// A random point: one value per tunable, uniformly from its list.
pub fn random_point(ts: &[Tunable], rng: &mut impl Rng) -> Sizes {
    ts.iter().map(|t| (t.name.clone(), t.values[rng.gen_range(0..t.values.len())])).collect()
}

/// Points spread over the whole grid of the tunables' values: every point when there are at
/// most `n`, else `n` of them at an even stride, in a fixed order.
pub fn spread_points(ts: &[Tunable], n: usize) -> impl Iterator<Item = Sizes> + '_ {
    let total = ts.iter().try_fold(1usize, |acc, t| acc.checked_mul(t.values.len())).unwrap_or(usize::MAX);
    let stride = total.div_ceil(n.max(1)).max(1);
    (0..total.min(n)).map(move |k| {
        let mut index = k.saturating_mul(stride);
        ts.iter()
            .map(|t| {
                let v = t.values[index % t.values.len()];
                index /= t.values.len();
                (t.name.clone(), v)
            })
            .collect()
    })
}

/// The program's defaults as a point, when every tunable has one among its values.
pub fn default_point(ts: &[Tunable]) -> Option<Sizes> {
    ts.iter().map(|t| Some((t.name.clone(), t.default?))).collect()
}

/// A point next to `at`: one tunable moved to a neighbouring value of its list.
pub fn neighbour(ts: &[Tunable], at: &Sizes, rng: &mut impl Rng) -> Option<Sizes> {
    if ts.is_empty() {
        return None;
    }
    let t = &ts[rng.gen_range(0..ts.len())];
    let i = t.values.iter().position(|v| Some(*v) == at.get(&t.name))?;
    let j = if i == 0 || (i + 1 < t.values.len() && rng.gen_bool(0.5)) { i + 1 } else { i - 1 };
    let v = *t.values.get(j)?;
    Some(at.clone().with(t.name.clone(), v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_points_cover_a_small_grid_and_thin_a_large_one() {
        let t = |name: &str, n: i64| Tunable { name: name.into(), values: (1..=n).collect(), default: None };
        let ts = [t("a", 2), t("b", 3), t("c", 4)];
        let all: std::collections::HashSet<String> = spread_points(&ts, 100).map(|p| p.to_string()).collect();
        assert_eq!(all.len(), 24);
        let some: Vec<Sizes> = spread_points(&ts, 5).collect();
        assert_eq!(some.len(), 5);
        assert_eq!(some.iter().map(|p| p.to_string()).collect::<std::collections::HashSet<_>>().len(), 5);
        assert_eq!(spread_points(&[], 10).count(), 1, "no tunable: the one empty point");
    }

    #[test]
    fn tunables_are_ranged_sizes_outside_parameter_types() {
        let p = mapsat_ir::parse(
            "size N = 24, s in 1..12 = 4, t = 2, u in 1..8 = 3\n\
             def f(xs: [f32]N) = join(map(map(fun(x => x * 2.0)), split(s, xs)))",
        )
        .unwrap();
        let problem = Sizes::new().with("N", 24);
        let ts = tunables(&p, &Sizes::new(), &problem);
        let names: Vec<&str> = ts.iter().map(|t| t.name.as_str()).collect();
        // `t` has no range; `N` is a parameter's length; `u` is used nowhere (a size of another
        // kernel of a pipeline: tuning it would change nothing).
        assert_eq!(names, ["s"]);
        // Powers of two and divisors of 24 within 1..12, and the default.
        assert_eq!(ts[0].values, vec![1, 2, 3, 4, 6, 8, 12]);
        assert_eq!(default_point(&ts).unwrap().to_string(), "s=4");
        // Fixed by the user: not tunable.
        assert!(tunables(&p, &Sizes::new().with("s", 6), &problem).is_empty());
        // Used, `u` is tunable, its values within 1..8.
        let q = mapsat_ir::parse(
            "size N = 24, s in 1..12 = 4, u in 1..8 = 3
             def f(xs: [f32]N) = join(map(join, map(split(u), split(s, xs))))",
        );
        let ts = tunables(&q.unwrap(), &Sizes::new(), &problem);
        assert_eq!(ts.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["s", "u"]);
        assert_eq!(ts[1].values, vec![1, 2, 3, 4, 6, 8]);
    }

    #[test]
    fn a_vector_width_takes_only_the_values_of_a_width() {
        let p = mapsat_ir::parse(
            "size N = 24, vw in 1..16 = 4\n\
             def f(xs: [f32]N) = asScalar(map(fun(v => v * v), asVector(vw, xs)))",
        )
        .unwrap();
        let ts = tunables(&p, &Sizes::new(), &Sizes::new().with("N", 24));
        // Not 1, 6 or 12 (powers of two and divisors of 24, but no vector widths).
        assert_eq!(ts[0].values, vec![2, 3, 4, 8, 16]);
    }

    #[test]
    fn neighbours_move_one_value() {
        let ts = vec![Tunable { name: "a".into(), values: vec![1, 2, 4], default: Some(2) }];
        let mut rng = rand::rngs::mock::StepRng::new(0, 1);
        let at = Sizes::new().with("a", 1);
        assert_eq!(neighbour(&ts, &at, &mut rng).unwrap().get("a"), Some(2));
        let top = Sizes::new().with("a", 4);
        assert_eq!(neighbour(&ts, &top, &mut rng).unwrap().get("a"), Some(2));
    }
}
