//! Random pipelines of 2 to 6 stages over a small vector or matrix: point-wise maps, zips with
//! an earlier value, a last stage's result padded after it is computed, 3-tap slides (1-D, along rows, along columns through `transpose`, and 2-D
//! through `slideND2` or spelt out with `map`/`slide`/`transpose`), reductions (of chunks, of
//! rows, of columns, of the whole array, also broadcast back as a scalar), transposes and outer
//! products. Each intermediate value is a top-level `let`, kept in a default buffer or
//! materialized with `toGlobal` (a kernel boundary, `mapsat_ir::stages`), at random.

use crate::common::Rng;

/// A length: its size expression and its value.
#[derive(Clone, Debug, PartialEq)]
struct Len {
    expr: String,
    value: i64,
}

/// The shape of a value of the pipeline.
#[derive(Clone, Debug, PartialEq)]
enum Shape {
    Vector(Len),
    Matrix(Len, Len),
    Scalar,
}

/// A value bound so far: its name and shape.
struct Value {
    name: String,
    shape: Shape,
}

/// A stage: the expression and its shape.
struct Stage {
    expr: String,
    shape: Shape,
}

/// The lengths a generated size takes: small, odd ones too, so that the pocl runs are fast and
/// work-group sizes do not always divide.
const LENGTHS: [i64; 8] = [5, 7, 8, 9, 12, 13, 16, 24];

/// The pipeline of `seed`: its text.
pub fn pipeline(seed: u64) -> String {
    let mut g = Rng(seed);
    let matrix = g.below(3) > 0;
    let (sizes, input) = if matrix {
        let (h, w) = (g.pick(&LENGTHS), g.pick(&LENGTHS));
        (format!("size H = {h}, W = {w}"), Shape::Matrix(len("H", h), len("W", w)))
    } else {
        let n = g.pick(&LENGTHS);
        (format!("size N = {n}"), Shape::Vector(len("N", n)))
    };
    let ty = match &input {
        Shape::Matrix(..) => "[[f32]W]H",
        _ => "[f32]N",
    };
    let stages = 2 + g.below(5);
    let mut values = vec![Value { name: "xs".into(), shape: input }];
    let mut body = String::new();
    for k in 0..stages - 1 {
        let last = values.last().expect("the input at least");
        let prev = (last.name.clone(), last.shape.clone());
        if prev.1 != Shape::Scalar && g.below(8) == 0 {
            // A whole-array sum, broadcast into the next stage.
            let v = prev.0.clone();
            let joined = if matches!(prev.1, Shape::Matrix(..)) { format!("join({v})") } else { v.clone() };
            body += &format!("  let s{k} = reduce(add, 0.0, {joined}) in\n");
            let s = match &prev.1 {
                Shape::Matrix(..) => format!("map(fun(r => map(fun(x => x - 0.1 * s{k}), r)), {v})"),
                _ => format!("map(fun(x => x - 0.1 * s{k}), {v})"),
            };
            body += &bind(&mut g, k, &s);
            values.push(Value { name: format!("y{k}"), shape: prev.1 });
            continue;
        }
        let s = stage(&mut g, &values, false);
        body += &bind(&mut g, k, &s.expr);
        values.push(Value { name: format!("y{k}"), shape: s.shape });
    }
    let last = stage(&mut g, &values, true);
    body += &format!("  {}\n", last.expr);
    format!("{sizes}\ndef pipe{seed}(xs: {ty}) =\n{body}")
}

/// `let yK = E in`, with `E` in `toGlobal` half of the time when it is a map (`toGlobal` wraps
/// the map whose result it writes).
fn bind(g: &mut Rng, k: u64, e: &str) -> String {
    if g.below(2) == 0 && e.starts_with("map(") {
        format!("  let y{k} = toGlobal({e}) in\n")
    } else {
        format!("  let y{k} = {e} in\n")
    }
}

fn len(expr: &str, value: i64) -> Len {
    Len { expr: expr.to_string(), value }
}

/// A stage reading the last value (and maybe an earlier one of the same shape); `last`: it
/// ends the program, and may be a scalar.
fn stage(g: &mut Rng, values: &[Value], last: bool) -> Stage {
    let v = values.last().expect("the input at least");
    let partners: Vec<&Value> = values.iter().filter(|w| w.shape == v.shape).collect();
    let partner = partners[g.below(partners.len() as u64) as usize].name.clone();
    match &v.shape {
        Shape::Vector(n) => vector_stage(g, &v.name, n, &partner, last),
        Shape::Matrix(r, c) => matrix_stage(g, &v.name, r, c, &partner, last),
        Shape::Scalar => Stage { expr: v.name.clone(), shape: Shape::Scalar },
    }
}

