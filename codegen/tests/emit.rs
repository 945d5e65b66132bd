//! Code generation through the library: programs it refuses and their messages, and properties
//! of the emitted code. The kernels of the file tests (`tests/filetests/kernels/`, at the
//! repository root) are emitted and compared with their blessed text in `tests/out/` by the
//! file-test runner, `tests/filetests.rs`.

use mapsat_codegen::{emit, CodegenErrorKind, Dialect, Options};
use std::path::Path;

fn error(src: &str, local: Option<Vec<i64>>) -> String {
    let p = mapsat_ir::parse(src).unwrap_or_else(|e| panic!("{e:?}"));
    match emit(&p, &Options { local, ..Options::default() }, Dialect::OpenCl) {
        Ok((k, _)) => panic!("accepted:\n{k}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn unmapped_map_is_named() {
    let e = error("size N = 8\ndef f(x: [f32]N) = map@A(fun(v => v + 1.0), x)", None);
    assert!(e.contains("`map@A` is not mapped"), "{e}");
    let e = error("size N = 8\ndef f(x: [f32]N) = toGlobal(reduce(add, 0.0, x))", None);
    assert!(e.contains("`reduce` is not mapped: use reduceSeq"), "{e}");
}

#[test]
fn to_local_outside_work_group() {
    let e =
        error("size N = 8\ndef f(x: [f32]N) = mapGlb@A(0, fun(v => v), toLocal(mapSeq@B(fun(v => v + 1.0), x)))", None);
    assert_eq!(e, "`toLocal` around `mapSeq@B` is outside any mapWrg or mapGlb: local memory belongs to a work group");
    // Inside a mapGlb, local memory is each work item's own scratch space: written sequentially,
    // not by a parallel map.
    let e = error(
        "size N = 8, M = 4\ndef f(x: [[f32]M]N) = mapGlb@A(0, fun(r => toLocal(mapGlb@B(1, fun(v => v + 1.0), r))), x)",
        None,
    );
    assert!(e.contains("each work item's own scratch space, but `mapGlb(1)@B` writes it in parallel"), "{e}");
    let p = mapsat_ir::parse(
        "size N = 8, M = 4\ndef f(x: [[f32]M]N) = mapGlb@A(0, fun(r => toGlobal(mapSeq@C(fun(v => v * 2.0), toLocal(mapSeq@B(fun(v => v + 1.0), r))))), x)",
    )
    .expect("parse");
    assert!(emit(&p, &Options::default(), Dialect::OpenCl).is_ok());
}

/// A `mapLcl` outside every `mapWrg` (the space's rule 4, a preference, leaves it out; a hand
/// mapping that writes it is lowered as written) runs in one work group: issue #9's
/// differential test found it refused (`tuner/tests/differential`).
#[test]
fn local_maps_without_work_groups_run_in_one_group() {
    let p = mapsat_ir::parse("size N = 24\ndef f(x: [f32]N) = mapLcl@L(0, fun(v => v), x)").expect("parse");
    let k = mapsat_codegen::lower(&p, &Options::default()).expect("lowers");
    assert_eq!(k.launch.global, k.launch.local, "{:?}", k.launch);
    // Under a sequential map too.
    let p = mapsat_ir::parse(
        "size N = 4, M = 24\ndef f(x: [[f32]M]N) = mapSeq@A(fun(r => mapLcl@B(0, fun(v => v + 1.0), r)), x)",
    )
    .expect("parse");
    let k = mapsat_codegen::lower(&p, &Options::default()).expect("lowers");
    assert_eq!(k.launch.global, k.launch.local, "{:?}", k.launch);
}

#[test]
fn inconsistent_launch_shapes() {
    let e = error(
        "size N = 64\ndef f(x: [f32]N) = join(mapWrg@W(0, mapLcl@L(0, fun(v => v)), split(8, mapGlb@G(0, fun(v => v), x))))",
        None,
    );
    assert!(e.contains("inconsistent launch shape") && e.contains("mapGlb(0)@G"), "{e}");
    let e = error("size N = 8, M = 8\ndef f(x: [[f32]N]M) = mapGlb@A(0, mapGlb@B(0, fun(v => v)), x)", None);
    assert!(e.contains("`mapGlb(0)@B`: dimension 0 is already used by the enclosing `mapGlb(0)@A`"), "{e}");
    let e = error("size N = 8\ndef f(x: [f32]N) = mapGlb@A(0, fun(v => v), x)", Some(vec![0]));
    assert!(e.contains("bad local size"), "{e}");
    // The target's work-group limit (a profile's max_work_group_size), when given.
    let p = mapsat_ir::parse("size N = 1024\ndef f(x: [f32]N) = mapGlb@A(0, fun(v => v), x)").expect("parse");
    let opts = |max| Options { local: Some(vec![512]), max_work_group_size: max, ..Options::default() };
    let e = emit(&p, &opts(Some(384)), Dialect::OpenCl).expect_err("over the Mali's 384").to_string();
    assert!(e.contains("more than 384 work items"), "{e}");
    assert!(emit(&p, &opts(Some(4096)), Dialect::OpenCl).is_ok());
    assert!(emit(&p, &opts(None), Dialect::OpenCl).is_ok());
    // The range of the target's size_t (a profile's address_bits), when given: 2^33 work items
    // in dimension 0 are too many for a 32-bit device.
    let sizes = mapsat_ir::Sizes::new().with("N", 1 << 33);
    let opts = |bits| Options { sizes: sizes.clone(), address_bits: bits, ..Options::default() };
    let e = emit(&p, &opts(Some(32)), Dialect::OpenCl).expect_err("over 32 bits").to_string();
    assert!(e.contains("global size 8589934592 in dimension 0") && e.contains("at most 4294967295"), "{e}");
    assert!(emit(&p, &opts(Some(64)), Dialect::OpenCl).is_ok());
    assert!(emit(&p, &opts(None), Dialect::OpenCl).is_ok());
}

#[test]
fn barrier_in_divergent_loop_is_refused() {
    // mapLcl(1)@R runs 5 rows over 2 threads: some threads run it 3 times, others 2, and the
    // barrier after mapLcl(0)@C would sit inside it.
    let src = "size M = 10, N = 16\ndef f(A: [[f32]N]M) =
      join(mapWrg@W(0, fun(rows => mapLcl@R(1, fun(row =>
        mapLcl@S(0, fun(w => toPrivate(reduceSeq(fun(a, v => a + v), 0.0, w))),
          slide(2, 1, padClamp(0, 1, toLocal(mapLcl@C(0, fun(v => v), row)))))), rows)), split(5, A)))";
    let e = error(src, Some(vec![16, 2]));
    assert!(e.contains("`mapLcl(0)@C` writes memory that other threads read next") && e.contains("mapLcl(1)@R"), "{e}");
    // With a local size that divides the extent, the same program is accepted.
    let p = mapsat_ir::parse(src).expect("parse");
    assert!(emit(&p, &Options { local: Some(vec![16, 5]), ..Options::default() }, Dialect::OpenCl).is_ok());
}

#[test]
fn errors_are_values_not_panics() {
    let p = mapsat_ir::parse("size N\ndef f(x: [f32]N) = mapGlb(0, fun(v => v), x)").expect("parse");
    let e = mapsat_codegen::lower(&p, &Options::default()).err().map(|e| e.kind);
    assert_eq!(e, Some(CodegenErrorKind::MissingSize("N".into())));
}

#[test]
fn indices_are_simplified() {
    let p = mapsat_ir::parse(
        "size N = 64\ndef f(x: [f32]N) = join(mapGlb(0, mapSeq(fun(v => v * 2.0)), split(16, join(split(4, x)))))",
    )
    .expect("parse");
    let (src, _) = emit(&p, &Options::default(), Dialect::OpenCl).expect("emit");
    assert!(src.contains("out[i_1 * 16 + i] = x[i_1 * 16 + i] * 2.0f;") || !src.contains("/ 1"), "{src}");
    assert!(!src.contains("* 1 ") && !src.contains("+ 0]") && !src.contains("/ 4") && !src.contains("% 4"), "{src}");
}

#[test]
fn no_barrier_at_the_end_of_a_loop_that_only_reads_shared_memory() {
    // mapLcl(1)@D reads the buffer written before it: one barrier before D, none inside D
    // (which would also sit in a loop that threads run 1 or 2 times).
    let p = mapsat_ir::parse(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/filetests/kernels/listing1.lift"))
            .expect("read"),
    )
    .expect("parse");
    let sizes = [("I", 3), ("J", 5), ("K", 12)].into_iter().collect();
    let (src, _) =
        emit(&p, &Options { sizes, local: Some(vec![8, 8]), ..Options::default() }, Dialect::OpenCl).expect("emit");
    assert_eq!(src.matches("barrier(").count(), 1, "{src}");
}

#[test]
fn layout_maps_are_views() {
    // Unlabelled maps of layout functions (here from padND2 and slideND2) compute nothing and
    // need no mapping; an unlabelled map that computes still does.
    let p = mapsat_ir::parse(
        "size N = 4\ndef f(x: [[f32]N]N) = mapGlb(1, mapGlb(0, fun(w => at(0, at(0, w)))), slideND2(3, 1, 3, 1, padND2(1, 1, 0.0, x)))",
    )
    .expect("parse");
    let (src, _) = emit(&p, &Options::default(), Dialect::OpenCl).expect("emit");
    assert!(!src.contains("for ("), "{src}");
    let e = error("size N = 8\ndef f(x: [[f32]N]N) = mapGlb(0, fun(r => r), map(map(fun(v => v * 2.0)), x))", None);
    assert!(e.contains("is not mapped"), "{e}");
}

#[test]
fn small_private_arrays_become_registers() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/filetests/kernels/conv_reg.lift"))
            .expect("read");
    let p = mapsat_ir::parse(&text).expect("parse");
    for (o_b, regs) in [(4, true), (8, true), (32, false)] {
        let mut opts = Options::default();
        opts.sizes.insert("oB", o_b);
        opts.sizes.insert("outChs", 64);
        let (src, m) = emit(&p, &opts, Dialect::OpenCl).expect("emit");
        // Above 16 elements the array stays an array, indexed by its loop.
        assert_eq!(!src.contains("acc["), regs, "oB={o_b}:\n{src}");
        assert_eq!(src.contains(&format!("float acc_{};", o_b - 1)), regs, "oB={o_b}:\n{src}");
        assert!(!src.contains(" / 4 / 3"), "{src}");
        assert_eq!(m.memory.private_bytes, 2 * 4 * o_b as u64);
    }
}

#[test]
fn reading_another_threads_global_write_is_refused() {
    // B reads y[i-1], written by another thread of A (maybe of another work group): no barrier
    // reaches across work groups. Reading y[i], the element the same thread wrote, is lowered
    // (tests/filetests/kernels/twostage.lift runs it).
    let neighbour = "size N = 64
def f(xs: [f32]N) =
  let y = mapGlb@A(0, fun(x => x * 2.0), xs) in
  mapGlb@B(0, fun(p => p.0 + at(0, p.1)), zip(xs, slide(2, 1, padClamp(1, 0, y))))";
    let e = error(neighbour, None);
    assert!(e.contains("`mapGlb(0)@A` writes a global buffer that is read again by other work groups"), "{e}");
    // Each thread writes a row and reads a column: other threads' elements.
    let transposed = "size N = 8
def f(xs: [[f32]N]N) =
  let y = mapGlb@A(0, mapSeq@C(fun(x => x * 2.0)), xs) in
  mapGlb@B(0, mapSeq@D(fun(v => v + 1.0)), transpose(y))";
    let e = error(transposed, None);
    assert!(e.contains("`mapGlb(0)@A` writes a global buffer that is read again by other work groups"), "{e}");
}

/// A `mapGlb` thread that writes a whole row (a sequential map) and then reads only that row
/// (its sum, or neighbours within it) reads its own writes: lowered. The space accepts it
/// (each dimension is written and read by the same threads); issue #9's differential test
/// (`tuner/tests/differential`) found it refused, as if other threads' rows were read.
#[test]
fn reading_the_row_a_thread_wrote_is_lowered() {
    let lowers = |src: &str| {
        let p = mapsat_ir::parse(src).unwrap_or_else(|e| panic!("{e:?}"));
        emit(&p, &Options::default(), Dialect::OpenCl).map(|_| ()).map_err(|e| e.to_string())
    };
    let summed = "size H = 24, W = 16
def f(xs: [[f32]W]H) =
  let y = mapGlb@A(1, mapSeq@B(fun(x => x * 2.0)), xs) in
  mapGlb@C(1, fun(r => reduceSeq(add, 0.0, r)), y)";
    assert_eq!(lowers(summed), Ok(()));
    let neighbours = "size H = 24, W = 16
def f(xs: [[f32]W]H) =
  let y = mapGlb@A(0, mapSeq@B(fun(x => x * 2.0)), xs) in
  mapGlb@C(0, fun(r => mapSeq@D(fun(w => reduceSeq(add, 0.0, w)), slide(3, 1, padClamp(1, 1, r)))), y)";
    assert_eq!(lowers(neighbours), Ok(()));
    // Still refused: a row read by another thread (the next row), or a row written by several
    // threads (B parallel) and read by one.
    let next_row = "size H = 24, W = 16
def f(xs: [[f32]W]H) =
  let y = mapGlb@A(0, mapSeq@B(fun(x => x * 2.0)), xs) in
  mapGlb@C(0, fun(rs => reduceSeq(add, 0.0, at(1, rs))), slide(2, 1, padClamp(0, 1, y)))";
    assert!(lowers(next_row).is_err_and(|e| e.contains("grid-wide synchronization")));
    let split_row = "size H = 24, W = 16
def f(xs: [[f32]W]H) =
  let y = mapGlb@A(1, mapGlb@B(0, fun(x => x * 2.0)), xs) in
  mapGlb@C(1, fun(r => reduceSeq(add, 0.0, r)), y)";
    assert!(lowers(split_row).is_err_and(|e| e.contains("grid-wide synchronization")));
}

/// A nest of two parallel maps writes a global temporary that a nest of the same shape reads
/// at the same element: each thread reads its own write (in every parallel dimension), so it
/// is lowered. The space accepts these; issue #9's differential test found them refused (only
/// one parallel loop around the write was compared, or none was left on record).
#[test]
fn reading_back_ones_own_element_in_a_nest_is_lowered() {
    for (o, i) in [("mapGlb@A(1", "mapGlb@B(2"), ("mapWrg@A(1", "mapLcl@B(1"), ("mapWrg@A(2", "mapLcl@B(2")] {
        let (c, d) = (o.replace("@A", "@C"), i.replace("@B", "@D"));
        let text = format!(
            "size H = 9, W = 5
def f(xs: [[f32]W]H) =
  let y = {o}, fun(r => {i}, fun(x => x * 0.5 + 1.0), r)), xs) in
  {c}, fun(p => {d}, fun(q => q.0 * q.1), zip(p.0, p.1))), zip(y, y))"
        );
        let p = mapsat_ir::parse(&text).unwrap_or_else(|e| panic!("{e:?}"));
        assert!(emit(&p, &Options::default(), Dialect::OpenCl).is_ok(), "{text}");
    }
}

