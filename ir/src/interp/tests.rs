//! Tests of the interpreter against hand-computed values and nested-loop computations.

use super::*;
use crate::ast::{BinOp, Node, Prim};
use crate::syntax::parse;
use std::path::PathBuf;
use std::slice::from_ref;
use std::sync::atomic::{AtomicUsize, Ordering};

fn program(src: &str) -> Program {
    parse(src).unwrap_or_else(|e| panic!("parse error {e:?} in\n{src}"))
}

fn sizes_of(p: &Program, sizes: &[(&str, i64)]) -> Sizes {
    let mut m = p.default_sizes();
    for (k, v) in sizes {
        m.insert(k.to_string(), *v);
    }
    m
}

fn run(src: &str, sizes: &[(&str, i64)], inputs: &[Tensor]) -> Result<Tensor, EvalError> {
    let p = program(src);
    eval(&p, &sizes_of(&p, sizes), inputs)
}

fn ok(src: &str, sizes: &[(&str, i64)], inputs: &[Tensor]) -> Tensor {
    run(src, sizes, inputs).unwrap_or_else(|e| panic!("evaluation failed: {e}\n{src}"))
}

fn err(src: &str, sizes: &[(&str, i64)], inputs: &[Tensor]) -> EvalError {
    match run(src, sizes, inputs) {
        Ok(t) => panic!("expected an error, got {t:?}\n{src}"),
        Err(e) => e,
    }
}

fn f(shape: &[usize], data: Vec<f32>) -> Tensor {
    assert_eq!(shape.iter().product::<usize>(), data.len());
    Tensor::f32(shape.to_vec(), data)
}

fn i(shape: &[usize], data: Vec<i32>) -> Tensor {
    assert_eq!(shape.iter().product::<usize>(), data.len());
    Tensor::i32(shape.to_vec(), data)
}

fn iota(n: usize) -> Vec<f32> {
    (0..n).map(|k| k as f32).collect()
}

/// Deterministic pseudo-random floats in [-1, 1), independent of the interpreter.
fn noise(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32) / ((1u64 << 23) as f32) - 1.0
        })
        .collect()
}

fn temp_path(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let k = N.fetch_add(1, Ordering::SeqCst);
    std::env::temp_dir().join(format!("mapsat-interp-{}-{k}-{name}", std::process::id()))
}

#[test]
fn map_and_reduce() {
    let t = ok(
        "size N = 4\ndef f(xs: [f32]N) = map(fun(x => x * 2.0 + 1.0), xs)",
        &[],
        &[f(&[4], vec![1.0, 2.0, 3.0, 4.0])],
    );
    assert_eq!(t, f(&[4], vec![3.0, 5.0, 7.0, 9.0]));
    let t = ok("size N = 4\ndef f(xs: [f32]N) = reduce(add, 10.0, xs)", &[], &[f(&[4], vec![1.0, 2.0, 3.0, 4.0])]);
    assert_eq!(t, f(&[], vec![20.0]));
    // A left fold: ((((100 - 1) - 2) - 3) - 4).
    let t = ok("size N = 4\ndef f(xs: [i32]N) = reduce(sub, 100, xs)", &[], &[i(&[4], vec![1, 2, 3, 4])]);
    assert_eq!(t, i(&[], vec![90]));
    // Lambda reducer, not associative: acc * 2 + x.
    let t = ok(
        "size N = 4\ndef f(xs: [i32]N) = reduceSeq(fun(acc, x => acc * 2 + x), 0, xs)",
        &[],
        &[i(&[4], vec![1, 0, 1, 1])],
    );
    assert_eq!(t, i(&[], vec![11]));
    // Folds whose step is `acc op g(x)`, in either order, and one that is not.
    let xs = f(&[5], vec![1.0, 5.0, -2.0, 3.0, 0.5]);
    let src = "size N = 5\ndef f(xs: [f32]N) = reduceSeq(fun(acc, x => x * 2.0 + acc), 1.0, xs)";
    assert_eq!(ok(src, &[], from_ref(&xs)), f(&[], vec![1.0 + 2.0 + 10.0 - 4.0 + 6.0 + 1.0]));
    let src = "size N = 5\ndef f(xs: [f32]N) = reduceSeq(fun(acc, x => max(acc, x * x)), 0.0, xs)";
    assert_eq!(ok(src, &[], from_ref(&xs)), f(&[], vec![25.0]));
    let src = "size N = 5\ndef f(xs: [f32]N) = reduceSeq(fun(acc, x => let y = x - 1.0 in acc - y * y), 0.0, xs)";
    assert_eq!(ok(src, &[], from_ref(&xs)), f(&[], vec![-(0.0 + 16.0 + 9.0 + 4.0 + 0.25)]));
    let src = "size N = 5\ndef f(xs: [f32]N) = reduceSeq(fun(acc, x => x - acc), 0.0, xs)";
    assert_eq!(ok(src, &[], from_ref(&xs)), f(&[], vec![0.5 - (3.0 - (-2.0 - (5.0 - 1.0)))]));
    let src = "size N = 5\ndef f(xs: [f32]N) = reduceSeq(fun(acc, x => acc / 2.0 + x), 0.0, xs)";
    assert_eq!(ok(src, &[], from_ref(&xs)), f(&[], vec![((((0.5 + 5.0) / 2.0 - 2.0) / 2.0 + 3.0) / 2.0) + 0.5]));
    // Reduce with a tuple accumulator (sum and max).
    let t = ok(
        "size N = 5\ndef f(xs: [f32]N) = let r = reduce(fun(acc, x => (acc.0 + x, max(acc.1, x))), (0.0, -100.0), xs) in r.0 * r.1",
        &[],
        &[f(&[5], vec![1.0, 5.0, -2.0, 3.0, 0.5])],
    );
    assert_eq!(t, f(&[], vec![7.5 * 5.0]));
    // Reduce whose accumulator is an array (general path): column sums of a matrix.
    let t = ok(
        "size N = 3, M = 2\ndef f(xs: [[f32]M]N) = reduce(fun(acc, row => map(fun(p => p.0 + p.1), zip(acc, row))), at(0, xs), xs)",
        &[],
        &[f(&[3, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])],
    );
    assert_eq!(t, f(&[2], vec![10.0, 14.0]));
    // An array accumulator updated by a map whose function reads a scalar field of a pair
    // that also holds an array (as the tunable conv's register blocks do): a vector-matrix
    // product, [1, 2] x [[1, 2, 3], [4, 5, 6]].
    let t = ok(
        "size N = 2, M = 3\ndef f(xs: [f32]N, rows: [[f32]M]N) = \
         reduce(fun(acc, p => map(fun(q => q.0 + p.0 * q.1), zip(acc, p.1))), map(fun(x => 0.0), at(0, rows)), zip(xs, rows))",
        &[],
        &[f(&[2], vec![1.0, 2.0]), f(&[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])],
    );
    assert_eq!(t, f(&[3], vec![9.0, 12.0, 15.0]));
}

#[test]
fn dot_product() {
    let src = "size N = 8\ndef dot(a: [f32]N, b: [f32]N) = reduce(add, 0.0, map(fun(p => p.0 * p.1), zip(a, b)))";
    let a = noise(8, 1);
    let b = noise(8, 2);
    let mut expected = 0.0f32;
    for k in 0..8 {
        expected += a[k] * b[k];
    }
    let t = ok(src, &[], &[f(&[8], a), f(&[8], b)]);
    assert_eq!(t, f(&[], vec![expected]));
}

