//! Family 10: the maps writing a global buffer that the kernel reads again use every thread
//! dimension the kernel uses. Issue #9's differential test (`tuner/tests/differential`) found
//! a mapping violating only rules 4 and 7 (preferences, lowered as written) that pocl ran
//! wrong: sequential stages before a `mapLcl` one, run alike by every work item, all writing
//! the same global temporaries at once.

use mapsat_constraints::{Family, Options, Space};

const PIPELINE: &str = "size N = 5
def f(y0: [f32]N) =
  let y1 = map@A(fun(x => x * 2.5 + 1.0), y0) in
  let y2 = map@B(fun(p => p.0 * at(0, p.1)), zip(y1, slide(2, 1, padClamp(1, 0, y1)))) in
  let y3 = map@C(fun(x => x * x), y2) in map@D(fun(x => x * x), y3)";

fn violated(space: &Space, mapping: &str) -> Vec<Family> {
    let m = space.parse_mapping(mapping).expect("mapping");
    let mut fs: Vec<Family> = space.explain(&m).expect("explain").violated.iter().map(|c| c.family).collect();
    fs.sort_unstable();
    fs.dedup();
    fs
}

#[test]
fn writers_of_a_global_buffer_read_again_use_every_thread_dimension() {
    let p = mapsat_ir::parse(PIPELINE).expect("parse");
    let space = Space::generate(&p, Options::default()).expect("space");
    // A and B write y1 and y2 in every work item of C's mapLcl(2): a race, now a hard violation.
    let fs = violated(&space, "A=S,B=S,C=L2,D=S");
    assert!(fs.contains(&Family::Sync), "{fs:?}");
    assert!(fs.iter().any(|f| !f.is_preference()), "{fs:?}");
    // All sequential (one thread), or every map over the same global dimension, is valid.
    assert!(violated(&space, "A=S,B=S,C=S,D=S").iter().all(|f| f.is_preference()));
    assert!(violated(&space, "A=G0,B=S,C=S,D=S").contains(&Family::Sync));
}