/// Sequential stages before a `mapLcl` one run alike in every work item: each writes the whole
/// global temporaries at once with the others, a data race that pocl's work-group vectorizer
/// turned into wrong results (issue #9's differential test). Refused; one thread, or writers
/// spread over the launched dimension, are lowered.
#[test]
fn global_temporaries_written_alike_by_every_thread_are_refused() {
    let racy = "size N = 5
def f(y0: [f32]N) =
  let y1 = mapSeq@A(fun(x => x * 2.5 + 1.0), y0) in
  let y2 = mapSeq@B(fun(p => p.0 * at(0, p.1)), zip(y1, slide(2, 1, padClamp(1, 0, y1)))) in
  let y3 = mapLcl@C(2, fun(x => x * x), y2) in mapSeq@D(fun(x => x * x), y3)";
    let e = error(racy, None);
    assert!(e.contains("`mapSeq@A` writes `tmp_A`") && e.contains("dimension 2") && e.contains("data race"), "{e}");
    // With one work item the same kernel is lowered.
    assert!(error_or_ok(racy, Some(vec![1, 1, 1])).is_ok());
    let spread = racy.replace("mapSeq@A(", "mapLcl@A(2, ").replace("mapSeq@B(", "mapLcl@B(2, ");
    assert!(error_or_ok(&spread, None).is_ok(), "{spread}");
}

