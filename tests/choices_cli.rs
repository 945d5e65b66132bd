//! `mapsat space --variants K` and `mapsat explain --stages EDGE=CHOICE` (issue #9): the stage
//! choices of `examples/sepblur.lift` (its producer `h` inlined, staged in local memory, or
//! materialized in global memory) as a variable of one space; every sample it prints is
//! valid under its own choice, and refused, naming the choice, under another.

mod common;

use common::{mapsat, text};
use std::collections::BTreeMap;

const SEPBLUR: &str = "examples/sepblur.lift";

/// `stage h = X: N mappings (...)` lines: X and N.
fn counts(out: &str) -> BTreeMap<String, u64> {
    out.lines()
        .filter_map(|l| {
            let (choice, rest) = l.strip_prefix("stage h = ")?.split_once(": ")?;
            let n = rest.strip_suffix(')')?.split_once(" mappings (")?.0.parse().ok()?;
            Some((choice.to_string(), n))
        })
        .collect()
}

/// `  stage h = X: MAPPING` sample lines.
fn samples(out: &str) -> Vec<(String, String)> {
    let at = out.find("samples:\n").expect("samples") + "samples:\n".len();
    out[at..]
        .lines()
        .filter_map(|l| l.trim().strip_prefix("stage h = ")?.split_once(": "))
        .map(|(c, m)| (c.to_string(), m.to_string()))
        .collect()
}

