//! End-to-end tests of `mapsat space` and `mapsat explain`: the parallel-mapping space of a
//! program and the verdict on one mapping, checked against the paper's examples (Mogers et al.,
//! CC'22: Listing 1 with the mappings M1–M6 of Table 1) and against expectations derived by hand
//! from the program's map nest.
//!
//! Exit codes: 0 success (a valid mapping), 1 the input was rejected (an invalid mapping, a
//! program without maps), 2 bad usage (a malformed mapping, an unknown device profile).

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Command;

/// Listing 1 of the paper: map A around two nests B/C and D/E that share a local buffer.
const LISTING1: &str = "examples/listing1.lift";
/// The direct convolution: maps A_0, A_1 (mapND2), B, C; layout maps m1..m5.
const CONV: &str = "examples/conv.lift";

// The mappings of Table 1, as `constraints/tests/paper.rs` checks them through the library.
const M1: &str = "A=G0,B=S,C=S,D=S,E=S";
const M2: &str = "A=G1,B=G0,C=S,D=G0,E=S";
const M3: &str = "A=S,B=W0,C=L0,D=W0,E=L0";
const M4: &str = "A=W0,B=L0,C=S,D=L0,E=S";
const M5: &str = "A=W0,B=L0,C=S,D=L0,E=V";
const M6: &str = "A=W0,B=L0,C=V,D=S,E=L0";

/// The number of valid mappings of Listing 1, with or without the fusion heuristic and with the
/// pocl-cpu profile: a brute force over every assignment (`constraints/tests/brute.rs`,
/// `listing1_brute_force`) finds 42.
const LISTING1_COUNT: u64 = 42;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One run of the binary.
struct Run {
    args: Vec<String>,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Asserts the exit code, showing the command and its output otherwise.
    fn exits(self, code: i32) -> Run {
        assert_eq!(
            self.code,
            Some(code),
            "mapsat {}\n--- stdout:\n{}--- stderr:\n{}",
            self.args.join(" "),
            self.stdout,
            self.stderr
        );
        self
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", self.stdout))
    }
}