fn error_or_ok(src: &str, local: Option<Vec<i64>>) -> Result<(), String> {
    let p = mapsat_ir::parse(src).unwrap_or_else(|e| panic!("{e:?}"));
    emit(&p, &Options { local, ..Options::default() }, Dialect::OpenCl).map(|_| ()).map_err(|e| e.to_string())
}

/// A `mapWrg`/`mapLcl` nest writes a global temporary row by row, and a nest of the same shape
/// reads each row back in the work group that wrote it, neighbours within the row included:
/// the barrier after the writing `mapLcl` suffices, as the space says. Issue #9's differential
/// test found it refused (pipe52); reading another work group's row still is.
#[test]
fn a_work_group_reads_back_the_row_it_wrote_after_a_barrier() {
    let text = "size H = 12, W = 8
def f(xs: [[f32]W]H) =
  let y = mapWrg@A(0, fun(r => mapLcl@B(0, fun(x => x * 3.0), r)), xs) in
  mapWrg@C(0, fun(row => mapLcl@D(0, fun(w => reduceSeq(add, 0.0, w)), slide(3, 1, padClamp(1, 1, row)))), y)";
    let p = mapsat_ir::parse(text).expect("parse");
    let (src, _) = emit(&p, &Options::default(), Dialect::OpenCl).expect("lowers");
    assert!(src.contains("CLK_GLOBAL_MEM_FENCE"), "{src}");
    let other_rows = "size H = 12, W = 8
def f(xs: [[f32]W]H) =
  let y = mapWrg@A(0, fun(r => mapLcl@B(0, fun(x => x * 3.0), r)), xs) in
  mapWrg@C(0, fun(rows => mapLcl@D(0, fun(x => x * 2.0), at(1, rows))), slide(2, 1, padClamp(0, 1, y)))";
    assert!(error(other_rows, None).contains("grid-wide synchronization"));
}

