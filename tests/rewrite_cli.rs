//! `mapsat rewrite`: exit codes, the files it writes, and that every variant parses, checks and
//! computes what the input computes.

mod common;

use common::{mapsat, opencl, root};
use mapsat::ir::{self, interp, Sizes};
use std::path::PathBuf;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mapsat-rewrite-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The `summary.json` a rewrite wrote into `dir`.
fn read_summary(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn writes_checked_variants_and_a_summary() {
    let dir = temp("dot");
    let out =
        mapsat(&["rewrite", "examples/dot.lift", "--variants", "5", "--size", "N=32", "-o", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("stopped: saturated"), "{stdout}");

    let summary = read_summary(&dir);
    assert_eq!(summary["stop_reason"], "saturated");
    assert_eq!(summary["sizes"]["N"], 32);
    assert!(summary["nodes"].as_u64().unwrap() > 0);
    assert!(summary["rules"]["partial-reduce"].as_u64().unwrap() > 0);
    let variants = summary["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 5);

    let original = ir::parse(&std::fs::read_to_string(root().join("examples/dot.lift")).unwrap()).unwrap();
    let sizes = Sizes::new().with("N", 32);
    let inputs = interp::random_inputs(&original, &sizes, 7).unwrap();
    let want = interp::eval(&original, &sizes, &inputs).unwrap();
    for v in variants {
        let text = std::fs::read_to_string(dir.join(v["file"].as_str().unwrap())).unwrap();
        let p = ir::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        ir::check::check(&p).unwrap_or_else(|e| panic!("{e}\n{text}"));
        // A variant may declare new tile sizes (at their defaults here).
        let sizes = p.resolve_sizes(&sizes).unwrap();
        ir::check::check_with_sizes(&p, &sizes).unwrap();
        let got = interp::eval(&p, &sizes, &inputs).unwrap();
        assert!(got.allclose(&want, 1e-4, 1e-4), "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn budgets_are_reported() {
    let dir = temp("budget");
    let out = mapsat(&[
        "rewrite",
        "examples/matmul.lift",
        "--iter-limit",
        "1",
        "--variants",
        "2",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = read_summary(&dir);
    assert_eq!(summary["stop_reason"], "iteration-limit");
    // The budget is the main phase's; the vectorization phase after it has its own.
    assert_eq!(summary["phases"][0]["name"], "rules");
    assert_eq!(summary["phases"][0]["iterations"], 1);
    let phases = summary["phases"].as_array().unwrap();
    let total: u64 = phases.iter().map(|p| p["iterations"].as_u64().unwrap()).sum();
    assert_eq!(summary["iterations"], total);
    let out = mapsat(&[
        "rewrite",
        "examples/matmul.lift",
        "--node-limit",
        "50",
        "--variants",
        "1",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = read_summary(&dir);
    assert_eq!(summary["stop_reason"], "node-limit");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_and_usage() {
    let dir = temp("bad");
    let d = dir.to_str().unwrap();
    let out = mapsat(&["rewrite", "no/such.lift", "-o", d]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read no/such.lift"));
    let out = mapsat(&["rewrite", "tests/filetests/errors/zip_lengths.lift", "-o", d]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("zip of arrays of different lengths"));
    let out = mapsat(&["rewrite", "examples/dot.lift", "--variants", "0", "-o", d]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--variants must be at least 1"));
    let out = mapsat(&["rewrite", "examples/dot.lift", "--split", "1", "-o", d]);
    assert_eq!(out.status.code(), Some(2));
    for limit in ["0", "1e20", "nan"] {
        let out = mapsat(&["rewrite", "examples/dot.lift", "--time-limit", limit, "-o", d]);
        assert_eq!(out.status.code(), Some(2), "{limit}");
        let want =
            if limit == "1e20" { "--time-limit 1e20 is too large" } else { "--time-limit must be a positive number" };
        assert!(String::from_utf8_lossy(&out.stderr).contains(want), "{limit}");
    }
    assert_eq!(mapsat(&["rewrite", "examples/dot.lift"]).status.code(), Some(2), "-o is required");
    assert_eq!(mapsat(&["rewrite", "examples/dot.lift", "--size", "Q=3", "-o", d]).status.code(), Some(2));
    assert!(!dir.exists(), "nothing written on an error");
    // Nothing to rewrite: a reduction with a tuple accumulator, which no rule splits, has no
    // variant with a map (it said "0 variants" and exited 0).
    let file = std::env::temp_dir().join(format!("mapsat-rewrite-tuple-{}.lift", std::process::id()));
    let text = "size N = 16\ndef mm(xs: [f32]N) : f32 =\n  \
                let t = reduce(fun(acc, x => (acc.0 + x, max(acc.1, x))), (0.0, -1e30), xs) in t.0 - t.1\n";
    std::fs::write(&file, text).unwrap();
    let out = mapsat(&["rewrite", file.to_str().unwrap(), "-o", d]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no variant to write"));
    assert!(!dir.exists(), "nothing written");
    let _ = std::fs::remove_file(file);
}

/// Variants are ordinary programs for the rest of the pipeline: each one's sampled valid mapping
/// runs on pocl and matches the interpreter (`mapsat run --check`).
#[test]
fn variants_map_and_run_on_pocl() {
    if !opencl() {
        return;
    }
    let dir = temp("pocl");
    let d = dir.to_str().unwrap();
    let out = mapsat(&["rewrite", "examples/matmul.lift", "--variants", "4", "--iter-limit", "4", "-o", d]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    for k in 0..4 {
        let file = dir.join(format!("variant_{k:02}.lift"));
        let f = file.to_str().unwrap();
        let space = mapsat(&["space", f, "--json", "--sample", "1"]);
        assert_eq!(space.status.code(), Some(0), "{}", String::from_utf8_lossy(&space.stderr));
        let json: serde_json::Value = serde_json::from_slice(&space.stdout).unwrap();
        let mapping = json["samples"][0].as_str().unwrap().to_string();
        let run = mapsat(&["run", f, "--mapping", &mapping, "--check", "--runs", "1"]);
        let text = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
        assert_eq!(run.status.code(), Some(0), "{f} with {mapping}: {text}");
        assert!(text.contains("check: ok"), "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The variants `mapsat rewrite FILE --variants K` writes, as text, checked against the input at
/// its default sizes (new tile sizes at their defaults). The node limit stops saturation; the
/// time limit is raised so that a slow machine gets the same variants.
fn variant_texts(file: &str, k: &str) -> Vec<String> {
    let dir = temp(&file.replace(['/', '.'], "_"));
    let out = mapsat(&["rewrite", file, "--variants", k, "--time-limit", "300", "-o", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let original = ir::parse(&std::fs::read_to_string(root().join(file)).unwrap()).unwrap();
    let sizes = original.resolve_sizes(&Sizes::new()).unwrap();
    let inputs = interp::random_inputs(&original, &sizes, 3).unwrap();
    let want = interp::eval(&original, &sizes, &inputs).unwrap();
    let mut texts = Vec::new();
    for i in 0..k.parse::<usize>().unwrap() {
        let Ok(text) = std::fs::read_to_string(dir.join(format!("variant_{i:02}.lift"))) else { break };
        let p = ir::parse(&text).unwrap();
        let sizes = p.resolve_sizes(&sizes).unwrap();
        assert!(interp::eval(&p, &sizes, &inputs).unwrap().allclose(&want, 1e-4, 1e-4), "{text}");
        texts.push(text);
    }
    let _ = std::fs::remove_dir_all(&dir);
    texts
}

#[test]
fn stencils_are_tiled_and_staged_in_local_memory() {
    // The 1-D stencil's windows in overlapped tiles of the tunable step tA.
    let texts = variant_texts("examples/stencil1d.lift", "8");
    assert!(texts.iter().any(|t| t.contains("slide(tA + 2, tA, pad(1, 1, 0.0, xs))")), "{texts:#?}");
    // The separable blur: its column pass tiled, and the horizontal pass computed per column
    // into local memory, read there by the vertical pass (compute_at).
    let texts = variant_texts("examples/sepblur.lift", "16");
    assert!(texts.iter().any(|t| t.contains("slide(tD + 2, tD,")), "{texts:#?}");
    assert!(texts.iter().any(|t| t.contains("slide(3, 1, toLocal(map@A(")), "{texts:#?}");
}

/// Issue #9: the variants of a two-stage pipeline make each of the three stage choices for its
/// producer (inline, local, global), and the summary names them.
#[test]
fn the_summary_names_each_variants_stage_choices() {
    let dir = temp("stages");
    let out = mapsat(&["rewrite", "examples/sepblur.lift", "--variants", "8", "-o", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = read_summary(&dir);
    let mut seen = std::collections::BTreeSet::new();
    for v in summary["variants"].as_array().unwrap() {
        let choice = v["stages"]["h"].as_str().unwrap().to_string();
        let text = std::fs::read_to_string(dir.join(v["file"].as_str().unwrap())).unwrap();
        let flat: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        // What each name means, read from the variant's text.
        match choice.as_str() {
            "global" => assert!(flat.contains("leth=toGlobal(map@A("), "{text}"),
            "local" => assert!(flat.contains("toLocal(map@A("), "{text}"),
            "inline" => assert!(!text.contains("toGlobal") && !text.contains("toLocal"), "{text}"),
            other => panic!("unexpected choice {other}: {text}"),
        }
        seen.insert(choice);
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["global", "inline", "local"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("; stages h local"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue #10, end to end: an element-wise map and the dot product get a vectorized variant among
/// the K; the mapping space of that variant is not empty, every mapping it lists runs on the
/// OpenCL device and matches the interpreter, and one it refuses (`A_v=G0` for the dot
/// product: a reduction reads the vectors other work groups write) is refused with exit 1.
#[test]
fn vectorized_variants_map_and_run() {
    let muladd = "size N = 256\ndef muladd(a: [f32]N, x: [f32]N, y: [f32]N) : [f32]N =
  map@A(fun(t => t.0 * t.1 + t.2), zip(a, x, y))\n";
    let dot = "size N = 256\ndef dot(x: [f32]N, y: [f32]N) : f32 =
  reduce(add, 0.0, map@A(fun(p => p.0 * p.1), zip(x, y)))\n";
    let programs = [("muladd", muladd, None), ("dot", dot, Some("A_v=G0"))];
    for (name, src, refused) in programs {
        let dir = temp(&format!("vec-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("input.lift");
        std::fs::write(&input, src).unwrap();
        let out = mapsat(&["rewrite", input.to_str().unwrap(), "-o", dir.join("out").to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let variant = (0..8)
            .map(|k| dir.join(format!("out/variant_{k:02}.lift")))
            .find(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains("asVector(vw")))
            .unwrap_or_else(|| panic!("{name}: no vectorized variant:\n{}", String::from_utf8_lossy(&out.stdout)));
        let v = variant.to_str().unwrap();
        let space = String::from_utf8_lossy(&mapsat(&["space", v]).stdout).to_string();
        let samples: Vec<&str> = space.lines().skip_while(|l| *l != "samples:").skip(1).map(str::trim).collect();
        assert!(!samples.is_empty(), "{name}: no valid mapping:\n{space}");
        if let Some(refused) = refused {
            assert!(!samples.contains(&refused), "{name}: {refused} listed:\n{space}");
            let out = mapsat(&["explain", v, "--mapping", refused]);
            assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
        }
        if opencl() {
            for m in &samples {
                let out = mapsat(&["run", v, "--mapping", m, "--check", "--runs", "1"]);
                assert_eq!(out.status.code(), Some(0), "{name} {m}: {}", common::text(&out));
            }
        }
        // The width is a new tunable size: declared, and the variant runs at another width too.
        let text = std::fs::read_to_string(&variant).unwrap();
        assert!(text.contains("size vw in 2..16 = 4"), "{text}");
        if opencl() {
            let out = mapsat(&["run", v, "--mapping", samples[0], "--size", "vw=16", "--check", "--runs", "1"]);
            assert_eq!(out.status.code(), Some(0), "{name} vw=16: {}", common::text(&out));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A variant written by a rewrite at other sizes than the input's defaults declares those sizes
/// as its defaults, so that it checks at its own defaults (its new tile sizes were chosen to
/// divide those sizes, not the input's defaults).
#[test]
fn variants_check_at_their_own_defaults() {
    let dir = temp("sizes");
    let out = mapsat(&["rewrite", "examples/blur2d.lift", "--size", "H=64,W=48", "-o", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = read_summary(&dir);
    for v in summary["variants"].as_array().unwrap() {
        let text = std::fs::read_to_string(dir.join(v["file"].as_str().unwrap())).unwrap();
        let p = ir::parse(&text).unwrap();
        let sizes = p.resolve_sizes(&Sizes::new()).unwrap();
        assert_eq!((sizes.get("H"), sizes.get("W")), (Some(64), Some(48)), "{text}");
        ir::check::check_with_sizes(&p, &sizes).unwrap_or_else(|e| panic!("{e}\n{text}"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue #10, tiling macros end to end: among matmul's 16 variants, a 2-D tiled one (blocks of
/// tA x tB outputs put back by `map(join, transpose(..))`), the same with its dot products split
/// by a tunable `tK` (`examples/matmul_tiled.lift`'s form), a register-blocked one (each
/// block's tB sums accumulated over k in a private array) and the outer product
/// (`examples/matmul_outer.lift`'s form, at widths 16 and 3); each declares its tile sizes, and
/// every sampled mapping of it runs on pocl and matches the interpreter, at the default sizes
/// and at other sizes and tile sizes.
#[test]
fn tiled_and_register_blocked_matmul_variants_run_on_pocl() {
    let dir = temp("tiling-macros");
    let d = dir.to_str().unwrap();
    let out = mapsat(&["rewrite", "examples/matmul.lift", "--variants", "16", "--time-limit", "300", "-o", d]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let files: Vec<(PathBuf, String)> = (0..16)
        .map(|k| dir.join(format!("variant_{k:02}.lift")))
        .map(|f| {
            let t = std::fs::read_to_string(&f).unwrap().split_whitespace().collect::<String>();
            (f, t)
        })
        .collect();
    let find = |what: &str, is: &dyn Fn(&str) -> bool| {
        let found = files.iter().find(|(_, t)| is(t));
        found.map(|(f, _)| f.clone()).unwrap_or_else(|| panic!("no {what} variant:\n{}", common::text(&out)))
    };
    let tiled_2d = |t: &str| t.contains("(join,transpose(map@B(") && t.contains("split(tA,a)");
    let tiled = find("2-D tiled", &tiled_2d);
    let split_k = find("2-D tiled, split dot products", &|t| {
        tiled_2d(t) && t.contains("map@RtK(fun(") && t.contains("split(tK,zip(")
    });
    let blocked = find("register-blocked", &|t| t.contains("toPrivate(reduce(") && t.contains("map@B_i_z("));
    // The outer product (`outer-product`, `examples/matmul_outer.lift`'s form): vectors of vw
    // columns times blocks of tA rows, a vector accumulator per row.
    let outer = find("outer-product", &|t| {
        t.contains("transpose(map@B_r(fun(x=>asVector(vw,x)),b))")
            && t.contains("split(tA,a)")
            && t.contains("toPrivate(")
    });
    for (f, tile, sizes) in [
        (&tiled, "tB", "M=24,K=8,N=32,tA=8,tB=4"),
        (&split_k, "tK", "M=24,K=32,N=16,tA=8,tB=4,tK=4"),
        (&blocked, "tB", "M=8,K=24,N=32,tB=8"),
        (&outer, "tA", "M=24,K=5,N=32,tA=8,vw=16"),
        (&outer, "tA", "M=6,K=8,N=9,tA=3,vw=3"),
    ] {
        let f = f.to_str().unwrap();
        assert!(std::fs::read_to_string(f).unwrap().contains(&format!("size {tile} in 1..")), "{f}");
        sampled_mappings_run(f, sizes);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The outer product the rewrite stage finds for `examples/conv_windows.lift` (a convolution
/// as windows times weight columns) runs on pocl with every sampled mapping, at the default
/// sizes and at odd ones (a 5 x 7 image, 3 input channels).
#[test]
fn the_windowed_convs_outer_product_runs_on_pocl() {
    let dir = temp("conv-windows");
    let d = dir.to_str().unwrap();
    let out = mapsat(&["rewrite", "examples/conv_windows.lift", "--time-limit", "300", "-o", d]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let outer = (0..8).map(|k| dir.join(format!("variant_{k:02}.lift"))).find(|f| {
        let t = std::fs::read_to_string(f).unwrap_or_default().split_whitespace().collect::<String>();
        t.contains("asVector(vw,x)),join(join(ks)))") && t.contains("toPrivate(")
    });
    let outer = outer.unwrap_or_else(|| panic!("no outer-product variant:\n{}", common::text(&out)));
    sampled_mappings_run(outer.to_str().unwrap(), "inH=5,inW=7,inChs=3,outChs=8,tA=7,vw=4");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A matmul whose result is transposed: its outer product writes vectors of `vw` columns into
/// rows of the output, so each vector's lanes land a row apart (stored lane by lane). Code
/// generation refused every mapping of this variant before, which the space had accepted.
#[test]
fn a_transposed_matmuls_outer_product_runs_on_pocl() {
    let dir = temp("matmul-transposed");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("mmT.lift");
    std::fs::write(
        &src,
        "size M = 8, K = 16, N = 8
def mmT(a: [[f32]K]M, b: [[f32]N]K) : [[f32]M]N =
  transpose(map@A(fun(row =>
    map@B(fun(col => reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(row, col)))), transpose(b))),
    a))",
    )
    .unwrap();
    let out_dir = dir.join("variants");
    let out = mapsat(&["rewrite", src.to_str().unwrap(), "--time-limit", "300", "-o", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let outer = (0..8).map(|k| out_dir.join(format!("variant_{k:02}.lift"))).find(|f| {
        let t = std::fs::read_to_string(f).unwrap_or_default().split_whitespace().collect::<String>();
        t.contains("transpose(map@B_r(fun(x=>asVector(vw,x)),b))") && t.contains("toPrivate(")
    });
    let outer = outer.unwrap_or_else(|| panic!("no outer-product variant:\n{}", common::text(&out)));
    sampled_mappings_run(outer.to_str().unwrap(), "M=6,K=5,N=12,tA=3,vw=4");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A matmul with a `relu` after each dot product, and the windowed conv with one: the outer
/// product applies the relu to each block's accumulators (split off the reduction by map
/// fission) and runs on pocl with every sampled mapping, at odd sizes too.
#[test]
fn outer_products_with_a_relu_run_on_pocl() {
    let dir = temp("epilogue");
    std::fs::create_dir_all(&dir).unwrap();
    let relu = |src: &str| {
        let dot = "reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(";
        let at = src.find(dot).unwrap();
        let close = at + src[at..].find("))))").unwrap() + 4;
        format!("{}max(0.0, {}){}", &src[..at], &src[at..close], &src[close..])
    };
    let matmul = relu(&std::fs::read_to_string("examples/matmul.lift").unwrap());
    let conv = relu(&std::fs::read_to_string("examples/conv_windows.lift").unwrap());
    for (name, src, sizes) in
        [("matmul", matmul, "M=6,K=5,N=12,tA=3,vw=4"), ("conv", conv, "inH=5,inW=7,inChs=3,outChs=8,tA=7,vw=4")]
    {
        assert!(src.contains("max(0.0, reduce("), "{src}");
        let file = dir.join(format!("{name}_relu.lift"));
        std::fs::write(&file, &src).unwrap();
        let out_dir = dir.join(name);
        let out = mapsat(&["rewrite", file.to_str().unwrap(), "--time-limit", "300", "-o", out_dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let outer = (0..8).map(|k| out_dir.join(format!("variant_{k:02}.lift"))).find(|f| {
            let t = std::fs::read_to_string(f).unwrap_or_default().split_whitespace().collect::<String>();
            t.contains("asVector(vw,x))") && t.contains("_e(fun(") && t.contains("max(vectorFromScalar(vw,0.0),")
        });
        let outer = outer.unwrap_or_else(|| panic!("{name}: no outer product with the relu:\n{}", common::text(&out)));
        sampled_mappings_run(outer.to_str().unwrap(), sizes);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fully-connected layer (with 8 and 10 outputs, and with its weights in PyTorch's layout,
/// `[[f32]K]N`, which a first kernel stores transposed) and the windowed conv with a bias per
/// output column (channel) and a `relu`: the outer product reads the bias `vw` (or 2) columns at
/// a time and runs on pocl with every sampled mapping, at odd sizes too.
#[test]
fn outer_products_with_a_bias_run_on_pocl() {
    let dir = temp("bias");
    std::fs::create_dir_all(&dir).unwrap();
    let with_bias = |src: &str, columns: &str| {
        let dot = "reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(";
        let at = src.find(dot).unwrap();
        let close = at + src[at..].find("))))").unwrap() + 4;
        let dot = src[at..close].replace(", col)", ", cb.0)");
        let at_columns = src.rfind(columns).unwrap();
        let src = format!(
            "{}max(0.0, {dot} + cb.1){}zip({columns}, bias){}",
            &src[..at],
            &src[close..at_columns],
            &src[at_columns + columns.len()..]
        );
        let src = src.replace("fun(col =>", "fun(cb =>");
        let header = src.find("def ").unwrap();
        let params = header + src[header..].find(") :").unwrap();
        let n = if columns.contains("ks") { "outChs" } else { "N" };
        format!("{}, bias: [f32]{n}{}", &src[..params], &src[params..])
    };
    let fc = with_bias(&std::fs::read_to_string("examples/matmul.lift").unwrap(), "transpose(b)");
    let conv = with_bias(&std::fs::read_to_string("examples/conv_windows.lift").unwrap(), "transpose(join(join(ks)))");
    // 10 columns: read 2 at a time (the tunable width's default, 4, does not divide them).
    let fc10 = fc.replace("N = 8", "N = 10");
    // PyTorch's layout, one row of weights per output: stored transposed by a first kernel.
    let linear = fc.replace("b: [[f32]N]K", "b: [[f32]K]N").replace("zip(transpose(b), bias)", "zip(b, bias)");
    for (name, src, sizes) in [
        ("fc", fc, "M=6,K=5,N=12,tA=3,vw=4"),
        ("fc10", fc10, "M=6,K=5,N=6,tA=3"),
        ("linear", linear, "M=6,K=5,N=12,tA=3,vw=4"),
        ("conv", conv, "inH=5,inW=7,inChs=3,outChs=8,tA=7,vw=4"),
    ] {
        assert!(src.contains(" + cb.1)") && src.contains(", bias)"), "{src}");
        let file = dir.join(format!("{name}_bias.lift"));
        std::fs::write(&file, &src).unwrap();
        let out_dir = dir.join(name);
        let out = mapsat(&["rewrite", file.to_str().unwrap(), "--time-limit", "300", "-o", out_dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{src}\n{}", String::from_utf8_lossy(&out.stderr));
        let outer = (0..8).map(|k| out_dir.join(format!("variant_{k:02}.lift"))).find(|f| {
            let t = std::fs::read_to_string(f).unwrap_or_default().split_whitespace().collect::<String>();
            let bias = t.contains("asVector(vw,bias)") || t.contains("asVector(2,bias)");
            bias && t.contains("_e(fun(") && t.contains("toPrivate(reduce(")
        });
        let outer = outer.unwrap_or_else(|| panic!("{name}: no outer product with the bias:\n{}", common::text(&out)));
        let staged = std::fs::read_to_string(&outer).unwrap().contains("= toGlobal(map@");
        assert_eq!(staged, name == "linear", "{name}: the weights stored transposed by a kernel of their own");
        sampled_mappings_run(outer.to_str().unwrap(), sizes);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The spaces of `mapsat space --json`'s output, one per kernel (a program of several kernels
/// lists them under "kernels").
fn kernel_spaces(json: &serde_json::Value) -> Vec<serde_json::Value> {
    json.get("kernels").and_then(|k| k.as_array()).cloned().unwrap_or_else(|| vec![json.clone()])
}

/// Six sampled mappings of the program in `f` are valid, and each runs on the OpenCL device
/// equal to the interpreter at the default sizes and at `sizes`. For a program of several
/// kernels, the k-th mapping joins each kernel's k-th sample (its samples taken again in turn
/// where it has fewer).
fn sampled_mappings_run(f: &str, sizes: &str) {
    let space = mapsat(&["space", f, "--json", "--sample", "6"]);
    assert_eq!(space.status.code(), Some(0), "{}", String::from_utf8_lossy(&space.stderr));
    let json: serde_json::Value = serde_json::from_slice(&space.stdout).unwrap();
    let kernels = kernel_spaces(&json);
    let per_kernel: Vec<Vec<&str>> = kernels
        .iter()
        .map(|k| k["samples"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect())
        .collect();
    assert!(per_kernel.iter().all(|s| !s.is_empty()), "{f}: no valid mapping");
    if !opencl() {
        return;
    }
    let count = per_kernel.iter().map(Vec::len).max().unwrap_or(0);
    let samples = (0..count).map(|k| per_kernel.iter().map(|s| s[k % s.len()]).collect::<Vec<_>>().join(","));
    for m in samples.collect::<Vec<_>>().iter().map(String::as_str) {
        for size in [&["--runs", "1"][..], &["--size", sizes, "--runs", "1"]] {
            let mut args = vec!["run", f, "--mapping", m, "--check"];
            args.extend(size);
            let run = mapsat(&args);
            assert_eq!(run.status.code(), Some(0), "{f} with {m} {size:?}: {}", common::text(&run));
            assert!(common::text(&run).contains("check: ok"), "{}", common::text(&run));
        }
    }
}

/// Variants that read vectors of a column of a `transpose` (lanes a row apart), which the space
/// refuses at every mapping, or whose space is empty, are left out with the reason (they took
/// places among the K and could never become kernels). The node limit, not the time limit,
/// ends the saturation: on a loaded machine the time limit came before those variants.
#[test]
fn variants_no_mapping_can_lower_are_left_out() {
    let dir = temp("unmappable");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("scale.lift");
    std::fs::write(
        &src,
        "size M = 6, K = 12, N = 8
def mm(a: [[f32]K]M, b: [[f32]N]K) : [[f32]N]M =
  map@A(fun(row => map@B(fun(col => reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(row, col)))), transpose(b))), a)",
    )
    .unwrap();
    let out_dir = dir.join("v");
    let args = [
        "rewrite",
        src.to_str().unwrap(),
        "--no-new-tiles",
        "--variants",
        "12",
        "--time-limit",
        "300",
        "-o",
        out_dir.to_str().unwrap(),
    ];
    let out = mapsat(&args);
    assert_eq!(out.status.code(), Some(0), "{}", common::text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("left out a variant"), "{}", common::text(&out));
    every_variant_has_a_mapping(&out_dir);
    // Two chained layers in one kernel: the variant with the first layer's panels in local
    // memory, whose kernel also reads that layer's whole result, has an empty space (no work
    // group can do both); it is left out too.
    let src = dir.join("mlp.lift");
    std::fs::write(
        &src,
        "size M = 6, K = 5, H = 8, N = 16
def mlp(a: [[f32]K]M, w1: [[f32]K]H, w2: [[f32]H]N) : [[f32]N]M =
  map@D(fun(row => map@E(fun(col => reduce(add, 0.0, map@F(fun(p => p.0 * p.1), zip(row, col)))), w2)),
    map@A(fun(row => map@B(fun(col => max(0.0, reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(row, col))))), w1)), a))",
    )
    .unwrap();
    let out_dir = dir.join("mlp");
    let out = mapsat(&["rewrite", src.to_str().unwrap(), "--time-limit", "300", "-o", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", common::text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no valid mapping"), "{}", common::text(&out));
    every_variant_has_a_mapping(&out_dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every variant in `dir` has a valid mapping of each of its kernels.
fn every_variant_has_a_mapping(dir: &std::path::Path) {
    for f in std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()) {
        if f.extension().is_some_and(|e| e == "lift") {
            let space = mapsat(&["space", f.to_str().unwrap(), "--json"]);
            assert_eq!(space.status.code(), Some(0), "{}: {}", f.display(), common::text(&space));
            let json: serde_json::Value = serde_json::from_slice(&space.stdout).unwrap();
            for k in kernel_spaces(&json) {
                assert_ne!(k["count"].as_f64(), Some(0.0), "{}: {}", f.display(), common::text(&space));
            }
        }
    }
}

/// A contrast stretch whose minimum and maximum are kernels without a map (plain reductions,
/// as the input has them): its variants keep them (they were all left out for "no map left",
/// which the input itself has), and none inlines a reduction into every pixel (each would
/// reduce the whole image again). An argmax whose projection a rewrite splits into a map of
/// its own stores an array of tuples, which code generation refuses: such a variant is left
/// out, and every variant written emits.
#[test]
fn reductions_stay_stages_and_variants_code_generation_refuses_are_left_out() {
    let dir = temp("stretch");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("stretch.lift");
    std::fs::write(
        &src,
        "size H = 13, W = 100
def stretch(img: [[f32]W]H) : [[f32]W]H =
  let lo = toGlobal(reduce(min, 1e30, join(img))) in
  let hi = toGlobal(reduce(max, 0.0 - 1e30, join(img))) in
  map@A(fun(row => map@B(fun(v => (v - lo) / (hi - lo)), row)), img)",
    )
    .unwrap();
    let out_dir = dir.join("s");
    let out = mapsat(&["rewrite", src.to_str().unwrap(), "--variants", "4", "-o", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", common::text(&out));
    let summary = read_summary(&out_dir);
    let variants = summary["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 4, "{summary:#}");
    for v in variants {
        assert_eq!(v["kernels"], 3, "{v:#}");
    }
    every_variant_has_a_mapping(&out_dir);
    let src = dir.join("argmax.lift");
    std::fs::write(
        &src,
        "size R = 13, C = 31
def argmax(a: [[f32]C]R, idx: [i32]C) : [i32]R =
  map@A(fun(row => reduce(fun(acc, p => select(p.0 > acc.0, p, acc)), (0.0 - 1e30, 0), zip(row, idx)).1), a)",
    )
    .unwrap();
    let out_dir = dir.join("a");
    let out = mapsat(&["rewrite", src.to_str().unwrap(), "--variants", "8", "-o", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", common::text(&out));
    assert!(
        common::text(&out).contains("code generation refuses kernel `argmax`: unsupported"),
        "{}",
        common::text(&out)
    );
    for f in std::fs::read_dir(&out_dir).unwrap().flatten().map(|e| e.path()) {
        if f.extension().is_some_and(|e| e == "lift") {
            let space = mapsat(&["space", f.to_str().unwrap(), "--sample", "1"]);
            let text = common::text(&space);
            let mapping = text.lines().skip_while(|l| !l.starts_with("samples:")).nth(1).unwrap().trim().to_string();
            let emit =
                mapsat(&["emit", f.to_str().unwrap(), "--mapping", &mapping, "-o", dir.join("e").to_str().unwrap()]);
            assert_eq!(emit.status.code(), Some(0), "{}: {}", f.display(), common::text(&emit));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