fn mapsat(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_mapsat")).args(args).current_dir(root()).output().expect("run mapsat");
    let run = Run {
        args: args.iter().map(|a| a.to_string()).collect(),
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(!run.stderr.contains("panicked"), "mapsat {} panicked:\n{}", run.args.join(" "), run.stderr);
    run
}

fn explain(file: &str, mapping: &str, flags: &[&str]) -> Run {
    let mut args = vec!["explain", file, "--mapping", mapping];
    args.extend_from_slice(flags);
    mapsat(&args)
}

/// One violated constraint as `explain` prints it: `  [9 (vectorization)] maps E: TEXT`.
#[derive(Debug)]
struct Violation {
    family: String,
    maps: Vec<String>,
    text: String,
}

/// The violations of a rejected mapping (exit 1); checks the `invalid: N violated` header.
fn violations(file: &str, mapping: &str, flags: &[&str]) -> Vec<Violation> {
    let run = explain(file, mapping, flags).exits(1);
    assert!(run.stdout.is_empty(), "a rejection prints to stderr only: {}", run.stdout);
    let mut lines = run.stderr.lines();
    let header = lines.next().expect("a header line");
    let n: usize = header
        .strip_prefix("invalid: ")
        .and_then(|h| h.strip_suffix(" violated constraint(s)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("bad header `{header}`"));
    let out: Vec<Violation> = lines
        .map(|l| {
            let (family, rest) = l
                .strip_prefix("  [")
                .and_then(|l| l.split_once("] maps "))
                .unwrap_or_else(|| panic!("bad violation line `{l}`"));
            let (maps, text) = rest.split_once(": ").unwrap_or_else(|| panic!("bad violation line `{l}`"));
            Violation {
                family: family.to_string(),
                maps: maps.split(", ").map(str::to_string).collect(),
                text: text.to_string(),
            }
        })
        .collect();
    assert_eq!(out.len(), n, "{}", run.stderr);
    assert!(n > 0);
    out
}

fn families(v: &[Violation]) -> HashSet<&str> {
    v.iter().map(|c| c.family.as_str()).collect()
}

/// `mapsat space` text output, parsed.
struct SpaceText {
    maps: Vec<String>,
    count: String,
    /// (valid, draws, fraction)
    baseline: Option<(u64, u64, f64)>,
    samples: Vec<String>,
}

fn space_text(args: &[&str]) -> SpaceText {
    let mut all = vec!["space"];
    all.extend_from_slice(args);
    let run = mapsat(&all).exits(0);
    let out = &run.stdout;
    let field = |prefix: &str| out.lines().find_map(|l| l.strip_prefix(prefix)).map(str::to_string);
    let maps = field("maps: ").unwrap_or_else(|| panic!("no maps line:\n{out}"));
    let count = field("valid mappings: ").unwrap_or_else(|| panic!("no count line:\n{out}"));
    let count = count.split_once(" (").map_or(count.clone(), |(c, _)| c.to_string());
    let baseline = field("random baseline: ").map(|b| {
        // `V of N uniformly random assignments are valid (F)`
        let words: Vec<&str> = b.split_whitespace().collect();
        assert_eq!(words[1], "of", "{b}");
        let fraction = words.last().and_then(|f| f.strip_prefix('(')).and_then(|f| f.strip_suffix(')'));
        (
            words[0].parse().expect("valid count"),
            words[2].parse().expect("draws"),
            fraction.and_then(|f| f.parse().ok()).unwrap_or_else(|| panic!("no fraction in `{b}`")),
        )
    });
    let samples: Vec<String> = out
        .lines()
        .skip_while(|l| *l != "samples:")
        .skip(1)
        .map(|l| l.strip_prefix("  ").unwrap_or_else(|| panic!("bad sample line `{l}`")).to_string())
        .collect();
    assert!(out.lines().any(|l| l == "samples:"), "{out}");
    SpaceText { maps: maps.split(' ').map(str::to_string).collect(), count, baseline, samples }
}

/// The labels of a mapping `A=W0,B=L0,...`, in order.
fn labels_of(mapping: &str) -> Vec<&str> {
    mapping.split(',').map(|p| p.split_once('=').expect("LABEL=CODE").0).collect()
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().expect("a string").to_string())
        .collect()
}

#[test]
fn table1_valid_mappings() {
    // M4: valid; B writes the local buffer with mapLcl(0), D reads it transposed with mapLcl(0):
    // threads read what other threads wrote, so a barrier separates the B/C nest from D.
    let m4 = explain(LISTING1, M4, &[]).exits(0);
    let mut lines = m4.stdout.lines();
    assert_eq!(lines.next(), Some("valid"));
    let barrier = m4
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("  needs a barrier between map B and its readers "))
        .unwrap_or_else(|| panic!("no barrier after B:\n{}", m4.stdout));
    assert!(barrier.split(", ").any(|r| r == "D"), "{barrier}");
    assert!(!m4.stdout.contains("no barrier needed"));
    assert!(m4.stderr.is_empty(), "{}", m4.stderr);

    // M6: valid; C=V and E=L0 make each thread read back exactly the elements it wrote.
    let m6 = explain(LISTING1, M6, &[]).exits(0);
    assert_eq!(m6.stdout.lines().next(), Some("valid"));
    assert!(m6.stdout.lines().any(|l| l == "  no barrier needed"), "{}", m6.stdout);
    assert!(!m6.stdout.contains("needs a barrier"), "{}", m6.stdout);

    // Codes are case-insensitive and spaces around the parts are allowed.
    let loose = explain(LISTING1, " A = w0 , B=l0, C=s,D=L0,E=S ", &[]).exits(0);
    assert_eq!(loose.stdout, m4.stdout);
}

#[test]
fn table1_rejected_mappings() {
    // M5: E runs over j of the transposed buffer, so its consecutive iterations are strided:
    // exactly one violation, vectorization (rule 9) on map E.
    let m5 = violations(LISTING1, M5, &[]);
    assert_eq!(m5.len(), 1, "{m5:?}");
    assert_eq!(m5[0].family, "9 (vectorization)");
    assert_eq!(m5[0].maps, ["E"]);
    assert!(m5[0].text.contains("cannot be vectorized"), "{}", m5[0].text);

    // Only C can be vectorized: A, B, D map over arrays, E over a strided column.
    let all_vec = violations(LISTING1, "A=V,B=V,C=V,D=V,E=V", &[]);
    let unvectorizable: Vec<&str> =
        all_vec.iter().filter(|c| c.family == "9 (vectorization)").map(|c| c.maps[0].as_str()).collect();
    assert_eq!(unvectorizable, ["A", "B", "D", "E"], "{all_vec:?}");

    // M2: B and D are mapGlb: the buffer B writes is read by D across work groups, and OpenCL has
    // no global barrier (rule 10). The local buffer is also used outside any work group (rule 2).
    let m2 = violations(LISTING1, M2, &[]);
    let sync: Vec<&Violation> = m2.iter().filter(|c| c.family == "10 (synchronizability)").collect();
    assert!(!sync.is_empty(), "{m2:?}");
    let cannot = sync.iter().find(|c| c.text.contains("cannot synchronize")).expect("a `cannot synchronize` violation");
    for map in ["B", "D"] {
        assert!(cannot.maps.iter().any(|m| m == map), "{cannot:?}");
    }
    assert!(families(&m2).contains("2 (local memory scoping)"), "{m2:?}");

    // M1: valid as the paper says, the buffer being each work item's own local scratch inside
    // mapGlb A; only the fusion heuristic objects (B/C and D/E are sequential and perfectly
    // nested, rule 8), so it is valid without it and with the inner maps fused.
    let m1 = violations(LISTING1, M1, &[]);
    assert!(m1.iter().all(|c| c.family == "8 (sequential map fusion)"), "{m1:?}");
    let pairs: HashSet<Vec<String>> = m1.iter().map(|c| c.maps.clone()).collect();
    assert_eq!(pairs, HashSet::from([vec!["B".to_string(), "C".to_string()], vec!["D".to_string(), "E".to_string()]]));
    for (mapping, flags) in [(M1, &["--no-fusion"][..]), ("A=G0,B=S,C=F,D=S,E=F", &[][..])] {
        let run = explain(LISTING1, mapping, flags).exits(0);
        assert!(run.stdout.contains("no barrier needed"), "{}", run.stdout);
    }

    // M3: B and D are work-group maps writing/reading local memory: out-of-scope reads (rule 2).
    let m3 = violations(LISTING1, M3, &[]);
    let scoped: Vec<&Violation> = m3.iter().filter(|c| c.family == "2 (local memory scoping)").collect();
    assert!(scoped.iter().any(|c| c.maps[0] == "B" && c.text.contains("out-of-scope reads")), "{m3:?}");
    assert!(scoped.iter().any(|c| c.maps[0] == "D"), "{m3:?}");
}

#[test]
fn fusion_heuristic_flag() {
    // Conv: A_1 is perfectly nested in A_0. With every map sequential, rule 8 is the only
    // violation; --no-fusion drops rule 8 and accepts it, and the space grows by exactly that
    // one mapping (any other mapping with A_0=A_1=S is invalid without rule 8 too: nothing
    // parallel may sit under a sequential map, and mapLcl needs a mapWrg around it).
    let all_seq = "A_0=S,A_1=S,B=S,C=S";
    let v = violations(CONV, all_seq, &[]);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].family, "8 (sequential map fusion)");
    assert_eq!(v[0].maps, ["A_0", "A_1"]);
    assert!(v[0].text.contains("A_1=F"), "{}", v[0].text);
    let ok = explain(CONV, all_seq, &["--no-fusion"]).exits(0);
    assert_eq!(ok.stdout.lines().next(), Some("valid"));

    let with = mapsat(&["space", CONV, "--json"]).exits(0).json();
    let without = mapsat(&["space", CONV, "--json", "--no-fusion"]).exits(0).json();
    assert_eq!(with["count_exact"], true);
    assert_eq!(without["count_exact"], true);
    assert_eq!(without["count"].as_u64().expect("count"), with["count"].as_u64().expect("count") + 1);
    assert_eq!(with["families"]["sequential map fusion"], 1);
    assert!(without["families"].get("sequential map fusion").is_none(), "{}", without["families"]);
}