#[test]
fn zip_three_and_tuples() {
    let src = "size N = 3\ndef f(a: [f32]N, b: [f32]N, c: [i32]N) = map(fun(t => t.0 * t.1 + f32(t.2)), zip(a, b, c))";
    let t = ok(src, &[], &[f(&[3], vec![1.0, 2.0, 3.0]), f(&[3], vec![4.0, 5.0, 6.0]), i(&[3], vec![1, -1, 2])]);
    assert_eq!(t, f(&[3], vec![5.0, 9.0, 20.0]));
    // Tuples built and taken apart, nested.
    let src = "size N = 3\ndef f(a: [f32]N) = map(fun(x => let t = ((x, x + 1.0), x * 3.0) in (t.0).1 - t.1), a)";
    assert_eq!(ok(src, &[], &[f(&[3], vec![1.0, 2.0, 3.0])]), f(&[3], vec![-1.0, -3.0, -5.0]));
    // An array of tuples produced by a map, then consumed by another map.
    let src = "size N = 3\ndef f(a: [f32]N) = map(fun(t => t.0 - t.1), map(fun(x => (x * x, x)), a))";
    assert_eq!(ok(src, &[], &[f(&[3], vec![1.0, 2.0, 3.0])]), f(&[3], vec![0.0, 2.0, 6.0]));
    // Zip of an array of arrays with an array of scalars: tuples holding arrays.
    let src =
        "size N = 2, M = 3\ndef f(a: [[f32]M]N, s: [f32]N) = map(fun(p => map(fun(x => x * p.1), p.0)), zip(a, s))";
    let t = ok(src, &[], &[f(&[2, 3], iota(6)), f(&[2], vec![2.0, -1.0])]);
    assert_eq!(t, f(&[2, 3], vec![0.0, 2.0, 4.0, -3.0, -4.0, -5.0]));
    // get(i) as a partial application.
    let src = "size N = 2\ndef f(a: [f32]N, b: [f32]N) = map(get(1), zip(a, b))";
    assert_eq!(ok(src, &[], &[f(&[2], vec![1.0, 2.0]), f(&[2], vec![3.0, 4.0])]), f(&[2], vec![3.0, 4.0]));
}

#[test]
fn split_join_transpose() {
    let x = f(&[6], iota(6));
    assert_eq!(ok("size N = 6\ndef f(xs: [f32]N) = split(2, xs)", &[], from_ref(&x)), f(&[3, 2], iota(6)));
    assert_eq!(ok("size N = 6\ndef f(xs: [f32]N) = join(split(3, xs))", &[], from_ref(&x)), f(&[6], iota(6)));
    // Rows sums after splitting.
    let t = ok("size N = 6\ndef f(xs: [f32]N) = map(fun(r => reduce(add, 0.0, r)), split(3, xs))", &[], from_ref(&x));
    assert_eq!(t, f(&[2], vec![3.0, 12.0]));
    // transpose of a 2x3 matrix, and join of the (non-contiguous) transpose.
    let m = f(&[2, 3], iota(6));
    let tt = vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0];
    assert_eq!(ok("size N = 2, M = 3\ndef f(m: [[f32]M]N) = transpose(m)", &[], from_ref(&m)), f(&[3, 2], tt.clone()));
    assert_eq!(ok("size N = 2, M = 3\ndef f(m: [[f32]M]N) = join(transpose(m))", &[], from_ref(&m)), f(&[6], tt));
    assert_eq!(ok("size N = 2, M = 3\ndef f(m: [[f32]M]N) = transpose(transpose(m))", &[], from_ref(&m)), m);
    // Size expressions as static arguments.
    assert_eq!(ok("size N = 6, K = 3\ndef f(xs: [f32]N) = split(N / K, xs)", &[], &[x]), f(&[3, 2], iota(6)));
}

#[test]
fn slide_pad_at() {
    let x = f(&[5], iota(5));
    let t = ok("size N = 5\ndef f(xs: [f32]N) = slide(3, 1, xs)", &[], from_ref(&x));
    assert_eq!(t, f(&[3, 3], vec![0.0, 1.0, 2.0, 1.0, 2.0, 3.0, 2.0, 3.0, 4.0]));
    let t = ok("size N = 5\ndef f(xs: [f32]N) = slide(2, 2, xs)", &[], from_ref(&x));
    assert_eq!(t, f(&[2, 2], vec![0.0, 1.0, 2.0, 3.0]));
    // A 3-point stencil over a padded array.
    let t = ok(
        "size N = 5\ndef f(xs: [f32]N) = map(fun(w => reduce(add, 0.0, w)), slide(3, 1, pad(1, 1, 0.0, xs)))",
        &[],
        from_ref(&x),
    );
    assert_eq!(t, f(&[5], vec![1.0, 3.0, 6.0, 9.0, 7.0]));
    let t = ok("size N = 5\ndef f(xs: [f32]N) = pad(2, 1, -1.5, xs)", &[], from_ref(&x));
    assert_eq!(t, f(&[8], vec![-1.5, -1.5, 0.0, 1.0, 2.0, 3.0, 4.0, -1.5]));
    let t = ok("size N = 5\ndef f(xs: [f32]N) = padClamp(2, 2, xs)", &[], from_ref(&x));
    assert_eq!(t, f(&[9], vec![0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 4.0, 4.0]));
    // Padding a 2-D array adds rows of the value; padding its rows adds columns.
    let m = i(&[2, 2], vec![1, 2, 3, 4]);
    let t = ok("size N = 2\ndef f(m: [[i32]N]N) = pad(1, 0, 7, m)", &[], from_ref(&m));
    assert_eq!(t, i(&[3, 2], vec![7, 7, 1, 2, 3, 4]));
    let t = ok("size N = 2\ndef f(m: [[i32]N]N) = pad(1, 1, 0, map(pad(0, 1, 9), m))", &[], from_ref(&m));
    assert_eq!(t, i(&[4, 3], vec![0, 0, 0, 1, 2, 9, 3, 4, 9, 0, 0, 0]));
    let t = ok("size N = 2\ndef f(m: [[i32]N]N) = padND2(1, 1, 0, m)", &[], from_ref(&m));
    assert_eq!(t, i(&[4, 4], vec![0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0]));
    let t = ok("size N = 2\ndef f(m: [[i32]N]N) = padClamp(1, 1, m)", &[], from_ref(&m));
    assert_eq!(t, i(&[4, 2], vec![1, 2, 1, 2, 3, 4, 3, 4]));
    // Transposing a padded array keeps each padded element's value.
    let t = ok("size N = 2\ndef f(m: [[i32]N]N) = transpose(pad(1, 0, 5, map(pad(1, 0, 6), m)))", &[], from_ref(&m));
    assert_eq!(t, i(&[3, 3], vec![5, 6, 6, 5, 1, 3, 5, 2, 4]));
    // at with a constant and with a size expression.
    assert_eq!(ok("size N = 5\ndef f(xs: [f32]N) = at(3, xs)", &[], from_ref(&x)), f(&[], vec![3.0]));
    assert_eq!(ok("size N = 5\ndef f(xs: [f32]N) = at(N - 1, xs)", &[], &[x]), f(&[], vec![4.0]));
    assert_eq!(ok("size N = 2\ndef f(m: [[i32]N]N) = at(1, m)", &[], &[m]), i(&[2], vec![3, 4]));
}

