use super::*;

fn roundtrip(src: &str) -> String {
    let p = parse(src).unwrap_or_else(|e| panic!("{e:?}"));
    let text = print(&p);
    let q = parse(&text).unwrap_or_else(|e| panic!("reparse failed: {e:?}\n{text}"));
    assert_eq!(p, q, "round trip changed the program:\n{text}");
    text
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

#[test]
fn show() {
    let p = parse("size n = 64, s0 = 16, s1 = 4\n def f(X: [f32]n, y: f32, z: f32) = join o map@A(map@B(fun(a => a + z)) o join o map@C(map@D(fun(a => a * y))) o split(s1)) o split(s0) $ X").unwrap();
    eprintln!("{}", print(&p));
    let p = parse("def conv(inp: [[[f32]C]W]H, ks: [[[[f32]C]KW]KH]K) = mapND2@A(fun(win => map@B(fun(k => reduce(add, 0.0, map(fun(p => p.0 * p.1), joinND3(zipND3(win, k))))), ks)), slideND2(KH, 1, KW, 1, padND2(1, 1, 0.0, inp)))").unwrap();
    eprintln!("{}", print(&p));
}

#[test]
fn nested_tuple_fields() {
    let t = roundtrip("def f(t: ((f32, i32), f32)) = t.0.1");
    assert!(t.contains("t.0.1"), "{t}");
    let t = roundtrip("def f(t: ((f32, i32), f32)) = get(1, get(0, t))");
    assert!(t.contains("t.0.1"), "{t}");
}
