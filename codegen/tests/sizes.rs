//! Sizes up to 2^62 through checking and code generation: every outcome is an error or a kernel
//! whose counts are exact (never wrapped) and whose variables and index parts are 64-bit where
//! they can exceed 2^31 - 1, 32-bit elsewhere (each variable by its own range; every `int`
//! part of every index bounded by the verifier's independent check of C's typing rules).

use mapsat_codegen::verify::verify_widths;
use mapsat_codegen::{emit, lower, Dialect, Options};
use mapsat_ir::Sizes;
use proptest::prelude::*;

/// 2-D element-wise: one thread per element.
const GRID: &str = "size H = 16, W = 16
def f(x: [[f32]W]H) = mapGlb@A(1, mapGlb@B(0, fun(v => v + 1.0)), x)";

/// A padded 1-D array, flattened from 2-D first: a product of sizes, a pad bound and a join.
const PADDED: &str = "size H = 16, W = 16
def f(x: [[f32]W]H) = mapGlb@A(0, fun(v => v * 2.0), pad(3, 5, 0.0, join(x)))";

/// A size from 1 to 2^62, spread over the orders of magnitude.
fn size() -> impl Strategy<Value = i64> {
    (0u32..=62, any::<u64>()).prop_map(|(bits, r)| {
        let lo = 1i64 << bits.saturating_sub(1);
        let span = (1i64 << bits) - lo;
        lo + if span > 0 { (r % span as u64) as i64 } else { 0 }
    })
}