#[test]
fn malformed_mappings_are_usage_errors() {
    let usage = |mapping: &str| {
        let run = explain(LISTING1, mapping, &[]).exits(2);
        assert!(run.stdout.is_empty(), "{}", run.stdout);
        run.stderr
    };
    let unknown = usage("A=W0,B=L0,C=S,D=L0,E=S,Q=S");
    assert!(unknown.contains("unknown map `Q`"), "{unknown}");
    assert!(unknown.contains("A, B, C, D, E"), "the known maps are listed: {unknown}");
    // Labels are case-sensitive.
    assert!(usage("a=W0,B=L0,C=S,D=L0,E=S").contains("unknown map `a`"));

    let missing = usage("A=W0,B=L0,C=S,D=L0");
    assert!(missing.contains("does not give a code for: E"), "{missing}");
    let none = usage("");
    assert!(none.contains("does not give a code for: A, B, C, D, E"), "{none}");

    let bad = usage("A=Q7,B=L0,C=S,D=L0,E=S");
    assert!(bad.contains("`Q7` (for map `A`) is not a code"), "{bad}");
    assert!(bad.contains("S, F, V, L0-L2, W0-W2 or G0-G2"), "the codes are listed: {bad}");
    // Dimensions stop at 2.
    assert!(usage("A=W3,B=L0,C=S,D=L0,E=S").contains("`W3` (for map `A`) is not a code"));

    let twice = usage("A=W0,A=L0,B=L0,C=S,D=L0,E=S");
    assert!(twice.contains("map `A` is given twice"), "{twice}");

    let syntax = usage("A=W0,B,C=S,D=L0,E=S");
    assert!(syntax.contains("`B` is not of the form LABEL=CODE"), "{syntax}");

    // A layout map (a view) has no loop to map.
    let layout = explain(CONV, "A_0=W0,A_1=L0,B=S,C=S,m1=S", &[]).exits(2);
    assert!(layout.stderr.contains("map `m1` only rearranges data"), "{}", layout.stderr);

    // No --mapping at all: clap's usage error.
    assert_eq!(mapsat(&["explain", LISTING1]).code, Some(2));
}