/// Each thread of a 2-D grid writes a whole block (a sequential map over a row of blocks) and
/// reads back only its own block, through a `join` (as the rewrite stage's outer product with
/// its epilogue split off): lowered (`tests/filetests/kernels/own_blocks_2d.lift` runs one).
/// Reading a neighbour's block, or a block the threads wrote split over a parallel map, is
/// still refused.
#[test]
fn reading_back_ones_own_block_in_a_2d_grid_is_lowered() {
    let own = "size H = 6, W = 4, C = 3
def f(xs: [[[f32]C]W]H) =
  let y = mapGlb@A(1, mapGlb@B(0, mapSeq@S(fun(x => x * 2.0))), xs) in
  mapGlb@D(1, fun(r => join(mapGlb@E(0, mapSeq@T(fun(v => v + 1.0)), r))), y)";
    assert!(error_or_ok(own, None).is_ok(), "{:?}", error_or_ok(own, None));
    // The grid's dimensions swapped between the nests: thread (i, j) reads block (j, i).
    let swapped = own.replace("mapGlb@D(1", "mapGlb@D(0").replace("mapGlb@E(0", "mapGlb@E(1");
    assert!(error_or_ok(&swapped, None).is_err_and(|e| e.contains("grid-wide synchronization")), "{swapped}");
    // The next block along W (clamped): another thread's.
    let next = "size H = 6, W = 4, C = 3
def f(xs: [[[f32]C]W]H) =
  let y = mapGlb@A(1, mapGlb@B(0, mapSeq@S(fun(x => x * 2.0))), xs) in
  mapGlb@D(1, fun(r => join(mapGlb@E(0, fun(w => mapSeq@T(fun(v => v + 1.0), at(1, w))), slide(2, 1, padClamp(0, 1, r))))), y)";
    assert!(error_or_ok(next, None).is_err_and(|e| e.contains("grid-wide synchronization")), "{next}");
}

