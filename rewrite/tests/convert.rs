//! Programs to e-graph terms and back, without loss.

mod common;

use mapsat_rewrite::{convert, rewrite, Budget, Options};

#[test]
fn every_example_round_trips_through_a_term() {
    for (name, p) in common::examples() {
        let info = mapsat_ir::check::check(&p).unwrap();
        let back = convert::to_program(&p, &convert::to_term(&p, &info));
        assert_eq!(mapsat_ir::print(&back), mapsat_ir::print(&p), "{name}");
        assert_eq!(back.map_labels(), p.map_labels(), "{name}");
    }
}

#[test]
fn every_example_round_trips_through_the_egraph() {
    // No iteration: the e-graph holds the program only, and the best variant is the program
    // (others may stage its partial reductions in private memory and, for a 2-D tiled matmul,
    // its panels in local memory).
    for (name, p) in common::examples() {
        let opts = Options { budget: Budget { iterations: 0, ..Budget::default() }, ..Options::default() };
        let out = rewrite(&p, &opts).unwrap();
        let most = if name == "matmul_tiled.lift" { 4 } else { 2 };
        assert!(!out.variants.is_empty() && out.variants.len() <= most, "{name}");
        for v in &out.variants[1..] {
            let text = mapsat_ir::print(&v.program);
            assert!(text.contains("toPrivate(") || text.contains("toLocal("), "{name}");
        }
        assert_eq!(mapsat_ir::print(&out.variants[0].program), mapsat_ir::print(&p), "{name}");
    }
}

#[test]
fn duplicate_labels_are_made_unique() {
    let src = "size N = 4\ndef f(xs: [f32]N) : [f32]N = map@A(fun(x => x + 1.0), map@B(fun(x => x * 2.0), xs))";
    let mut p = mapsat_ir::parse(src).unwrap();
    for n in &mut p.nodes {
        if let mapsat_ir::Node::Prim(mapsat_ir::Prim::Map { label, .. }) = n {
            *label = "A".into();
        }
    }
    convert::unique_labels(&mut p);
    assert_eq!(p.map_labels(), ["A", "A_2"]);
}