#[test]
fn rejected_programs_exit_1() {
    let missing = mapsat(&["space", "no/such/file.lift"]).exits(1);
    assert!(missing.stderr.contains("cannot read no/such/file.lift"), "{}", missing.stderr);
    // A type error is rendered with its location, as by `mapsat check`.
    let ill = mapsat(&["space", "tests/filetests/errors/zip_lengths.lift"]).exits(1);
    assert!(ill.stderr.contains("tests/filetests/errors/zip_lengths.lift:9:56"), "{}", ill.stderr);
    let ill = explain("tests/filetests/errors/zip_lengths.lift", "A=S", &[]).exits(1);
    assert!(ill.stderr.contains("zip of arrays of different lengths"), "{}", ill.stderr);
    // `sum` is a reduction without a map: there is nothing to map.
    let none = mapsat(&["space", "examples/sum.lift"]).exits(1);
    assert!(none.stderr.contains("no map that computes anything"), "{}", none.stderr);
}

#[test]
fn listing1_space_json() {
    let out = mapsat(&["space", LISTING1, "--json"]).exits(0).json();
    assert_eq!(strings(&out["maps"]), ["A", "B", "C", "D", "E"]);
    assert_eq!(strings(&out["layout_maps"]), Vec::<String>::new());
    assert_eq!(out["count_exact"], true);
    assert_eq!(out["count"].as_u64(), Some(LISTING1_COUNT));

    // Constraint instances per family, from the map nest: chains A-B-C and A-D-E, so 6 nested
    // pairs (A-B, A-C, B-C, A-D, A-E, D-E); C is perfectly nested in B and E in D; B, C, D, E
    // access the local buffer; only C maps over consecutive scalars; one buffer needs a barrier,
    // inside the loop of A.
    let mut expected: Vec<(&str, u64)> = vec![
        // A (outermost), B and D cannot be fused.
        ("domain", 3),
        // B, C, D, E, each in one chain.
        ("local memory scoping", 4),
        // Each nested pair, and one glb-versus-wrg/lcl rule per chain.
        ("duplicate scheduling", 6 + 2),
        // One per chain each.
        ("local thread indexing dimensionality (local => work group)", 2),
        ("local thread indexing dimensionality (work group => local)", 2),
        // Each nested pair.
        ("local indexing hierarchy", 6),
        // One pair of chains, 3 domains (local, work group, global).
        ("exhaustive thread indexing", 3),
        // C in B, E in D.
        ("sequential map fusion", 2),
        // A, B, D map over arrays (not scalars); E reads the transposed buffer with a stride.
        ("vectorization", 4),
        // The B -> D buffer: no reads across work groups; the barrier inside A's loop.
        ("synchronizability", 2),
        // Two per local size ls0..ls2 (tuning parameters, as the barrier is inside a loop).
        ("device limits", 6),
        // Once for the program; B, C, D, E (nested); C, E (two outer maps).
        ("single launch shape", 1 + 4 + 2),
    ];
    expected.sort();
    let families = out["families"].as_object().expect("families");
    let mut got: Vec<(&str, u64)> = families.iter().map(|(k, v)| (k.as_str(), v.as_u64().expect("a count"))).collect();
    got.sort();
    assert_eq!(got, expected);

    // Every sample is valid, distinct, and a full mapping in the order of "maps".
    let samples = strings(&out["samples"]);
    assert_eq!(samples.len(), 5, "5 samples by default");
    assert_eq!(samples.iter().collect::<HashSet<_>>().len(), samples.len(), "{samples:?}");
    for m in &samples {
        assert_eq!(labels_of(m), ["A", "B", "C", "D", "E"], "{m}");
        let run = explain(LISTING1, m, &[]).exits(0);
        assert_eq!(run.stdout.lines().next(), Some("valid"));
    }
}