fn vector_stage(g: &mut Rng, v: &str, n: &Len, partner: &str, last: bool) -> Stage {
    let same = |expr: String| Stage { expr, shape: Shape::Vector(n.clone()) };
    match g.below(if last { 9 } else { 7 }) {
        0 => same(format!("map(fun(x => x * {}.5 + 1.0), {v})", g.below(3))),
        1 => same(format!("map(fun(p => p.0 + p.1), zip({v}, {partner}))")),
        2 => same(format!("map(fun(w => reduce(add, 0.0, w)), slide(3, 1, padClamp(1, 1, {v})))")),
        3 => same(format!("map(fun(p => p.0 * at(0, p.1)), zip({v}, slide(2, 1, padClamp(1, 0, {v}))))")),
        4 => match [2, 3, 4].into_iter().find(|k| n.value % k == 0 && n.value > *k) {
            Some(k) => Stage {
                expr: format!("map(fun(c => reduce(add, 0.0, c)), split({k}, {v}))"),
                shape: Shape::Vector(len(&format!("{} / {k}", n.expr), n.value / k)),
            },
            None => same(format!("map(fun(x => x * x), {v})")),
        },
        5 | 6 => Stage {
            // An outer product: a matrix from a vector.
            expr: format!("map(fun(a => map(fun(b => a * b + 1.0), {partner})), {v})"),
            shape: Shape::Matrix(n.clone(), n.clone()),
        },
        7 => Stage { expr: format!("reduce(add, 0.0, map(fun(x => x * x), {v}))"), shape: Shape::Scalar },
        // A result that is a view of what the program computes, copied to the output.
        _ => Stage {
            expr: format!("padClamp(1, 1, map(fun(x => x * 2.0 + 1.0), {v}))"),
            shape: Shape::Vector(len(&format!("{} + 2", n.expr), n.value + 2)),
        },
    }
}

fn matrix_stage(g: &mut Rng, m: &str, r: &Len, c: &Len, partner: &str, last: bool) -> Stage {
    let same = |expr: String| Stage { expr, shape: Shape::Matrix(r.clone(), c.clone()) };
    let slide3 = "map(fun(w => reduce(add, 0.0, w)), slide(3, 1, padClamp(1, 1, ROW)))";
    match g.below(if last { 12 } else { 11 }) {
        0 => same(format!("map(fun(r => map(fun(x => x * {}.5 + 1.0), r)), {m})", g.below(3))),
        1 => Stage {
            expr: format!("map(fun(r => map(fun(x => x + 1.0), r)), transpose({m}))"),
            shape: Shape::Matrix(c.clone(), r.clone()),
        },
        2 => Stage { expr: format!("map(fun(r => reduce(add, 0.0, r)), {m})"), shape: Shape::Vector(r.clone()) },
        3 => same(format!("map(fun(row => {}), {m})", slide3.replace("ROW", "row"))),
        4 => same(format!("transpose(map(fun(col => {}), transpose({m})))", slide3.replace("ROW", "col"))),
        5 => same(format!(
            "map(fun(wr => map(fun(win => reduce(add, 0.0, join(win)) / 9.0), wr)), \
             slideND2(3, 1, 3, 1, padClampND2(1, 1, {m})))"
        )),
        6 => same(format!(
            "map(fun(rows => map(fun(win => reduce(add, 0.0, join(win))), \
             transpose(map(fun(row => slide(3, 1, row)), rows)))), \
             slide(3, 1, map(fun(row => padClamp(1, 1, row)), padClamp(1, 1, {m}))))"
        )),
        7 => same(format!("map(fun(p => map(fun(q => q.0 * q.1), zip(p.0, p.1))), zip({m}, {partner}))")),
        8 => Stage {
            expr: format!("map(fun(col => reduce(add, 0.0, col)), transpose({m}))"),
            shape: Shape::Vector(c.clone()),
        },
        9 => Stage {
            // Rows zipped with the columns of the transpose: a matrix product with itself
            // when it is square, else the rows again.
            expr: if r == c {
                format!(
                    "map(fun(row => map(fun(col => reduce(add, 0.0, map(fun(p => p.0 * p.1), zip(row, col)))), \
                     transpose({m}))), {m})"
                )
            } else {
                format!("map(fun(r => map(fun(x => x * 0.5), r)), {m})")
            },
            shape: Shape::Matrix(r.clone(), c.clone()),
        },
        // Each row computed, then copied through a view (code generation copies the padded
        // row in every thread of the outer map's iteration).
        10 => Stage {
            expr: format!("map(fun(r => padClamp(1, 1, map(fun(x => x * 2.0 + 1.0), r))), {m})"),
            shape: Shape::Matrix(r.clone(), len(&format!("{} + 2", c.expr), c.value + 2)),
        },
        _ => Stage {
            expr: format!("reduce(add, 0.0, join(map(fun(r => map(fun(x => x * x), r)), {m})))"),
            shape: Shape::Scalar,
        },
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn generated_pipelines_type_check() {
        for seed in 0..200 {
            let text = super::pipeline(seed);
            let p = mapsat_ir::parse(&text).unwrap_or_else(|e| panic!("{text}\n{e:?}"));
            mapsat_ir::check::check(&p).unwrap_or_else(|e| panic!("{text}\n{}", e.message));
        }
    }
}
