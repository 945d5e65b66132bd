use super::*;

fn roundtrip(src: &str) -> String {
    let p = parse(src).unwrap_or_else(|e| panic!("{e:?}"));
    let text = print(&p);
    let q = parse(&text).unwrap_or_else(|e| panic!("reparse failed: {e:?}\n{text}"));
    assert_eq!(p, q, "round trip changed the program:\n{text}");
    text
}

#[test]
fn vector_from_scalar_keeps_its_width() {
    let t = roundtrip(
        "size N = 8\ndef f(a: [f32]N, s: f32) = asScalar(map(fun(v => vectorFromScalar(4, s) * v), asVector(4, a)))",
    );
    assert!(t.contains("vectorFromScalar(4, s) * v"), "{t}");
}

#[test]
fn a_vector_width_keeps_its_size_variable() {
    let t = roundtrip(
        "size N = 8, vw in 2..8 = 4\ndef f(a: [f32]N, s: f32) = asScalar(map(fun(v => vectorFromScalar(vw, s) * v), asVector(vw, a)))",
    );
    assert!(t.contains("vectorFromScalar(vw, s) * v") && t.contains("asVector(vw, a)"), "{t}");
}

#[test]
fn listing3() {
    let t = roundtrip(
        "size n = 64, s0 = 16, s1 = 4\n def f(X: [f32]n, y: f32, z: f32) = join o map@A(map@B(fun(a => a + z)) o join o map@C(map@D(fun(a => a * y))) o split(s1)) o split(s0) $ X",
    );
    assert!(t.contains("map@A("), "{t}");
}

#[test]
fn conv_macros() {
    let t = roundtrip(
        "def conv(inp: [[[f32]C]W]H, ks: [[[[f32]C]KW]KH]K) = mapND2@A(fun(win => map@B(fun(k => reduce(add, 0.0, map(fun(p => p.0 * p.1), joinND3(zipND3(win, k))))), ks)), slideND2(KH, 1, KW, 1, inp))",
    );
    assert!(t.contains("map@A_0("), "{t}");
    assert!(t.contains("map@A_1("), "{t}");
}

/// The canonical text of two programs: composition and `$` become nested applications, the
/// n-dimensional macros are expanded (with their labels `A_0`, `A_1`), binders keep their names,
/// and the text is a fixed point of parsing and printing.
#[test]
fn canonical_text() {
    let listing3 = roundtrip("size n = 64, s0 = 16, s1 = 4\n def f(X: [f32]n, y: f32, z: f32) = join o map@A(map@B(fun(a => a + z)) o join o map@C(map@D(fun(a => a * y))) o split(s1)) o split(s0) $ X");
    assert_eq!(
        listing3,
        "size n = 64\nsize s0 = 16\nsize s1 = 4\ndef f(X: [f32]n, y: f32, z: f32) =\n  join(\n    map@A(\n      \
         fun(x => map@B(fun(a => a + z), join(map@C(map@D(fun(a => a * y)), split(s1, x))))),\n      split(s0, X)))\n"
    );
    let conv = roundtrip("def conv(inp: [[[f32]C]W]H, ks: [[[[f32]C]KW]KH]K) = mapND2@A(fun(win => map@B(fun(k => reduce(add, 0.0, map(fun(p => p.0 * p.1), joinND3(zipND3(win, k))))), ks)), slideND2(KH, 1, KW, 1, padND2(1, 1, 0.0, inp)))");
    assert!(conv.starts_with("size C\nsize W\nsize H\nsize KW\nsize KH\nsize K\ndef conv("), "{conv}");
    for part in [
        "map@A_0(\n    map@A_1(\n      fun(win =>",
        "join(\n                  join(\n                    map@m2(fun(p => map@m3(fun(p1 => zip(p1.0, p1.1)), zip(p.0, p.1))), zip(win, k))",
        "map@m4(\n      transpose,\n      slide(KH, 1, map@m5(slide(KW, 1), pad(1, 1, 0.0, map@m6(pad(1, 1, 0.0), inp)))))",
    ] {
        assert!(conv.contains(part), "no `{part}` in:\n{conv}");
    }
    for text in [listing3, conv] {
        assert_eq!(print(&parse(&text).expect("parses")), text);
    }
}

#[test]
fn nested_tuple_fields() {
    let t = roundtrip("def f(t: ((f32, i32), f32)) = t.0.1");
    assert!(t.contains("t.0.1"), "{t}");
    let t = roundtrip("def f(t: ((f32, i32), f32)) = get(1, get(0, t))");
    assert!(t.contains("t.0.1"), "{t}");
}

#[test]
fn a_primitive_given_too_many_arguments_through_dollar_is_refused() {
    // Printing it would give `map(f, g, xs)`, which does not parse: refused when parsed.
    for src in [
        "size N = 4\ndef g(xs: [f32]N) = (map(fun(x => x + 1.0)) $ map(fun(x => x))) $ xs",
        "size N = 4\ndef g(xs: [f32]N) = (transpose $ xs)(xs)",
    ] {
        let e = parse(src).expect_err(src);
        assert!(e.message.contains("but 3 were given") || e.message.contains("but 2 were given"), "{}", e.message);
    }
    // Applied once per argument, a primitive is fine.
    roundtrip("size N = 4\ndef g(xs: [f32]N) = (map(fun(x => x + 1.0)) $ xs)");
}

#[test]
fn the_smallest_i32_is_a_literal() {
    let p = parse("def f(x: i32) = max(x, -2147483648)").unwrap();
    assert!(p.nodes.contains(&crate::ast::Node::Lit(crate::ast::Lit::I32(i32::MIN))));
    let t = roundtrip("def f(x: i32) = max(x, -2147483648)");
    assert!(t.contains("-2147483648"), "{t}");
    // Its magnitude alone, or negated otherwise than as a literal, is no i32.
    for src in ["def f(x: i32) = x + 2147483648", "def f(x: i32) = -(2147483648)", "def f(x: i32) = - -2147483649"] {
        assert!(parse(src).is_err(), "{src}");
    }
    assert!(parse("def f(x: i32) = -2147483647 - 1").is_ok());
}

/// A negated literal prints as `neg(5)`: `- 5` read back as the literal -5, so that `fmt` did
/// not give the program back (nor the same text twice).
#[test]
fn a_negated_literal_prints_as_a_call() {
    let t = roundtrip("def f(x: i32) = neg(0) + neg(5) + -(-3) + x");
    assert!(t.contains("neg(0) + neg(5) + neg(-3) + x"), "{t}");
    let t = roundtrip("def f(x: f32) = neg(1.5) * neg(0.0) - -x");
    assert!(t.contains("neg(1.5) * neg(0.0) - -x"), "{t}");
    assert_eq!(print(&parse(&t).unwrap()), t);
}
