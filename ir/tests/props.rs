//! Property tests: size simplification keeps values; generated programs survive print/parse
//! unchanged and keep their type; random and mutated text never makes the front end panic.

use mapsat_ir::size::Size;
use mapsat_ir::{check, parse, print};
use proptest::prelude::*;

/// A size expression as a plain tree, evaluated directly (the oracle for `Size`).
#[derive(Clone, Debug)]
enum E {
    C(i64),
    V(usize),
    Bin(u8, Box<E>, Box<E>),
}

const VARS: [&str; 3] = ["a", "b", "c"];

fn floor_div(a: i64, b: i64) -> Option<i64> {
    if b == 0 {
        return None;
    }
    Some(a.div_euclid(b) - if b < 0 && a.rem_euclid(b) != 0 { 1 } else { 0 })
}

impl E {
    fn eval(&self, env: &[i64; 3]) -> Option<i64> {
        Some(match self {
            E::C(c) => *c,
            E::V(i) => env[*i],
            E::Bin(op, x, y) => {
                let (x, y) = (x.eval(env)?, y.eval(env)?);
                match op {
                    0 => x.checked_add(y)?,
                    1 => x.checked_sub(y)?,
                    2 => x.checked_mul(y)?,
                    3 => floor_div(x, y)?,
                    4 => x.checked_sub(y.checked_mul(floor_div(x, y)?)?)?,
                    5 => x.min(y),
                    _ => x.max(y),
                }
            }
        })
    }

    fn build(&self) -> Size {
        match self {
            E::C(c) => Size::constant(*c),
            E::V(i) => Size::var(VARS[*i]),
            E::Bin(op, x, y) => {
                let (x, y) = (x.build(), y.build());
                match op {
                    0 => x.add(&y),
                    1 => x.sub(&y),
                    2 => x.mul(&y),
                    3 => x.div(&y),
                    4 => x.rem(&y),
                    5 => x.minimum(&y),
                    _ => x.maximum(&y),
                }
            }
        }
    }
}