/// A tensor of the given shape whose element at each index is `f(index)`.
fn tabulate(shape: &[usize], f: impl Fn(&[usize]) -> f32) -> Tensor {
    let n: usize = shape.iter().product();
    let mut idx = vec![0usize; shape.len()];
    let mut data = Vec::with_capacity(n);
    for _ in 0..n {
        data.push(f(&idx));
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Tensor::f32(shape.to_vec(), data)
}

/// Structural functions mapped over an array: computed once over the whole array (lifted) or
/// element by element (the `let` of a parameter prevents lifting); both against nested loops.
#[test]
fn structural_maps_lifted_and_general() {
    let m = |a: usize, i: usize, j: usize| (a * 24 + i * 6 + j) as f32;
    type Case = (&'static str, Vec<usize>, Box<dyn Fn(&[usize]) -> f32>);
    let cases: Vec<Case> = vec![
        ("transpose(r)", vec![2, 6, 4], Box::new(move |x| m(x[0], x[2], x[1]))),
        ("split(2, r)", vec![2, 2, 2, 6], Box::new(move |x| m(x[0], x[1] * 2 + x[2], x[3]))),
        ("join(r)", vec![2, 24], Box::new(move |x| m(x[0], x[1] / 6, x[1] % 6))),
        ("join(transpose(r))", vec![2, 24], Box::new(move |x| m(x[0], x[1] % 4, x[1] / 4))),
        ("slide(3, 1, r)", vec![2, 2, 3, 6], Box::new(move |x| m(x[0], x[1] + x[2], x[3]))),
        (
            "pad(1, 0, -1.0, r)",
            vec![2, 5, 6],
            Box::new(move |x| if x[1] == 0 { -1.0 } else { m(x[0], x[1] - 1, x[2]) }),
        ),
        ("padClamp(0, 1, r)", vec![2, 5, 6], Box::new(move |x| m(x[0], x[1].min(3), x[2]))),
        (
            "map(pad(1, 1, 0.5), r)",
            vec![2, 4, 8],
            Box::new(move |x| if x[2] == 0 || x[2] == 7 { 0.5 } else { m(x[0], x[1], x[2] - 1) }),
        ),
        ("map(padClamp(1, 1), r)", vec![2, 4, 8], Box::new(move |x| m(x[0], x[1], x[2].clamp(1, 6) - 1))),
        ("at(1, r)", vec![2, 6], Box::new(move |x| m(x[0], 1, x[1]))),
        ("map(at(2), r)", vec![2, 4], Box::new(move |x| m(x[0], x[1], 2))),
        (
            "map(fun(p => p.0), zip(map(split(3), r), r))",
            vec![2, 4, 2, 3],
            Box::new(move |x| m(x[0], x[1], x[2] * 3 + x[3])),
        ),
        (
            "map(fun(p => p.1), zip(r, map(split(2), r)))",
            vec![2, 4, 3, 2],
            Box::new(move |x| m(x[0], x[1], x[2] * 2 + x[3])),
        ),
        ("asScalar(asVector(3, join(r)))", vec![2, 24], Box::new(move |x| m(x[0], x[1] / 6, x[1] % 6))),
        ("map(asVector(2), r)", vec![2, 4, 3, 2], Box::new(move |x| m(x[0], x[1], x[2] * 2 + x[3]))),
        ("map(transpose, slide(2, 2, r))", vec![2, 2, 6, 2], Box::new(move |x| m(x[0], x[1] * 2 + x[3], x[2]))),
        ("let t = transpose(r) in map(fun(c => at(0, c)), t)", vec![2, 6], Box::new(move |x| m(x[0], 0, x[1]))),
        ("toLocal(map(fun(c => c), r))", vec![2, 4, 6], Box::new(move |x| m(x[0], x[1], x[2]))),
        (
            "map(toLocal(mapLcl(0, transpose)), map(split(2), map(split(3), r)))",
            vec![2, 4, 1, 3, 2],
            Box::new(move |x| m(x[0], x[1], x[4] * 3 + x[3])),
        ),
    ];
    let input = f(&[2, 4, 6], iota(48));
    for (body, shape, expected) in cases {
        let expected = tabulate(&shape, expected);
        let lifted = format!("def f(m: [[[f32]6]4]2, q: f32) = map(fun(r => {body}), m)");
        let general = format!("def f(m: [[[f32]6]4]2, q: f32) = map(fun(r => let z = q in {body}), m)");
        for src in [lifted, general] {
            let t = ok(&src, &[], &[input.clone(), f(&[], vec![0.0])]);
            assert_eq!(t, expected, "{src}");
        }
    }
    // An array of tuples holding arrays, built element by element, then taken apart.
    let src = "def f(m: [[[f32]6]4]2, q: f32) = map(map(fun(p => p.1)), map(fun(r => let z = q in zip(r, map(split(3), r))), m))";
    let t = ok(src, &[], &[input, f(&[], vec![0.0])]);
    assert_eq!(t, tabulate(&[2, 4, 2, 3], |x| m(x[0], x[1], x[2] * 3 + x[3])));
}

#[test]
fn let_lambdas_partial_application_composition() {
    let x = f(&[4], vec![1.0, 2.0, 3.0, 4.0]);
    // let, and a lambda capturing an outer variable and a scalar parameter.
    let src = "size N = 4\ndef f(xs: [f32]N, s: f32) = let k = s * 2.0 in map(fun(x => x * k + s), xs)";
    assert_eq!(ok(src, &[], &[x.clone(), f(&[], vec![0.5])]), f(&[4], vec![1.5, 2.5, 3.5, 4.5]));
    // Capturing the element of an outer map inside an inner map (general path).
    let src = "size N = 2, M = 3\ndef f(a: [f32]N, b: [f32]M) = map(fun(x => map(fun(y => x - y), b)), a)";
    let t = ok(src, &[], &[f(&[2], vec![10.0, 20.0]), f(&[3], vec![1.0, 2.0, 3.0])]);
    assert_eq!(t, f(&[2, 3], vec![9.0, 8.0, 7.0, 19.0, 18.0, 17.0]));
    // Partial application of primitives as mapped functions.
    let t = ok("size N = 8\ndef f(xs: [[f32]N]2) = map(split(2), xs)", &[], &[f(&[2, 8], iota(16))]);
    assert_eq!(t, f(&[2, 4, 2], iota(16)));
    assert_eq!(
        ok("size N = 4\ndef f(xs: [f32]N) = map(add(1.0), xs)", &[], from_ref(&x)),
        f(&[4], vec![2.0, 3.0, 4.0, 5.0])
    );
    assert_eq!(
        ok("size N = 4\ndef f(xs: [f32]N) = map(neg, xs)", &[], from_ref(&x)),
        f(&[4], vec![-1.0, -2.0, -3.0, -4.0])
    );
    // Composition with `o` and `$`.
    let t =
        ok("size N = 4\ndef f(xs: [f32]N) = join o map(map(fun(a => a * 10.0))) o split(2) $ xs", &[], from_ref(&x));
    assert_eq!(t, f(&[4], vec![10.0, 20.0, 30.0, 40.0]));
    // A let-bound function and a lambda applied in place.
    let src =
        "size N = 4\ndef f(xs: [f32]N) = let g = fun(a => a + 1.0) in map(fun(x => g(x) * fun(y => y - 1.0)(x)), xs)";
    assert_eq!(ok(src, &[], from_ref(&x)), f(&[4], vec![0.0, 3.0, 8.0, 15.0]));
    // Curried lambda partially applied.
    let src = "size N = 4\ndef f(xs: [f32]N) = let h = fun(a, b => a * 10.0 + b) in map(h(2.0), xs)";
    assert_eq!(ok(src, &[], &[x]), f(&[4], vec![21.0, 22.0, 23.0, 24.0]));
}

/// Listing 3 of the Lift paper: a scaled and shifted vector through splits and joins.
#[test]
fn lift_listing3() {
    let src = "size n = 64, s0 = 16, s1 = 4\n def f(X: [f32]n, y: f32, z: f32) = join o map@A(map@B(fun(a => a + z)) o join o map@C(map@D(fun(a => a * y))) o split(s1)) o split(s0) $ X";
    let x = noise(64, 71);
    let t = ok(src, &[], &[f(&[64], x.clone()), f(&[], vec![1.5]), f(&[], vec![-0.25])]);
    assert_eq!(t, f(&[64], x.iter().map(|a| a * 1.5 - 0.25).collect()));
    let t = ok(
        src,
        &[("n", 32), ("s0", 8), ("s1", 2)],
        &[f(&[32], x[..32].to_vec()), f(&[], vec![2.0]), f(&[], vec![1.0])],
    );
    assert_eq!(t, f(&[32], x[..32].iter().map(|a| a * 2.0 + 1.0).collect()));
}

#[test]
fn low_level_maps_and_address_spaces_are_identity() {
    let x = f(&[8], iota(8));
    let src = "size N = 8\ndef f(xs: [f32]N) = join(mapWrg(0, fun(c => toLocal(mapLcl(0, fun(a => a + 1.0), c))), split(4, xs)))";
    assert_eq!(ok(src, &[], from_ref(&x)), f(&[8], (1..9).map(|k| k as f32).collect()));
    let src =
        "size N = 8\ndef f(xs: [f32]N) = join(mapGlb(0, fun(c => toPrivate(reduceSeq(add, 0.0, c))), split(2, xs)))";
    let t = run(src, &[], from_ref(&x));
    // reduceSeq returns a scalar, and join of scalars is ill-typed: an error, no panic.
    assert!(t.is_err());
    let src =
        "size N = 8\ndef f(xs: [f32]N) = mapGlb(0, fun(c => toGlobal(mapSeq(fun(a => a * 2.0), c))), split(2, xs))";
    assert_eq!(ok(src, &[], from_ref(&x)), f(&[4, 2], iota(8).iter().map(|a| a * 2.0).collect()));
    let src = "size N = 8\ndef f(xs: [f32]N) = map@A(fun(c => reduceSeq(add, 0.0, c)), split(2, xs))";
    assert_eq!(ok(src, &[], &[x]), f(&[4], vec![1.0, 5.0, 9.0, 13.0]));
}

#[test]
fn vectors() {
    let x = f(&[8], iota(8));
    // asVector then a vector operation with a scalar broadcast, then asScalar.
    let src = "size N = 8\ndef f(xs: [f32]N) = asScalar(mapVec(fun(v => v * 2.0 + v), asVector(4, xs)))";
    assert_eq!(ok(src, &[], from_ref(&x)), f(&[8], iota(8).iter().map(|a| a * 3.0).collect()));
    // Vector-vector arithmetic on a zip of two vectorized arrays.
    let src = "size N = 8\ndef f(a: [f32]N, b: [f32]N) = asScalar(map(fun(p => p.0 * p.1 - p.0), zip(asVector(2, a), asVector(2, b))))";
    let b = noise(8, 3);
    let expected: Vec<f32> = (0..8).map(|k| k as f32 * b[k] - k as f32).collect();
    assert_eq!(ok(src, &[], &[x.clone(), f(&[8], b)]), f(&[8], expected));
    // An array of vectors as the result: an extra innermost dimension.
    let t = ok("size N = 8\ndef f(xs: [f32]N) = asVector(4, xs)", &[], from_ref(&x));
    assert_eq!(t, f(&[2, 4], iota(8)));
    // Reduce over vectors (general path), then back to scalars.
    let src = "size N = 8\ndef f(xs: [f32]N) = reduce(fun(acc, v => acc + v), at(0, asVector(2, xs)), asVector(2, xs))";
    assert_eq!(ok(src, &[], from_ref(&x)), f(&[2], vec![12.0, 17.0]));
    // asVector of a non-contiguous (transposed) array, and asScalar of that.
    let m = f(&[2, 4], iota(8));
    let src = "size N = 4\ndef f(m: [[f32]N]2) = asScalar(asVector(2, join(transpose(m))))";
    assert_eq!(ok(src, &[], &[m]), f(&[8], vec![0.0, 4.0, 1.0, 5.0, 2.0, 6.0, 3.0, 7.0]));
    // vectorFromScalar: each row's scale times the row's vector, plus a broadcast literal.
    let src = "size N = 2\ndef f(s: [f32]N, m: [[f32]4]N) = \
               map(fun(p => asScalar(map(fun(v => vectorFromScalar(4, p.0) * v + vectorFromScalar(4, 1.0)), asVector(4, p.1)))), zip(s, m))";
    let t = ok(src, &[], &[f(&[2], vec![2.0, -1.0]), f(&[2, 4], iota(8))]);
    assert_eq!(t, f(&[2, 4], vec![1.0, 3.0, 5.0, 7.0, -3.0, -4.0, -5.0, -6.0]));
    // A vector parameter.
    let src = "size N = 2\ndef f(xs: [f32x4]N) = map(fun(v => v * v), xs)";
    assert_eq!(ok(src, &[], &[f(&[2, 4], iota(8))]), f(&[2, 4], iota(8).iter().map(|a| a * a).collect()));
}

#[test]
fn scalar_semantics() {
    // i32 division and remainder truncate toward zero, in the vectorized and the general path.
    let a = i(&[4], vec![7, -7, 7, -7]);
    let b = i(&[4], vec![2, 2, -2, -2]);
    let src = "size N = 4\ndef f(a: [i32]N, b: [i32]N) = map(fun(p => p.0 / p.1 * 100 + p.0 % p.1), zip(a, b))";
    assert_eq!(ok(src, &[], &[a.clone(), b.clone()]), i(&[4], vec![301, -301, -299, 299]));
    let src = "size N = 4\ndef f(a: [i32]N, b: [i32]N) = reduce(fun(acc, p => acc * 1000 + (p.0 / p.1) * 10 + p.0 % p.1), 0, zip(a, b))";
    let expected =
        [(3, 1), (-3, -1), (-3, 1), (3, -1)].iter().fold(0i32, |acc, (q, r)| acc.wrapping_mul(1000) + q * 10 + r);
    assert_eq!(ok(src, &[], &[a.clone(), b.clone()]), i(&[], vec![expected]));
    let src = "def f(a: i32, b: i32) = (a / b) * 10 + a % b";
    assert_eq!(ok(src, &[], &[i(&[], vec![-9]), i(&[], vec![4])]), i(&[], vec![-21]));
    // i32 arithmetic wraps.
    let src = "def f(a: i32) = a * 2 + 1";
    assert_eq!(ok(src, &[], &[i(&[], vec![i32::MAX])]), i(&[], vec![i32::MAX.wrapping_mul(2).wrapping_add(1)]));
    // Division by zero is an error, with a span.
    let e = err("size N = 2\ndef f(a: [i32]N) = map(fun(x => 10 / x), a)", &[], &[i(&[2], vec![1, 0])]);
    assert!(e.to_string().contains("division by zero"), "{e}");
    assert!(e.span().is_some());
    // The error points at the operator, also when the map runs over whole columns.
    let src = "size N = 2\ndef f(a: [i32]N) = map(fun(x => x + 10 / x), a)";
    let e = err(src, &[], &[i(&[2], vec![1, 0])]);
    let span = e.span().expect("a span");
    assert_eq!(&src[span.start..span.end], "10 / x");
    let e = err("def f(a: i32) = 10 % a", &[], &[i(&[], vec![0])]);
    assert!(e.to_string().contains("by zero"), "{e}");
    // && short-circuits like C.
    let src = "size N = 2\ndef f(a: [i32]N) = map(fun(x => select(x != 0 && 10 / x > 1, 1, 0)), a)";
    assert_eq!(ok(src, &[], &[i(&[2], vec![0, 3])]), i(&[2], vec![0, 1]));
    // select evaluates only the value it selects, like C's `?:`: in a map over columns, in a
    // reduction's operator and on scalars (a guarded division was a division by zero).
    let src = "size N = 3\ndef f(a: [i32]N) = map(fun(x => select(x != 0, 10 / x, 0 - 1) + 1), a)";
    assert_eq!(ok(src, &[], &[i(&[3], vec![0, 3, -5])]), i(&[3], vec![0, 4, -1]));
    let src = "size N = 3\ndef f(a: [i32]N) = reduce(fun(acc, x => select(x == 0, acc, acc + 10 % x)), 0, a)";
    assert_eq!(ok(src, &[], &[i(&[3], vec![0, 3, 4])]), i(&[], vec![3]));
    let src = "def f(a: i32) = select(a == 0, 1, let q = 10 / a in q * q)";
    assert_eq!(ok(src, &[], &[i(&[], vec![0])]), i(&[], vec![1]));
    // The selected value still fails.
    let e =
        err("size N = 2\ndef f(a: [i32]N) = map(fun(x => select(x == 0, 10 / x, 0)), a)", &[], &[i(&[2], vec![1, 0])]);
    assert!(e.to_string().contains("division by zero"), "{e}");
    // f32 remainder is fmod; f32 arithmetic is single precision.
    let src = "size N = 3\ndef f(a: [f32]N) = map(fun(x => x % 3.0), a)";
    assert_eq!(ok(src, &[], &[f(&[3], vec![7.5, -7.5, 2.0])]), f(&[3], vec![1.5, -1.5, 2.0]));
    let src = "def f(a: f32, b: f32) = a + b";
    assert_eq!(ok(src, &[], &[f(&[], vec![1.0]), f(&[], vec![1e-8])]), f(&[], vec![1.0]));
    // Casts truncate toward zero; i32 to f32 rounds.
    let src = "size N = 4\ndef f(a: [f32]N) = map(fun(x => i32(x)), a)";
    assert_eq!(ok(src, &[], &[f(&[4], vec![2.7, -2.7, 0.5, -0.5])]), i(&[4], vec![2, -2, 0, 0]));
    let src = "size N = 2\ndef f(a: [i32]N) = map(fun(x => f32(x) / 2.0), a)";
    assert_eq!(ok(src, &[], &[i(&[2], vec![3, -5])]), f(&[2], vec![1.5, -2.5]));
    // select, comparisons, min, max, unary functions.
    let src = "size N = 4\ndef f(a: [f32]N) = map(fun(x => select(x < 0.0, -x, min(x, 2.0))), a)";
    assert_eq!(ok(src, &[], &[f(&[4], vec![-3.0, 1.0, 5.0, 0.0])]), f(&[4], vec![3.0, 1.0, 2.0, 0.0]));
    let src = "size N = 3\ndef f(a: [f32]N) = map(fun(x => max(floor(x), abs(x) - 10.0) + exp(0.0) + sqrt(4.0)), a)";
    assert_eq!(ok(src, &[], &[f(&[3], vec![1.5, -2.5, 30.25])]), f(&[3], vec![4.0, 0.0, 33.0]));
    let src = "size N = 3\ndef f(a: [f32]N) = map(fun(x => log(exp(x)) + sin(0.0) * cos(x) + tanh(0.0)), a)";
    let t = ok(src, &[], &[f(&[3], vec![0.5, 1.0, 2.0])]);
    assert!(t.allclose(&f(&[3], vec![0.5, 1.0, 2.0]), 1e-6, 1e-6), "{t:?}");
    let src = "size N = 3\ndef f(a: [i32]N) = map(fun(x => !(x >= 0) || x == 5), a)";
    assert_eq!(ok(src, &[], &[i(&[3], vec![-1, 3, 5])]), Tensor::bool(vec![3], vec![true, false, true]));
    let src = "size N = 3\ndef f(a: [i32]N) = map(fun(x => -x + abs(x) * 10), a)";
    assert_eq!(ok(src, &[], &[i(&[3], vec![-1, 3, 0])]), i(&[3], vec![11, 27, 0]));
}

/// The general path (a map whose function is not scalar) and the vectorized path agree with
/// a direct computation on a matrix product.
#[test]
fn matmul_via_transpose() {
    let (n, k, m) = (5usize, 7usize, 3usize);
    let a = noise(n * k, 11);
    let b = noise(k * m, 12);
    let src = "size N = 5, K = 7, M = 3\ndef mm(a: [[f32]K]N, b: [[f32]M]K) = map(fun(row => map(fun(col => reduce(add, 0.0, map(fun(p => p.0 * p.1), zip(row, col)))), transpose(b))), a)";
    let t = ok(src, &[], &[f(&[n, k], a.clone()), f(&[k, m], b.clone())]);
    let mut expected = vec![0.0f32; n * m];
    for r in 0..n {
        for c in 0..m {
            let mut acc = 0.0f32;
            for x in 0..k {
                acc += a[r * k + x] * b[x * m + c];
            }
            expected[r * m + c] = acc;
        }
    }
    assert_eq!(t, f(&[n, m], expected.clone()));
    // The same with the multiply-add fused into the reducer.
    let src = "size N = 5, K = 7, M = 3\ndef mm(a: [[f32]K]N, b: [[f32]M]K) = map(fun(row => map(fun(col => reduceSeq(fun(acc, p => acc + p.0 * p.1), 0.0, zip(row, col))), transpose(b))), a)";
    assert_eq!(ok(src, &[], &[f(&[n, k], a), f(&[k, m], b)]), f(&[n, m], expected));
}

const CONV: &str = "size inH = 5, inW = 5, inChs = 2, outChs = 3, kerH = 3, kerW = 3
def conv(inp: [[[f32]inChs]inW]inH, ks: [[[[f32]inChs]kerW]kerH]outChs) =
  mapND2@A(fun(win => map@B(fun(k => reduce(add, 0.0, map(fun(p => p.0 * p.1), joinND3(zipND3(win, k))))), ks)),
    slideND2(kerH, 1, kerW, 1, padND2(1, 1, 0.0, inp)))";

/// Direct convolution with zero padding 1, summing in the program's order (rows, columns,
/// channels).
#[allow(clippy::too_many_arguments)]
fn conv_oracle(inp: &[f32], ks: &[f32], h: usize, w: usize, c: usize, k: usize, kh: usize, kw: usize) -> Vec<f32> {
    let (oh, ow) = (h + 2 - kh + 1, w + 2 - kw + 1);
    let mut out = vec![0.0f32; oh * ow * k];
    for y in 0..oh {
        for x in 0..ow {
            for o in 0..k {
                let mut acc = 0.0f32;
                for i in 0..kh {
                    for j in 0..kw {
                        for ch in 0..c {
                            let (py, px) = (y + i, x + j);
                            let v = if py >= 1 && py <= h && px >= 1 && px <= w {
                                inp[((py - 1) * w + (px - 1)) * c + ch]
                            } else {
                                0.0
                            };
                            acc += v * ks[((o * kh + i) * kw + j) * c + ch];
                        }
                    }
                }
                out[(y * ow + x) * k + o] = acc;
            }
        }
    }
    out
}

#[test]
fn small_conv() {
    let (h, w, c, k) = (5, 5, 2, 3);
    let inp = noise(h * w * c, 21);
    let ks = noise(k * 9 * c, 22);
    let t = ok(CONV, &[], &[f(&[h, w, c], inp.clone()), f(&[k, 3, 3, c], ks.clone())]);
    let expected = conv_oracle(&inp, &ks, h, w, c, k, 3, 3);
    assert_eq!(t.shape, vec![5, 5, 3]);
    assert!(t.allclose(&f(&[5, 5, 3], expected), 1e-6, 1e-6), "{t:?}");
}

#[test]
fn conv_with_other_sizes() {
    let (h, w, c, k) = (6, 4, 3, 2);
    let inp = noise(h * w * c, 31);
    let ks = noise(k * 9 * c, 32);
    let sizes = [("inH", 6), ("inW", 4), ("inChs", 3), ("outChs", 2)];
    let t = ok(CONV, &sizes, &[f(&[h, w, c], inp.clone()), f(&[k, 3, 3, c], ks.clone())]);
    let expected = conv_oracle(&inp, &ks, h, w, c, k, 3, 3);
    assert!(t.allclose(&f(&[h, w, k], expected), 1e-6, 1e-6), "{t:?}");
}

/// A map costly enough to be spread over threads gives the same result as a direct loop.
#[test]
fn parallel_outer_map() {
    let (n, m) = (64usize, 300usize);
    let a = noise(n * m, 41);
    let src = "size N = 64, M = 300\ndef f(a: [[f32]M]N) = map(fun(row => map(fun(x => reduce(add, 0.0, map(fun(y => x * y), row))), row)), a)";
    let t = ok(src, &[], &[f(&[n, m], a.clone())]);
    let mut expected = vec![0.0f32; n * m];
    for r in 0..n {
        for x in 0..m {
            let mut acc = 0.0f32;
            for y in 0..m {
                acc += a[r * m + x] * a[r * m + y];
            }
            expected[r * m + x] = acc;
        }
    }
    assert_eq!(t, f(&[n, m], expected));
}

#[test]
fn input_errors() {
    let src = "size N = 4\ndef f(xs: [f32]N, ks: [[f32]3]N) = xs";
    let good = [f(&[4], iota(4)), f(&[4, 3], iota(12))];
    assert_eq!(ok(src, &[], &good), good[0]);
    // Wrong shape.
    let e = err(src, &[], &[f(&[4], iota(4)), f(&[4, 2], iota(8))]);
    assert_eq!(e.to_string(), "parameter `ks` expects shape [4, 3] (f32), got [4, 2] (f32)");
    // Wrong element type.
    let e = err(src, &[], &[i(&[4], vec![0; 4]), f(&[4, 3], iota(12))]);
    assert_eq!(e.to_string(), "parameter `xs` expects shape [4] (f32), got [4] (i32)");
    // Wrong count.
    let e = err(src, &[], &[f(&[4], iota(4))]);
    assert_eq!(e, EvalError::InputCount { expected: 2, got: 1 });
    // Missing and non-positive sizes.
    let p = program("def f(xs: [f32]N) = xs");
    let e = eval(&p, &Sizes::new(), &[f(&[4], iota(4))]).unwrap_err();
    assert_eq!(e, EvalError::MissingSize("N".into()));
    let e = eval(&p, &sizes_of(&p, &[("N", 0)]), &[f(&[0], vec![])]).unwrap_err();
    assert!(matches!(e, EvalError::NonPositiveSize { .. }), "{e}");
    // Data that does not fill its shape.
    let e = err("size N = 4\ndef f(xs: [f32]N) = xs", &[], &[Tensor::f32(vec![4], vec![1.0])]);
    assert!(matches!(e, EvalError::BadInput { .. }), "{e}");
}

#[test]
fn runtime_errors_have_spans() {
    let src = "size N = 6\ndef f(xs: [f32]N) = split(4, xs)";
    let e = err(src, &[], &[f(&[6], iota(6))]);
    assert!(e.to_string().contains("does not divide"), "{e}");
    let span = e.span().expect("a span");
    assert_eq!(&src[span.start..span.end], "split(4, xs)");
    let e = err("size N = 3\ndef f(xs: [f32]N) = at(3, xs)", &[], &[f(&[3], iota(3))]);
    assert!(e.to_string().contains("out of bounds"), "{e}");
    let e =
        err("size N = 3, M = 4\ndef f(a: [f32]N, b: [f32]M) = zip(a, b)", &[], &[f(&[3], iota(3)), f(&[4], iota(4))]);
    assert!(e.to_string().contains("different lengths"), "{e}");
}

/// Ill-typed programs reach the interpreter too: they give errors, never panics.
#[test]
fn ill_typed_programs_give_errors() {
    let x = [f(&[4], iota(4))];
    let cases = [
        "def f(xs: [f32]4) = map(fun(x => x.0), xs)",
        "def f(xs: [f32]4) = join(xs)",
        "def f(xs: [f32]4) = transpose(xs)",
        "def f(xs: [f32]4) = map(fun(x => x + 1), xs)",
        "def f(xs: [f32]4) = reduce(add, 0, xs)",
        "def f(xs: [f32]4) = xs + 1.0",
        "def f(xs: [f32]4) = map(xs, xs)",
        "def f(xs: [f32]4) = zip(xs, at(0, xs))",
        "def f(xs: [f32]4) = map(fun(x => (x, x)), xs)",
        "def f(xs: [f32]4) = let g = map(fun(x => x), xs) in g(xs)",
        "def f(xs: [f32]4) = add(1.0)",
        "def f(xs: [f32]4) = map(fun(x => select(x, 1.0, 2.0)), xs)",
        "def f(xs: [f32]4) = map(fun(x => select(x > 0.0, 1.0, 2)), xs)",
        "def f(xs: [f32]4) = asScalar(xs)",
        "def f(xs: [f32]4) = asVector(3, xs)",
        "def f(xs: [f32]4) = map(fun(x => !x), xs)",
        "def f(xs: [f32]4) = let g = fun(i => split(2, xs)) in g(1.0)(2.0)",
        "def f(xs: [f32]4) = map(fun(x => select(x > 1.0, (x, x), x)), xs)",
        "def f(xs: [f32]4) = pad(1, 1, 0, xs)",
        "def f(xs: [f32]4) = slide(5, 1, xs)",
        "def f(xs: [f32]4) = join(map(fun(x => select(x > 1.0, split(2, xs), split(1, xs))), xs))",
        "def f(xs: [f32]4) = let r = reduce(fun(a, x => a + x), 0.0, xs) in r(1.0)",
        "def f(xs: [f32]4) = map(fun(x => fun(y => x)), xs)",
        "def f(xs: [f32]4) = reduce(add, xs, xs)",
        "def f(xs: [f32]4) = reduce(fun(a, x => (a, x)), 0.0, xs)",
    ];
    for src in cases {
        // Some of these are accepted (e.g. slide to an empty array); none may panic.
        let _ = run(src, &[], &x);
    }
    // Accumulators that nest without bound are stopped before they exhaust the stack.
    let big = [f(&[100_000], vec![0.0; 100_000])];
    for src in [
        "def f(xs: [f32]100000) = reduce(fun(a, x => (a, x)), 0.0, xs)",
        "def f(xs: [f32]100000) = reduce(fun(a, x => fun(y => a)), 0.0, xs)",
    ] {
        let e = err(src, &[], &big);
        assert!(e.to_string().contains("too deeply"), "{e}");
    }
    let e = err("def f(xs: [f32]4) = map(fun(x => (x, x)), xs)", &[], &x);
    assert_eq!(e, EvalError::TupleOutput);
    let e = err("def f(xs: [f32]4) = add(1.0)", &[], &x);
    assert_eq!(e, EvalError::FunctionOutput);
    let e = err("def f(xs: [f32]4) = map(fun(x => x.0), xs)", &[], &x);
    assert!(e.to_string().contains("expects a tuple"), "{e}");
}

/// A program nested deeper than the interpreter allows gives an error, not a stack overflow.
#[test]
fn deep_nesting_is_an_error() {
    let mut p = program("def f(x: f32) = x");
    let mut id = p.root;
    let add = p.push(Node::Prim(Prim::Bin(BinOp::Add)), Default::default());
    for _ in 0..20_000 {
        let a = p.push(Node::App(add, id), Default::default());
        id = p.push(Node::App(a, p.root), Default::default());
    }
    p.root = id;
    let e = eval(&p, &Sizes::new(), &[f(&[], vec![1.0])]).unwrap_err();
    assert!(e.to_string().contains("nests too deeply"), "{e}");
    // Within the limit it works.
    let mut p = program("def f(x: f32) = x");
    let x = p.root;
    let mut id = x;
    for _ in 0..1000 {
        let op = add_node(&mut p);
        let a = p.push(Node::App(op, id), Default::default());
        id = p.push(Node::App(a, x), Default::default());
    }
    p.root = id;
    assert_eq!(eval(&p, &Sizes::new(), &[f(&[], vec![1.0])]).unwrap(), f(&[], vec![1001.0]));
}

#[test]
fn malformed_programs_give_errors() {
    let mut p = program("def f(x: f32) = x");
    let x = p.root;
    p.root = p.push(Node::App(crate::ast::NodeId(999), x), Default::default());
    assert!(matches!(eval(&p, &Sizes::new(), &[f(&[], vec![1.0])]), Err(EvalError::Internal(_))));
    // A variable with no binder.
    let mut p = program("def f(x: f32) = x");
    p.root = p.push(Node::Var(3), Default::default());
    assert!(matches!(eval(&p, &Sizes::new(), &[f(&[], vec![1.0])]), Err(EvalError::Runtime { .. })));
}

fn add_node(p: &mut Program) -> crate::ast::NodeId {
    p.push(Node::Prim(Prim::Bin(BinOp::Add)), Default::default())
}

#[test]
fn concrete_shapes_and_random_inputs() {
    let p = program("size N = 4, K = 2\ndef f(a: [[f32]K](N * 2), b: i32, c: [bool]N, v: [f32x4]K) = b");
    let s = sizes_of(&p, &[]);
    assert_eq!(concrete_shape(&p.params[0].ty, &s).unwrap(), (ScalarKind::F32, vec![8, 2]));
    assert_eq!(concrete_shape(&p.params[1].ty, &s).unwrap(), (ScalarKind::I32, vec![]));
    assert_eq!(concrete_shape(&p.params[3].ty, &s).unwrap(), (ScalarKind::F32, vec![2, 4]));
    let e = concrete_shape(&p.params[0].ty, &Sizes::new()).unwrap_err();
    assert!(matches!(e, EvalError::MissingSize(_)), "{e}");
    let tup = Type::Tuple(vec![Type::F32, Type::I32]);
    assert!(concrete_shape(&tup, &s).is_err());
    let ins = random_inputs(&p, &s, 7).unwrap();
    assert_eq!(ins, random_inputs(&p, &s, 7).unwrap());
    assert_ne!(ins, random_inputs(&p, &s, 8).unwrap());
    assert_eq!(ins[0].shape, vec![8, 2]);
    assert!(ins[0].as_f32().unwrap().iter().all(|x| (-1.0..1.0).contains(x)));
    assert!(ins[1].as_i32().unwrap().iter().all(|x| (-10..=10).contains(x)));
    assert_eq!(ins[2].as_bool().unwrap().len(), 4);
    assert_eq!(eval(&p, &s, &ins).unwrap(), ins[1]);
}

#[test]
fn npy_round_trip() {
    let tensors = [
        f(&[], vec![3.5]),
        f(&[3], vec![1.0, -2.0, f32::MAX]),
        f(&[2, 3], noise(6, 5)),
        f(&[2, 1, 3], noise(6, 6)),
        i(&[], vec![-7]),
        i(&[4], vec![1, -2, i32::MIN, i32::MAX]),
        i(&[2, 2], vec![1, 2, 3, 4]),
        i(&[1, 2, 3], vec![0, 1, 2, 3, 4, 5]),
        Tensor::bool(vec![2], vec![true, false]),
        f(&[0, 3], vec![]),
    ];
    for t in tensors {
        let path = temp_path("rt.npy");
        write_npy(&path, &t).unwrap();
        let back = read_npy(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(back, t);
    }
}

#[test]
fn npy_reads_numpy_headers_and_refuses_other_dtypes() {
    // A file as numpy writes it: np.save of np.arange(3, dtype=np.int32).reshape(1, 3).
    let header = "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 3), }";
    let mut bytes = npy_bytes(header);
    for x in [0i32, 1, 2] {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    let path = temp_path("np.npy");
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(read_npy(&path).unwrap(), i(&[1, 3], vec![0, 1, 2]));
    // float64 is refused with a message naming the dtype.
    let mut bytes = npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }");
    bytes.extend_from_slice(&1.0f64.to_le_bytes());
    bytes.extend_from_slice(&2.0f64.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let e = read_npy(&path).unwrap_err();
    assert!(e.to_string().contains("unsupported dtype '<f8'"), "{e}");
    // Fortran order is refused.
    let mut bytes = npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }");
    bytes.extend([0u8; 16]);
    std::fs::write(&path, &bytes).unwrap();
    let e = read_npy(&path).unwrap_err();
    assert!(e.to_string().contains("Fortran"), "{e}");
    // Not an npy file at all, and a missing file.
    std::fs::write(&path, b"hello").unwrap();
    assert!(matches!(read_npy(&path), Err(EvalError::Npy { .. })));
    let _ = std::fs::remove_file(&path);
    assert!(matches!(read_npy(&path), Err(EvalError::Npy { .. })));
}

/// The bytes of an `.npy` version 1.0 header with the given dictionary.
fn npy_bytes(dict: &str) -> Vec<u8> {
    let mut h = dict.to_string();
    let fill = (64 - (10 + h.len() + 1) % 64) % 64;
    h.push_str(&" ".repeat(fill));
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    out
}

#[test]
fn tensor_comparisons() {
    let a = f(&[3], vec![1.0, 2.0, f32::NAN]);
    let b = f(&[3], vec![1.0, 2.001, f32::NAN]);
    assert!((a.max_abs_diff(&b).unwrap() - 0.001).abs() < 1e-6);
    assert!(a.allclose(&b, 1e-3, 0.0));
    assert!(!a.allclose(&b, 1e-5, 1e-5));
    assert_eq!(a.max_abs_diff(&f(&[1, 3], vec![0.0; 3])), None);
    assert_eq!(a.max_abs_diff(&f(&[3], vec![1.0, 2.0, 0.0])), Some(f64::INFINITY));
}

/// Direct convolution at a VGG-16 layer size (462M multiply-adds) against nested loops: the
/// interpreter is the oracle for kernels of this size. Its speed is measured by
/// `cargo bench -p mapsat-ir --bench interp`.
#[test]
fn vgg_conv_matches_nested_loops() {
    let src = "size inH = 56, inW = 56, inChs = 128, outChs = 128, kerH = 3, kerW = 3
def conv(inp: [[[f32]inChs]inW]inH, ks: [[[[f32]inChs]kerW]kerH]outChs) =
  mapND2@A(fun(win => map@B(fun(k => reduce(add, 0.0, map(fun(p => p.0 * p.1), joinND3(zipND3(win, k))))), ks)),
    slideND2(kerH, 1, kerW, 1, padND2(1, 1, 0.0, inp)))";
    let (h, w, c, k) = (56, 56, 128, 128);
    let inp = noise(h * w * c, 51);
    let ks = noise(k * 9 * c, 52);
    let t = ok(src, &[], &[f(&[h, w, c], inp.clone()), f(&[k, 3, 3, c], ks.clone())]);
    let expected = conv_oracle(&inp, &ks, h, w, c, k, 3, 3);
    assert!(t.allclose(&f(&[h, w, k], expected), 1e-5, 1e-5));
}

/// Matrix products of 512x512 matrices (134M multiply-adds), high-level and with a fused
/// reducer, against nested loops: exactly equal (the same additions in the same order). Their
/// speed is measured by `cargo bench -p mapsat-ir --bench interp`.
#[test]
fn matmul_matches_nested_loops() {
    let n = 512usize;
    let a = noise(n * n, 61);
    let b = noise(n * n, 62);
    let mut expected = vec![0.0f32; n * n];
    for r in 0..n {
        for c in 0..n {
            let mut acc = 0.0f32;
            for x in 0..n {
                acc += a[r * n + x] * b[x * n + c];
            }
            expected[r * n + c] = acc;
        }
    }
    let expected = f(&[n, n], expected);
    for body in [
        "reduce(add, 0.0, map(fun(p => p.0 * p.1), zip(row, col)))",
        "reduceSeq(fun(acc, p => acc + p.0 * p.1), 0.0, zip(row, col))",
    ] {
        let src = format!("size N = 512\ndef mm(a: [[f32]N]N, b: [[f32]N]N) = map(fun(row => map(fun(col => {body}), transpose(b))), a)");
        let t = ok(&src, &[], &[f(&[n, n], a.clone()), f(&[n, n], b.clone())]);
        assert_eq!(t, expected, "{body}");
    }
}

#[test]
fn integers_and_bools_compare_exactly_whatever_the_tolerance() {
    let want = Tensor::i32(vec![3], vec![-2147483648, 7, 0]);
    let off = Tensor::i32(vec![3], vec![-2147483641, 7, 0]);
    let c = off.compare(&want, 1e-3, 1e-4);
    assert!(!c.ok, "{c:?}");
    assert_eq!((c.mismatches, c.max_abs_diff), (1, 7.0));
    assert!(want.compare(&want, 1e-3, 1e-4).ok);
    let (t, f) = (Tensor::bool(vec![2], vec![true, false]), Tensor::bool(vec![2], vec![true, true]));
    assert!(!f.compare(&t, 1.0, 1.0).ok);
    // Floats keep their tolerance.
    let a = Tensor::f32(vec![1], vec![1000.0]);
    assert!(Tensor::f32(vec![1], vec![1000.5]).compare(&a, 1e-3, 1e-4).ok);
}

/// An expected infinity is matched only by the same infinity: `atol + rtol * |inf|` is an
/// infinite tolerance, under which a NaN, a number or the other infinity passed the check (a
/// reassociated sum's kernel against the interpreter's overflowed one).
#[test]
fn an_expected_infinity_is_matched_only_by_itself() {
    let want = Tensor::f32(vec![4], vec![f32::INFINITY, f32::NEG_INFINITY, f32::INFINITY, 1.0]);
    assert!(want.compare(&want, 1e-3, 1e-4).ok);
    for got in [
        vec![f32::NAN, f32::NEG_INFINITY, f32::INFINITY, 1.0],
        vec![3.0e38, f32::NEG_INFINITY, f32::INFINITY, 1.0],
        vec![f32::INFINITY, f32::INFINITY, f32::INFINITY, 1.0],
        vec![f32::INFINITY, f32::NEG_INFINITY, f32::INFINITY, f32::INFINITY],
    ] {
        let c = Tensor::f32(vec![4], got.clone()).compare(&want, 1e-3, 1e-4);
        assert!(!c.ok && c.mismatches == 1 && c.max_abs_diff.is_infinite(), "{got:?}: {c:?}");
    }
}

/// A tolerance that is NaN, infinite or negative counts as 0: a NaN tolerance passed a result
/// off by 99, a negative one failed identical tensors.
#[test]
fn a_tolerance_that_is_no_finite_non_negative_number_is_zero() {
    let want = Tensor::f32(vec![2], vec![1.0, 2.0]);
    let off = Tensor::f32(vec![2], vec![1.0, 101.0]);
    for t in [f64::NAN, f64::INFINITY, -1.0] {
        assert!(!off.compare(&want, t, t).ok, "{t}");
        assert!(!off.compare(&want, 0.0, t).ok, "{t}");
        assert!(want.compare(&want, t, t).ok, "{t}");
    }
}

/// `check_inputs` refuses what `eval` refuses, before anything runs: another count, shape or
/// element type.
#[test]
fn check_inputs_refuses_what_eval_refuses() {
    let p = program("size N = 4\ndef f(xs: [f32]N, ks: [[f32]3]N) = xs");
    let sizes = p.resolve_sizes(&Sizes::new()).unwrap();
    let good = [f(&[4], iota(4)), f(&[4, 3], iota(12))];
    assert_eq!(check_inputs(&p, &sizes, &good), Ok(()));
    for bad in [
        vec![f(&[4], iota(4)), f(&[3, 4], iota(12))],
        vec![i(&[4], vec![0; 4]), f(&[4, 3], iota(12))],
        vec![f(&[4], iota(4))],
    ] {
        let want = eval(&p, &sizes, &bad).unwrap_err();
        assert_eq!(check_inputs(&p, &sizes, &bad), Err(want));
    }
}
