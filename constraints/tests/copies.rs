//! A program whose maps only rearrange their input (a transposition, a copy) writes its result
//! to global memory all the same: its outermost maps are that copy, and are mapped. Such a
//! program is the first stage of `let wt = toGlobal(map(.., transpose(ks))) in ..`, whose
//! `toGlobal` the stage drops (`examples/conv_outer.lift`).

use mapsat_constraints::{Count, Error, Options, Space};

fn space(src: &str) -> Result<Space, Error> {
    Space::generate(&mapsat_ir::parse(src).expect("parse"), Options::default())
}

#[test]
fn the_maps_of_a_transposition_are_mapped_as_a_copy() {
    let s = space("size M = 4, N = 6\ndef t(x: [[f32]N]M) = map@A(fun(r => map@B(fun(v => v), r)), transpose(x))")
        .expect("a space");
    assert_eq!(s.labels(), ["A", "B"]);
    assert!(matches!(s.count(0).expect("count"), Count::Exact(n) if n > 1));
    for m in s.sample(8, 1).expect("samples") {
        assert!(s.explain(&m).expect("explain").valid, "{}", s.show(&m));
    }
}

#[test]
fn a_program_without_a_map_still_has_nothing_to_map() {
    assert!(matches!(space("size M = 4, N = 6\ndef t(x: [[f32]N]M) = transpose(x)"), Err(Error::NoMaps)));
}

/// Asked for it (`Options::empty_without_maps`), a program without a map that computes has the
/// space of its one mapping, the empty one, which applies as one work item running it.
#[test]
fn a_program_without_a_map_may_have_the_space_of_the_empty_mapping() {
    let p = mapsat_ir::parse("size N = 8\ndef s(xs: [f32]N) = reduce(add, 0.0, xs)").expect("parse");
    let s = Space::generate(&p, Options { empty_without_maps: true, ..Options::default() }).expect("a space");
    assert!(s.is_empty() && s.labels().is_empty());
    assert!(matches!(s.count(0).expect("count"), Count::Exact(1)));
    let samples = s.sample(5, 3).expect("samples");
    assert_eq!(samples.len(), 1);
    assert!(samples[0].codes.is_empty());
    let m = s.parse_mapping("").expect("the empty mapping");
    assert!(s.explain(&m).expect("explain").valid);
    let e = s.parse_mapping("A=G0").unwrap_err().to_string();
    assert!(
        e.contains("unknown map `A` in the mapping: the program has no map, so its only mapping is the empty one"),
        "{e}"
    );
    let (got, want) = (s.apply(&p, &m).expect("apply"), mapsat_constraints::sequential(&p));
    assert_eq!(mapsat_ir::print(&got), mapsat_ir::print(&want));
    assert!(mapsat_ir::print(&got).contains("reduceSeq"), "{}", mapsat_ir::print(&got));
}

/// A copy stored through a view, as `mapsat tune` writes a transposed copy whose inner map it
/// fused (`split(H, mapGlb(0, fun(x => x), join(transpose(a))))`): its map is the copy, mapped
/// as written.
#[test]
fn a_copy_stored_through_a_view_is_mapped() {
    let src = "size H = 5, W = 3\ndef t(a: [[f32]W]H) = split(H, mapGlb@R(0, fun(x => x), join(transpose(a))))";
    let s = space(src).expect("a space");
    assert_eq!(s.labels(), ["R"]);
}

/// A hand-built code outside `Code::ALL` (`Glb(7)`) is refused by every entry point, naming its
/// map: `explain` called it valid, and `apply` wrote `mapGlb@A(7, ..)`, which nothing reads.
#[test]
fn a_code_outside_the_codes_is_refused_everywhere() {
    use mapsat_constraints::{Code, Mapping};
    let src = "size N = 8\ndef f(xs: [[f32]N]N) = map@A(fun(r => map@B(fun(x => x * 2.0), r)), xs)";
    let p = mapsat_ir::parse(src).expect("parse");
    let s = Space::generate(&p, Options::default()).expect("a space");
    let m = Mapping { codes: vec![Code::Glb(7), Code::Seq] };
    let refused = |e: Error| assert!(e.to_string().contains("`G7` (for map `A`) is not a code"), "{e}");
    refused(s.explain(&m).unwrap_err());
    refused(s.evaluate(&m).unwrap_err());
    refused(s.is_valid(&m).unwrap_err());
    refused(s.apply(&p, &m).unwrap_err());
    assert!(s.is_valid(&Mapping { codes: vec![Code::Glb(0), Code::Seq] }).expect("valid"));
}