#[test]
fn the_space_offers_each_stage_choice_and_its_samples_are_explained_under_it() {
    let out = mapsat(&["space", SEPBLUR, "--variants", "8", "--sample", "9", "--seed", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(stdout.contains("stage(h) in {inline, local, global}"), "{stdout}");
    let counts = counts(&stdout);
    assert_eq!(counts.keys().collect::<Vec<_>>(), ["global", "inline", "local"], "{stdout}");
    let total: u64 = counts.values().sum();
    assert!(stdout.contains(&format!("valid (stage choice, mapping) pairs: {total} (")), "{stdout}");
    let samples = samples(&stdout);
    assert_eq!(samples.len(), 9, "{stdout}");
    for choice in ["global", "inline", "local"] {
        let (_, mapping) = samples.iter().find(|(c, _)| c == choice).expect("a sample of each choice");
        let stages = format!("h={choice}");
        let out = mapsat(&["explain", SEPBLUR, "--stages", &stages, "--mapping", mapping]);
        assert_eq!(out.status.code(), Some(0), "{choice} {mapping}: {}", text(&out));
        assert!(text(&out).starts_with(&format!("valid under stage h = {choice} (")), "{}", text(&out));
        // The same mapping under another choice: that choice's program has other maps.
        let other = if choice == "global" { "h=local" } else { "h=global" };
        let out = mapsat(&["explain", SEPBLUR, "--stages", other, "--mapping", mapping]);
        assert_eq!(out.status.code(), Some(1), "{other} {mapping}: {}", text(&out));
        let said = format!("invalid under stage h = {}: ", &other[2..]);
        assert!(text(&out).starts_with(&said), "{}", text(&out));
    }
}

/// Asked for more samples than the space has, `space --variants` gives every valid pair, each
/// once, and says there are no more (the descents gave up after repeats, 126 of 191).
#[test]
fn sampling_more_than_the_space_has_gives_all_of_it() {
    let out = mapsat(&["space", SEPBLUR, "--variants", "8", "--sample", "1000"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let total: u64 = counts(&stdout).values().sum();
    let samples = samples(&stdout);
    let distinct: std::collections::HashSet<&(String, String)> = samples.iter().collect();
    assert_eq!(distinct.len(), samples.len());
    assert_eq!(samples.len() as u64, total, "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("note: {total} distinct (stage choice, mapping) pairs sampled of the 1000 asked")),
        "{stderr}"
    );
}

#[test]
fn a_choice_not_offered_is_refused_and_a_bad_one_is_a_usage_error() {
    let out = mapsat(&["explain", SEPBLUR, "--stages", "h=private", "--mapping", "A=S"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("stage h = private is not offered (offered: stage h = global"), "{}", text(&out));
    let out = mapsat(&["explain", SEPBLUR, "--stages", "h=root", "--mapping", "A=S"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("`root` is not a stage choice"), "{}", text(&out));
    let out = mapsat(&["explain", SEPBLUR, "--stages", "h=local,h=global", "--mapping", "A=S"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("stage `h` is given twice"), "{}", text(&out));
}

#[test]
fn the_space_as_json_says_what_the_text_says() {
    let args = ["space", SEPBLUR, "--variants", "8", "--sample", "4", "--seed", "2"];
    let out = mapsat(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let want = counts(&String::from_utf8_lossy(&out.stdout));
    let out = mapsat(&[&args[..], &["--json"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["edges"][0]["edge"], "h", "{v}");
    assert_eq!(v["edges"][0]["domain"], serde_json::json!(["inline", "local", "global"]), "{v}");
    let got: BTreeMap<String, u64> = v["choices"]
        .as_array()
        .expect("choices")
        .iter()
        .map(|c| (c["stages"]["h"].as_str().expect("h").to_string(), c["count"].as_u64().expect("exact")))
        .collect();
    assert_eq!(got, want, "{v}");
    assert_eq!(v["count"].as_u64(), Some(want.values().sum()), "{v}");
    let samples = v["samples"].as_array().expect("samples");
    assert_eq!(samples.len(), 4, "{v}");
    for p in samples {
        let stages = format!("h={}", p["stages"]["h"].as_str().expect("h"));
        let mapping = p["mapping"].as_str().expect("mapping");
        let out = mapsat(&["explain", SEPBLUR, "--stages", &stages, "--mapping", mapping]);
        assert_eq!(out.status.code(), Some(0), "{stages} {mapping}: {}", text(&out));
    }
}

/// A layer whose variants store its weights transposed by a kernel of their own: those
/// variants make a choice the input (which has no producer) cannot say, and are left out of
/// the joint space saying so (they were called "the stage choices of the input program"); a
/// stage asked of a program without producers is refused saying it has none.
#[test]
fn variants_with_a_kernel_boundary_of_their_own_are_left_out_saying_so() {
    let out = mapsat(&["space", "examples/linear.lift", "--variants", "8"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(stdout.contains("it adds a kernel boundary of its own"), "{stdout}");
    let args = ["explain", "examples/linear.lift", "--variants", "8", "--stages", "x=global", "--mapping", "A=S"];
    let out = mapsat(&args);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("no producer `x`: the program has none"), "{}", text(&out));
}

/// Under a profile, `explain --stages` also lowers each kernel's valid mapping and says when
/// code generation refuses it, as `explain` without a stage choice does: a convolution after a
/// relu kernel, whose C=L0 under A_0=W0 keeps 144 bytes of a work group's results in local
/// memory, more than a 16-byte profile has.
#[test]
fn explained_under_a_stage_choice_and_a_profile_a_mapping_code_generation_refuses_is_not_valid() {
    let dir = common::scratch("choices", "tiny");
    let profile = std::fs::read_to_string(common::root().join("ir/profiles/pocl-cpu.toml")).unwrap();
    let tiny = profile.replace("local_mem_bytes = 524288", "local_mem_bytes = 16").replace("\"pocl-cpu\"", "\"tiny\"");
    let target = dir.join("tiny.toml");
    std::fs::write(&target, tiny).unwrap();
    let file = dir.join("conv2.lift");
    std::fs::write(
        &file,
        "size inH = 8, inW = 8, inChs = 4, outChs = 6, kerH = 3, kerW = 3
def conv2(inp: [[[f32]inChs]inW]inH, ks: [[[[f32]inChs]kerW]kerH]outChs)
    : [[[f32]outChs](inW - kerW + 3)](inH - kerH + 3) =
  let x = toGlobal(map@P(fun(r => map@Q(fun(px => map@R(fun(v => max(0.0, v)), px)), r)), inp)) in
  mapND2@A(fun(slideWin: [[[f32]inChs]kerW]kerH =>
    map@B(fun(singleK: [[[f32]inChs]kerW]kerH =>
      reduce(add, 0.0, map@C(fun(p => p.0 * p.1), joinND3(zipND3(slideWin, singleK))))),
      ks)),
    slideND2(kerH, 1, kerW, 1, padND2(1, 1, 0.0, x)))",
    )
    .unwrap();
    let (f, t) = (file.to_str().unwrap(), target.to_str().unwrap());
    let explain = |m: &str, target: &[&str]| {
        mapsat(&[&["explain", f, "--variants", "1", "--stages", "x=global", "--mapping", m][..], target].concat())
    };
    let m = "P=G0,Q=S,R=F,A_0=W0,A_1=S,B=S,C=L0";
    assert_eq!(explain(m, &[]).status.code(), Some(0));
    let out = explain(m, &["--target", t]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let want = "invalid under stage x = global: kernel conv2: valid in the mapping space, but code generation refuses";
    assert!(
        text(&out).contains(want) && text(&out).contains("144 bytes of local memory per work group"),
        "{}",
        text(&out)
    );
    // A mapping that keeps nothing in local memory is valid under it.
    let out = explain("P=G0,Q=S,R=F,A_0=G0,A_1=S,B=S,C=S", &["--target", t]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}