fn expr() -> impl Strategy<Value = E> {
    let leaf = prop_oneof![(-6i64..12).prop_map(E::C), (0usize..3).prop_map(E::V)];
    leaf.prop_recursive(4, 24, 2, |inner| {
        (0u8..7, inner.clone(), inner).prop_map(|(op, x, y)| E::Bin(op, Box::new(x), Box::new(y)))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Simplification never changes the value where the original has one (size variables are
    /// at least 1, as the default ranges assume).
    #[test]
    fn size_simplification_keeps_value(e in expr(), env in [1i64..9, 1i64..9, 1i64..9]) {
        if let Some(v) = e.eval(&env) {
            let s = e.build();
            let values: mapsat_ir::Sizes = VARS.iter().zip(env).map(|(k, v)| (k.to_string(), v)).collect();
            prop_assert_eq!(s.eval(&values), Some(v), "{:?} simplified to {}", e, s);
        }
    }

    /// Reducing the constants of divisions by constants (`(N - 1)/2 + 1` as `(N + 1)/2`) keeps
    /// the value too.
    #[test]
    fn reduced_division_offsets_keep_value(e in expr(), env in [1i64..9, 1i64..9, 1i64..9]) {
        let s = e.build();
        let values: mapsat_ir::Sizes = VARS.iter().zip(env).map(|(k, v)| (k.to_string(), v)).collect();
        if let Some(v) = s.eval(&values) {
            prop_assert_eq!(s.with_offsets_reduced().eval(&values), Some(v), "{} as {}", s, s.with_offsets_reduced());
        }
    }

    /// Overlapped tiling: tiles `slide(c + w - 1, c, xs)` of an input of length `e`, with tile
    /// step the size variable `c`. The tile count's exact divisions (what the checker records)
    /// cancel `c * count` to a size of the same value wherever the step tiles the input, and
    /// for an input length `a`, to the `a - w + 1` windows of `slide(w, 1, xs)`.
    #[test]
    fn tile_count_cancels_where_the_step_tiles(e in expr(), w in 1i64..5, env in [1i64..9, 1i64..9, 1i64..9]) {
        let u = Size::var("c");
        let span = e.build().sub(&u.add(&Size::constant(w - 1)));
        let count = span.div(&u).add(&Size::constant(1));
        let facts = Size::tile_divisions(&count, &span, &u);
        let covered = u.mul(&count).cancel_exact(&facts);
        let values: mapsat_ir::Sizes = VARS.iter().zip(env).map(|(k, v)| (k.to_string(), v)).collect();
        if let Some(sp) = span.eval(&values) {
            if sp.rem_euclid(env[2]) == 0 {
                prop_assert_eq!(covered.eval(&values), u.mul(&count).eval(&values), "{} vs {}", covered, count);
            }
        }
        let a = Size::var("a");
        let span = a.sub(&u.add(&Size::constant(w - 1)));
        let count = span.div(&u).add(&Size::constant(1));
        let facts = Size::tile_divisions(&count, &span, &u);
        prop_assert_eq!(u.mul(&count).cancel_exact(&facts), a.sub(&Size::constant(w - 1)));
    }

    /// The printed form of a size parses back to the same canonical size.
    #[test]
    fn size_print_parse(e in expr()) {
        let s = e.build();
        let src = format!("size a, b, c\ndef f(x: [f32]({s})) = x");
        let p = parse(&src).map_err(|err| TestCaseError::fail(format!("{src}: {err:?}")))?;
        let (dims, _) = p.params[0].ty.dims();
        prop_assert_eq!(dims[0], &s);
    }
}

/// One array-to-array stage of a generated program; `{}` is the input expression. Every stage
/// keeps a one-dimensional `[f32]` and states how it changes the length.
struct Stage {
    text: &'static str,
    /// Length after the stage, or None when the stage does not apply to this length.
    len: fn(i64) -> Option<i64>,
}

const STAGES: &[Stage] = &[
    Stage { text: "map(fun(x => x * 2.0 + 1.0), {})", len: Some },
    Stage { text: "join(map(fun(r => map(fun(v => v - 1.0), r)), split(4, {})))", len: |n| (n % 4 == 0).then_some(n) },
    Stage { text: "join(transpose(split(2, {})))", len: |n| (n % 2 == 0).then_some(n) },
    Stage { text: "map(fun(w => reduce(add, 0.0, w)), slide(3, 1, pad(1, 1, 0.0, {})))", len: Some },
    Stage { text: "let t = {} in map(fun(p => p.0 * p.1), zip(t, t))", len: Some },
    Stage { text: "padClamp(1, 2, {})", len: |n| Some(n + 3) },
    Stage { text: "asScalar(map(fun(v => v * v), asVector(4, {})))", len: |n| (n % 4 == 0).then_some(n) },
    Stage { text: "map(fun(x => select(x > 0.0, x, -x)), {})", len: Some },
    Stage { text: "(map(fun(x => x + 1.0)) o map(fun(x => min(x, 3.0)))) $ {}", len: Some },
    Stage { text: "mapSeq@S(fun(x => f32(i32(x * 10.0)) / 10.0), {})", len: Some },
    Stage {
        text: "join(mapWrg(0, fun(r => toLocal(mapLcl(0, fun(v => v * 0.5), r))), split(2, {})))",
        len: |n| (n % 2 == 0).then_some(n),
    },
    Stage { text: "map(fun(w => at(1, w) - at(0, w)), slide(2, 2, {}))", len: |n| (n % 2 == 0).then_some(n / 2) },
];

fn program(choices: &[usize]) -> (String, i64) {
    let mut e = "xs".to_string();
    let mut n: i64 = 24;
    let mut labelled = false;
    for &c in choices {
        let st = &STAGES[c % STAGES.len()];
        let Some(m) = (st.len)(n) else { continue };
        if st.text.contains("@S") {
            if labelled {
                continue;
            }
            labelled = true;
        }
        e = st.text.replace("{}", &e);
        n = m;
    }
    (format!("size N = 24\ndef g(xs: [f32]N) = {e}\n"), n)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// parse(print(p)) == p, printing is a fixed point, and the type is kept.
    #[test]
    fn generated_programs_round_trip(choices in proptest::collection::vec(0usize..64, 1..6)) {
        let (src, len) = program(&choices);
        let p = parse(&src).map_err(|e| TestCaseError::fail(format!("{src}\n{e:?}")))?;
        let t = check::check(&p).map_err(|e| TestCaseError::fail(format!("{src}\n{e:?}")))?;
        let text = print(&p);
        let q = parse(&text).map_err(|e| TestCaseError::fail(format!("{text}\n{e:?}")))?;
        prop_assert_eq!(&p, &q, "{}", text);
        prop_assert_eq!(print(&q), text);
        let t2 = check::check(&q).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        prop_assert_eq!(&t.result, &t2.result);
        let sizes = mapsat_ir::Sizes::new().with("N", 24);
        let concrete = check::check_with_sizes(&p, &sizes).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        prop_assert_eq!(concrete.result.to_string(), format!("[f32]{len}"));
    }

    /// No input text makes the parser, checker or printer panic.
    #[test]
    fn random_text_never_panics(src in "[a-zA-Z0-9_@(){}\\[\\],.:=<>+*/%$!&|\\- \n]{0,120}") {
        if let Ok(p) = parse(&src) {
            let _ = check::check(&p);
            let _ = print(&p);
        }
    }

    /// Mutations of valid programs (deleted, duplicated or replaced characters) never make the
    /// front end panic, and whatever still parses still round-trips.
    #[test]
    fn mutated_programs_never_panic(
        choices in proptest::collection::vec(0usize..64, 1..5),
        edits in proptest::collection::vec((0usize..1000, 0u8..3, proptest::char::range(' ', '~')), 1..4),
    ) {
        let (src, _) = program(&choices);
        let mut chars: Vec<char> = src.chars().collect();
        for (pos, kind, ch) in edits {
            if chars.is_empty() { break; }
            let i = pos % chars.len();
            match kind {
                0 => { chars.remove(i); }
                1 => { let c = chars[i]; chars.insert(i, c); }
                _ => chars[i] = ch,
            }
        }
        let text: String = chars.into_iter().collect();
        if let Ok(p) = parse(&text) {
            let _ = check::check(&p);
            let again = print(&p);
            let q = parse(&again).map_err(|e| TestCaseError::fail(format!("{again}\n{e:?}")))?;
            prop_assert_eq!(&p, &q);
        }
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    for src in [
        format!("def f(x: f32) = {}x{}", "(".repeat(5000), ")".repeat(5000)),
        format!("def f(x: f32) = x{}", " + x".repeat(5000)),
        format!("def f(x: f32) = {}x", "-".repeat(5000)),
        format!("def f(x: [f32]N) = {}x", "join o ".repeat(5000)),
        format!("def f(x: [f32]{}N{}) = x", "(".repeat(5000), ")".repeat(5000)),
    ] {
        let e = parse(&src).expect_err("too deep");
        let chain = src.contains(" + x") || src.contains("join o");
        let want = if chain { "a chain of more than 2000 links" } else { "nesting deeper than 200 levels" };
        assert!(e.message.contains(want), "{}", e.message);
    }
}

/// Sizes have their own limit on operators in a row: millions of minus signs overflowed the
/// parser's stack (the process aborted), and thousands of divisions took minutes (a tester's
/// findings). At the limit a size parses.
#[test]
fn a_long_size_is_an_error_not_a_crash_or_a_hang() {
    for src in [
        format!("size N = 4\ndef f(x: [f32]N) = split({}4, x)", "-".repeat(3_000_000)),
        format!("size N = 4\ndef f(x: [f32]N) = split({} + 1, x)", vec!["N"; 10_000].join("/")),
        format!("def f(x: [f32]({})) = x", vec!["1"; 300].join(" * ")),
    ] {
        let e = parse(&src).expect_err("too long");
        assert!(e.message.contains("a size of more than 200 operators in a row"), "{}", e.message);
    }
    let ok = format!("def f(x: [f32]({}4)) = x", "-".repeat(200));
    let p = parse(&ok).expect("200 minus signs");
    assert_eq!(p.params[0].ty.to_string(), "[f32]4");
}

/// Lists have a limit too: a tuple of 20,000 components took all of a machine's memory, a
/// `zip` of 100,000 arguments likewise, 100,000 parameters most of a minute (a tester's
/// findings). At the limit a program parses.
#[test]
fn a_long_list_is_an_error_not_a_hang() {
    let xs = |n: usize| vec!["x"; n].join(", ");
    let params = |n: usize| (0..n).map(|i| format!("p{i}: f32")).collect::<Vec<_>>().join(", ");
    let sizes = |n: usize| (0..n).map(|i| format!("S{i} = 1")).collect::<Vec<_>>().join(", ");
    for (src, what) in [
        (format!("def f(x: f32) = ({}).0", xs(20_000)), "tuple components"),
        (format!("size N = 4\ndef f(x: [f32]N) = map(fun(p => p.0), zip({}))", xs(300)), "arguments"),
        (format!("def f({}) = p0", params(300)), "parameters"),
        (format!("size {}\ndef f(x: f32) = x", sizes(300)), "size declarations"),
        (format!("def f(x: ({})) = x", vec!["f32"; 300].join(", ")), "tuple components"),
    ] {
        let e = parse(&src).expect_err("too long");
        assert!(e.message.contains(&format!("more than 256 {what}")), "{}", e.message);
    }
    assert!(parse(&format!("def f(x: f32) = ({}).0", xs(256))).is_ok());
    assert!(parse(&format!("def f({}) = p0", params(256))).is_ok());
}