/// A kernel whose default work group holds more private memory than the target allows (64
/// work items of 96 KB each, against 4 MiB) gets a smaller default work group that fits; a
/// work group given (`local`) is still refused. `run` chose the default and then refused its
/// own launch.
#[test]
fn the_default_work_group_fits_the_private_memory_limit() {
    let p = mapsat_ir::parse(
        "size R = 64, N = 12000
def f(X: [[f32]N]R) =
  mapGlb@A(0, fun(row => let t = toPrivate(mapSeq@P(fun(v => v * 2.0), row)) in
    reduceSeq(add, 0.0, mapSeq@Q(fun(w => reduceSeq(add, 0.0, w)), slide(2, 1, t)))), X)",
    )
    .unwrap();
    let max = 4 << 20;
    let default = mapsat_codegen::lower(&p, &Options::default()).unwrap();
    assert_eq!(default.launch.local, [64, 1, 1]);
    let opts = Options { max_private_group_bytes: Some(max), ..Options::default() };
    let k = mapsat_codegen::lower(&p, &opts).expect("a smaller work group");
    let items: u64 = k.launch.local.iter().map(|x| *x as u64).product();
    let private = k.memory().private_bytes;
    assert!(private >= 48_000 && private * items <= max && items >= 32, "{:?} x {private}", k.launch.local);
    let given = Options { local: Some(vec![64]), ..opts };
    let e = mapsat_codegen::lower(&p, &given).unwrap_err().to_string();
    assert!(e.contains("private_group_bytes"), "{e}");
}