#[test]
fn sampling_more_than_the_space_gives_the_whole_space() {
    // Asking for more samples than there are valid mappings returns each of them once: as many as
    // the exact count, all accepted by `explain`.
    let out = mapsat(&["space", LISTING1, "--json", "--sample", "100", "--seed", "3"]).exits(0).json();
    let samples = strings(&out["samples"]);
    assert_eq!(samples.len() as u64, LISTING1_COUNT, "{samples:?}");
    assert_eq!(samples.iter().collect::<HashSet<_>>().len(), samples.len());
    assert!(samples.contains(&M4.to_string()) && samples.contains(&M6.to_string()), "{samples:?}");
    for bad in [M1, M2, M3, M5] {
        assert!(!samples.contains(&bad.to_string()), "{bad}");
    }
    let accepted = samples.iter().filter(|m| explain(LISTING1, m, &[]).code == Some(0)).count();
    assert_eq!(accepted, samples.len());
}

#[test]
fn seeded_samples() {
    // Conv has 49 valid mappings: 10 samples, reproducible for a seed, different for another.
    let a = space_text(&[CONV, "--sample", "10", "--seed", "1"]);
    assert_eq!(a.maps, ["A_0", "A_1", "B", "C"]);
    assert_eq!(a.count, "49");
    assert_eq!(a.samples.len(), 10, "{:?}", a.samples);
    let set: HashSet<&String> = a.samples.iter().collect();
    assert_eq!(set.len(), 10, "distinct: {:?}", a.samples);
    for m in &a.samples {
        assert_eq!(labels_of(m), a.maps, "{m}");
    }
    // Spread over the space: not all samples share the outer map's code.
    let first = |m: &String| m.split(',').next().map(str::to_string);
    assert!(a.samples.iter().any(|m| first(m) != first(&a.samples[0])), "{:?}", a.samples);

    let again = space_text(&[CONV, "--sample", "10", "--seed", "1"]);
    assert_eq!(again.samples, a.samples, "same seed, same samples");
    let b = space_text(&[CONV, "--sample", "10", "--seed", "2"]);
    assert_eq!(b.samples.len(), 10);
    assert_ne!(b.samples.iter().collect::<HashSet<_>>(), set, "another seed, another set");

    for m in a.samples.iter().chain(&b.samples) {
        explain(CONV, m, &[]).exits(0);
    }

    // 5 samples by default, and the text output names the maps.
    let default = space_text(&[LISTING1]);
    assert_eq!(default.maps, ["A", "B", "C", "D", "E"]);
    assert_eq!(default.count, LISTING1_COUNT.to_string());
    assert_eq!(default.samples.len(), 5);
}