/// Emits `src` at `h`, `w`; checks what came out against exact 128-bit arithmetic, and the width
/// of each loop variable `(name, extent)` of `vars` against its extent.
fn check(src: &str, h: i64, w: i64, elems: i128, vars: &[(&str, i128)], d: Dialect) -> Result<(), TestCaseError> {
    let p = mapsat_ir::parse(src).expect("parses");
    let sizes = Sizes::new().with("H", h).with("W", w);
    let opts = Options { sizes, ..Options::default() };
    let bytes_in = 4 * i128::from(h) * i128::from(w);
    match emit(&p, &opts, d) {
        Err(e) => {
            let msg = e.to_string();
            let too_large = bytes_in > 1 << 62 || 4 * elems > 1 << 62;
            prop_assert!(
                (too_large && msg.contains("more than 2^62 bytes")) || msg.contains("does not fit the target"),
                "H={h} W={w}: unexpected error {msg}"
            );
        }
        Ok((code, m)) => {
            prop_assert!(bytes_in <= 1 << 62 && 4 * elems <= 1 << 62, "H={h} W={w}: accepted beyond 2^62 bytes");
            let out = m.buffers.iter().find(|b| b.name == "out").expect("an output");
            prop_assert_eq!(i128::from(out.len), elems, "H={} W={}: output length", h, w);
            prop_assert_eq!(i128::from(m.memory.global_bytes), bytes_in + 4 * elems);
            let k = lower(&p, &opts).expect("lowers, as emit did");
            if let Err(e) = verify_widths(&k) {
                prop_assert!(false, "H={h} W={w}: {e}\n{code}");
            }
            let wide = elems + 64 > i128::from(i32::MAX) || bytes_in / 4 > i128::from(i32::MAX);
            if wide {
                prop_assert!(code.contains("long"), "H={h} W={w}: 32-bit indices for {elems} elements\n{code}");
            } else if elems < 1 << 30 {
                prop_assert!(!code.contains("long"), "H={h} W={w}: 64-bit indices for {elems} elements\n{code}");
            }
            for (name, extent) in vars {
                let long = code.contains(&format!("long {name} = "));
                if *extent < 1 << 30 {
                    prop_assert!(code.contains(&format!("int {name} = ")), "H={h} W={w}: 64-bit `{name}`\n{code}");
                } else if *extent > i128::from(i32::MAX) {
                    prop_assert!(long, "H={h} W={w}: 32-bit `{name}` over {extent} indices\n{code}");
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn grids_never_wrap(h in size(), w in size()) {
        let elems = i128::from(h) * i128::from(w);
        let vars = [("g1", i128::from(h)), ("i_v", i128::from(w))];
        check(GRID, h, w, elems, &vars, Dialect::OpenCl)?;
        check(GRID, h, w, elems, &vars, Dialect::Cuda)?;
    }

    #[test]
    fn padded_joins_never_wrap(h in size(), w in size()) {
        let elems = i128::from(h) * i128::from(w) + 8;
        check(PADDED, h, w, elems, &[("i_v", elems)], Dialect::OpenCl)?;
        check(PADDED, h, w, elems, &[("i_v", elems)], Dialect::Cuda)?;
    }
}

#[test]
fn small_kernels_stay_32_bit() {
    let p = mapsat_ir::parse(GRID).expect("parses");
    let opts = Options { sizes: Sizes::new().with("H", 1000).with("W", 1000), ..Options::default() };
    let (code, _) = emit(&p, &opts, Dialect::Cuda).expect("emits");
    assert!(code.contains("int g1 = blockIdx.y * blockDim.y + threadIdx.y;"), "{code}");
    // Near the limit: 715,827,883 elements, indices below 2^31 - 1 inside the loops (a bound
    // that counted a loop's last increment into its body once made this 64-bit).
    let opts = Options { sizes: Sizes::new().with("H", 1).with("W", 715_827_883), ..Options::default() };
    let (code, _) = emit(&p, &opts, Dialect::OpenCl).expect("emits");
    assert!(code.contains("int i_v = get_global_id(0);"), "{code}");
}

#[test]
fn large_grids_widen_only_the_flat_index() {
    // 50,000 rows and columns: the ids stay `int`, only `row * 50000 + col` leaves 32 bits,
    // computed in 64 bits from its first operand on.
    let p = mapsat_ir::parse(GRID).expect("parses");
    let opts = Options { sizes: Sizes::new().with("H", 50_000).with("W", 50_000), ..Options::default() };
    let (code, m) = emit(&p, &opts, Dialect::Cuda).expect("emits");
    assert!(code.contains("int g1 = blockIdx.y * blockDim.y + threadIdx.y;"), "{code}");
    assert!(code.contains("out[(long long)g1 * 50000 + i_v] = x[(long long)g1 * 50000 + i_v] + 1.0f;"), "{code}");
    assert_eq!(m.buffers[0].len, 2_500_000_000);
    let (code, _) = emit(&p, &opts, Dialect::OpenCl).expect("emits");
    assert!(code.contains("int i_v = get_global_id(0);"), "{code}");
    assert!(code.contains("out[(long)g1 * 50000 + i_v]"), "{code}");
}

#[test]
fn a_kernel_without_its_widths_is_not_printed() {
    let p = mapsat_ir::parse(GRID).expect("parses");
    let opts = Options { sizes: Sizes::new().with("H", 2).with("W", 3_000_000_000), ..Options::default() };
    let mut k = lower(&p, &opts).expect("lowers");
    k.wide_vars.clear();
    let e = mapsat_codegen::print(&k, Dialect::OpenCl).expect_err("a 32-bit i_v would wrap").to_string();
    assert!(e.contains("the int variable `i_v` reaches"), "{e}");
}

#[test]
fn long_rows_have_64_bit_ids() {
    // One row of 3e9 elements: the column id itself leaves 32 bits, the row id does not.
    let p = mapsat_ir::parse(GRID).expect("parses");
    let opts = Options { sizes: Sizes::new().with("H", 2).with("W", 3_000_000_000), ..Options::default() };
    let (code, _) = emit(&p, &opts, Dialect::OpenCl).expect("emits");
    assert!(code.contains("int g1 = get_global_id(1);"), "{code}");
    assert!(code.contains("long i_v = get_global_id(0);"), "{code}");
    assert!(code.contains("out[(long)g1 * 3000000000 + i_v]"), "{code}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Any local size with any sizes: a kernel or an error, never a panic or a wrap.
    #[test]
    fn any_local_size_is_a_kernel_or_an_error(h in size(), w in size(), l0 in size(), l1 in size(), l2 in size()) {
        let p = mapsat_ir::parse(GRID).expect("parses");
        let sizes = Sizes::new().with("H", h).with("W", w);
        let opts = Options { sizes, local: Some(vec![l0, l1, l2]), ..Options::default() };
        for d in [Dialect::OpenCl, Dialect::Cuda] {
            if let Ok((_, m)) = emit(&p, &opts, d) {
                let items = i128::from(m.launch.local[0]) * i128::from(m.launch.local[1]) * i128::from(m.launch.local[2]);
                prop_assert!(items <= i128::from(i32::MAX), "{:?}", m.launch);
                prop_assert!(m.launch.global.iter().zip(&m.launch.local).all(|(g, l)| g % l == 0));
            }
        }
    }
}
