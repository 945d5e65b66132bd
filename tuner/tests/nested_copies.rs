//! A map whose function returns a view of what it computes that cannot be written through
//! (`fun(r => pad(1, 1, 0.0, map@B(g, r)))`, a `slide`, a `padClamp` behind a `let`) is
//! computed, then copied by every thread of the map's iteration. Every valid mapping of such a
//! program lowers (code generation is the oracle): the space offered `A=G0,B=G1`, whose copy
//! reads what other work groups wrote, and code generation refused it.

use mapsat_constraints::{Options, Space};
use mapsat_ir::profile::Profile;
use std::ops::ControlFlow;

const PROGRAMS: [&str; 5] = [
    "size N = 8, M = 6\ndef f(x: [[f32]M]N) = map@A(fun(row => pad(1, 1, 0.0, map@B(fun(v => v * 2.0), row))), x)",
    "size N = 8, M = 6\ndef f(x: [[f32]M]N) = map@A(fun(row => slide(3, 1, map@B(fun(v => v * 2.0), row))), x)",
    "size N = 8, M = 6\ndef f(x: [[f32]M]N) =
       map@A(fun(row => let t = map@B(fun(v => v + 1.0), row) in padClamp(1, 1, t)), x)",
    "size K = 2, N = 4, M = 6\ndef f(x: [[[f32]M]N]K) =
       map@A(fun(img => padClampND2(1, 1, map@B(fun(r => map@C(fun(v => v * v), r)), img))), x)",
    "size N = 8, M = 6\ndef f(x: [[f32]M]N) =
       map@A(fun(row => pad(1, 0, 0.0, map@B(fun(w => reduce(add, 0.0, w)), slide(2, 1, row)))), x)",
];

fn space(p: &mapsat_ir::Program) -> Space {
    let profile = Profile::builtin("pocl-cpu").expect("pocl-cpu");
    Space::generate(p, Options { profile: Some(profile), ..Options::default() }).expect("space")
}

#[test]
fn every_valid_mapping_of_a_copied_function_result_lowers() {
    let profile = Profile::builtin("pocl-cpu").expect("pocl-cpu");
    for src in PROGRAMS {
        let p = mapsat_ir::parse(src).expect("parse");
        let space = space(&p);
        let mut mappings = Vec::new();
        space
            .enumerate(None, |m| {
                mappings.push(m.clone());
                ControlFlow::Continue(())
            })
            .expect("enumerates");
        // Some parallel mapping is left: each row's copy in its own thread or work group.
        assert!(mappings.len() > 1, "{src}: {} mappings", mappings.len());
        for m in &mappings {
            let local = space.suggested_local_size(m).expect("local sizes");
            let q = space.apply(&p, m).expect("applies");
            let opts = mapsat_codegen::Options::for_profile(p.default_sizes(), local, &profile);
            mapsat_codegen::lower(&q, &opts).unwrap_or_else(|e| panic!("{src}\n{}: {e}", space.show(m)));
        }
    }
}

#[test]
fn a_copy_reading_what_other_work_groups_wrote_is_refused() {
    let p = mapsat_ir::parse(PROGRAMS[0]).expect("parse");
    let space = space(&p);
    let m = space.parse_mapping("A=G0,B=G1").expect("mapping");
    let e = space.explain(&m).expect("explain");
    assert!(!e.valid);
    assert!(e.violated.iter().any(|v| v.family == mapsat_constraints::Family::Sync), "{e:?}");
}