#[test]
fn device_profiles() {
    // An unknown profile is bad usage, for both commands, and the message lists the built-ins.
    for args in [
        vec!["space", LISTING1, "--target", "nosuch"],
        vec!["explain", LISTING1, "--mapping", M4, "--target", "nosuch"],
    ] {
        let run = mapsat(&args).exits(2);
        assert!(run.stderr.contains("unknown device profile `nosuch`"), "{}", run.stderr);
        for builtin in ["pocl-cpu", "h100", "mali-g72-mp12"] {
            assert!(run.stderr.contains(builtin), "{builtin} not listed: {}", run.stderr);
        }
    }

    // pocl-cpu: the text output names the target; the profile adds device-limit constraints:
    // the work-group size, one local-size divisibility rule per map (5), and the local memory
    // budget, on top of the 6 on the local sizes. Listing 1 fits easily: same count.
    let text = mapsat(&["space", LISTING1, "--target", "pocl-cpu"]).exits(0);
    assert!(text.stdout.lines().any(|l| l.starts_with("target: pocl-cpu (")), "{}", text.stdout);
    let pocl = mapsat(&["space", LISTING1, "--target", "pocl-cpu", "--json"]).exits(0).json();
    assert_eq!(pocl["families"]["device limits"], 6 + 1 + 5 + 1);
    assert_eq!(pocl["count"].as_u64(), Some(LISTING1_COUNT));
    // The same profile given as a file.
    let file = mapsat(&["space", LISTING1, "--target", "ir/profiles/pocl-cpu.toml", "--json"]).exits(0).json();
    assert_eq!(file, pocl);

    let m4 = explain(LISTING1, M4, &["--target", "pocl-cpu"]).exits(0);
    assert_eq!(m4.stdout.lines().next(), Some("valid"));
    let m5 = violations(LISTING1, M5, &["--target", "pocl-cpu"]);
    assert_eq!(families(&m5), HashSet::from(["9 (vectorization)"]));
}

#[test]
fn random_baseline() {
    // Blur: 2 maps, so 12^2 = 144 assignments, of which `count` are valid. 2000 uniform draws
    // find about 2000 * count / 144 valid ones (a fixed seed; the band is 5 standard deviations).
    let n = 2000;
    let blur = space_text(&["examples/blur2d.lift", "--random-baseline", &n.to_string(), "--seed", "5"]);
    let count: f64 = blur.count.parse().expect("an exact count");
    let (valid, draws, fraction) = blur.baseline.expect("a random baseline line");
    assert_eq!(draws, n);
    assert!(valid <= n);
    assert!((fraction - valid as f64 / n as f64).abs() < 1e-3, "{fraction} vs {valid}/{n}");
    let p = count / 144.0;
    let (mean, sd) = (n as f64 * p, (n as f64 * p * (1.0 - p)).sqrt());
    assert!((valid as f64 - mean).abs() < 5.0 * sd, "{valid} valid of {n}, expected about {mean:.0}");

    // JSON: the draws and the valid ones. Listing 1's space is sparse (36 of 12^5 = 248832).
    let out = mapsat(&["space", LISTING1, "--json", "--random-baseline", "500"]).exits(0).json();
    assert_eq!(out["random_baseline"]["draws"], 500);
    let valid = out["random_baseline"]["valid"].as_u64().expect("valid");
    assert!(valid <= 10, "{valid} of 500 at a density of 1.4e-4");
    // Without the flag, no baseline.
    assert!(mapsat(&["space", LISTING1, "--json"]).exits(0).json().get("random_baseline").is_none());
}