/// A work group of a 2-D grid reads back the tile it wrote (`tests/filetests/kernels/
/// group_tile_2d.lift` runs it); the tile of another work group (the grid's dimensions swapped
/// in the reading nest) is still refused.
#[test]
fn a_work_group_of_a_2d_grid_reads_back_only_its_own_tile() {
    let own = "size M = 8, N = 8
def f(a: [[f32]N]M) =
  let t = mapWrg@A(1, fun(rb => mapWrg@B(0, fun(tile => mapLcl@C(1, fun(r => mapLcl@D(0, fun(v => v * 2.0), r)), tile)), rb)), map(fun(rb => map(transpose, split(4, transpose(rb)))), split(4, a))) in
  mapWrg@E(1, fun(rb => mapWrg@F(0, fun(tile => mapLcl@G(1, fun(r => mapLcl@H(0, fun(v => v + 1.0), r)), transpose(tile))), rb)), t)";
    assert!(error_or_ok(own, None).is_ok(), "{:?}", error_or_ok(own, None));
    let other = own.replace("rb)), t)", "rb)), transpose(t))");
    assert!(error_or_ok(&other, None).is_err_and(|e| e.contains("grid-wide synchronization")), "{other}");
}

/// A default work group stays within 64 work items in dimension 2 (CUDA's block limit in z):
/// a `mapLcl(2)` over 128 or 67 items was given all of them or 67, and CUDA refused the
/// launch of a valid mapping (a tester's bug). A target's own limits are followed.
#[test]
fn the_default_work_group_fits_cudas_block_in_z() {
    for (n, want) in [(128, 64), (67, 1), (48, 48)] {
        let src = format!(
            "size N = {n}, M = 3\ndef f(x: [[f32]N]M) = mapWrg@A(2, fun(r => mapLcl@B(2, fun(v => v * 2.0), r)), x)"
        );
        let p = mapsat_ir::parse(&src).expect("parse");
        let (_, m) = emit(&p, &Options::default(), Dialect::Cuda).unwrap_or_else(|e| panic!("N = {n}: {e}"));
        assert_eq!(m.launch.local[2], want, "N = {n}: {:?}", m.launch);
        let opts = Options { max_work_item_sizes: Some([1024, 1024, 16]), ..Options::default() };
        let k = mapsat_codegen::lower(&p, &opts).expect("lowers");
        assert!(k.launch.local[2] <= 16 && n % k.launch.local[2] == 0, "N = {n}: {:?}", k.launch);
    }
}

/// A parameter of a vector type is refused with the form code generation takes.
#[test]
fn a_vector_parameter_is_refused_with_the_array_form() {
    let e = error("size N = 8\ndef f(x: [f32x4]N, w: f32x4) = mapGlb@A(0, fun(v => v * w), x)", None);
    assert!(e.contains("parameter `w` of type f32x4: a kernel takes vectors in arrays; declare `w: [f32x4]1`"), "{e}");
}

/// A `mapVec` loop asks to be unrolled only when it is short: unrolling one of 30,000
/// iterations made pocl's compiler take 100 s (a tester's `A=V` over a plain array).
#[test]
fn only_short_vector_loops_are_unrolled() {
    let source = |n: i64| {
        let p = mapsat_ir::parse(&format!("size N = {n}\ndef f(x: [f32]N) = mapVec@A(fun(a => a * a), x)")).unwrap();
        emit(&p, &Options::default(), Dialect::OpenCl).expect("emits").0
    };
    assert!(source(64).contains("#pragma unroll"), "{}", source(64));
    assert!(!source(65).contains("#pragma unroll"), "{}", source(65));
    assert!(!source(30_000).contains("#pragma unroll"));
}
