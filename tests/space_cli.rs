//! End-to-end tests of `mapsat space` and `mapsat explain` that are not file-shaped: sampling
//! (distinct, valid, reproducible), the random baseline's statistics, the JSON output against the
//! text output, and comparisons between two runs. The verdicts on the paper's mappings (Mogers et
//! al., CC'22: Listing 1 with M1–M6 of Table 1), the constraint instances per family, the counts
//! and the usage errors are the file tests of `tests/filetests/space/` (`tests/filetests.rs`).
//!
//! Exit codes: 0 success (a valid mapping), 1 the input was rejected (an invalid mapping, a
//! program without maps), 2 bad usage (a malformed mapping, an unknown device profile).

mod common;

use common::root;
use std::collections::HashSet;

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
    let out = common::mapsat(args);
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

/// The violations of a rejected mapping (exit 1), as `explain` prints them on stderr:
/// `invalid: N violated constraint(s)`, then N lines `  [9 (vectorization)] maps E: TEXT`.
fn violations(file: &str, mapping: &str, flags: &[&str]) -> Vec<String> {
    let run = explain(file, mapping, flags).exits(1);
    assert!(run.stdout.is_empty(), "a rejection prints to stderr only: {}", run.stdout);
    let mut lines = run.stderr.lines();
    let header = lines.next().expect("a header line");
    let n: usize = header
        .strip_prefix("invalid: ")
        .and_then(|h| h.strip_suffix(" violated constraint(s)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("bad header `{header}`"));
    let out: Vec<String> = lines
        .map(|l| {
            let (_family, rest) = l
                .strip_prefix("  [")
                .and_then(|l| l.split_once("] maps "))
                .unwrap_or_else(|| panic!("bad violation line `{l}`"));
            assert!(rest.split_once(": ").is_some(), "bad violation line `{l}`");
            l.to_string()
        })
        .collect();
    assert_eq!(out.len(), n, "{}", run.stderr);
    assert!(n > 0);
    out
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
fn default_samples_are_valid() {
    // Every sample is valid, distinct, and a full mapping in the order of "maps"; 5 by default.
    let out = mapsat(&["space", LISTING1, "--json"]).exits(0).json();
    assert_eq!(strings(&out["maps"]), ["A", "B", "C", "D", "E"]);
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

/// Sampling stops when the space is exhausted (100,000 asked of a space of 42: the whole
/// space, once each, without 2 million descents), and says so on stderr; all that is asked
/// is there without a note.
#[test]
fn sampling_stops_when_the_space_is_exhausted_and_says_so() {
    let run = mapsat(&["space", LISTING1, "--sample", "100000", "--seed", "5"]).exits(0);
    let samples: Vec<&str> = run.stdout.lines().skip_while(|l| *l != "samples:").skip(1).collect();
    assert_eq!(samples.len() as u64, LISTING1_COUNT, "{}", run.stdout);
    assert_eq!(samples.iter().collect::<HashSet<_>>().len(), samples.len());
    assert_eq!(
        run.stderr.trim(),
        "note: 42 distinct mappings sampled of the 100000 asked: the space has no more valid mappings"
    );
    let run = mapsat(&["space", LISTING1, "--sample", "42"]).exits(0);
    assert_eq!(run.stderr, "", "all that was asked");
    // The default of 5 samples is not a request: no note for a space smaller than 5 (dot: 2).
    let run = mapsat(&["space", "examples/dot.lift"]).exits(0);
    assert_eq!(run.stderr, "");
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
fn profile_file_is_the_builtin_profile() {
    // The pocl-cpu profile given as a file is the built-in one.
    let builtin = mapsat(&["space", LISTING1, "--target", "pocl-cpu", "--json"]).exits(0).json();
    let file = mapsat(&["space", LISTING1, "--target", "ir/profiles/pocl-cpu.toml", "--json"]).exits(0).json();
    assert_eq!(file, builtin);
}

#[test]
fn a_profile_with_work_item_limits_no_device_has_is_refused() {
    // Limits as large as an i64 holds (powers of two up to them once wrapped past 2^62, and a
    // tune enumerated millions of work-group sizes per candidate) are refused; 2^20 is read.
    let dir = std::env::temp_dir().join(format!("mapsat-space-huge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let profile = std::fs::read_to_string(root().join("ir/profiles/pocl-cpu.toml")).unwrap();
    for (limits, code) in [("[4611686018427387904, 9223372036854775807, 1]", 2), ("[1048576, 1048576, 1]", 0)] {
        let huge =
            profile.replace("max_work_item_sizes = [4096, 4096, 4096]", &format!("max_work_item_sizes = {limits}"));
        assert_ne!(huge, profile);
        let path = dir.join("huge.toml");
        std::fs::write(&path, huge).unwrap();
        let with = mapsat(&["space", LISTING1, "--target", path.to_str().unwrap(), "--json"]).exits(code);
        if code == 2 {
            assert!(with.stderr.contains("work-group sizes must be at most 1048576"), "{}", with.stderr);
        } else {
            let without = mapsat(&["space", LISTING1, "--target", "pocl-cpu", "--json"]).exits(0).json();
            assert_eq!(with.json()["maps"], without["maps"]);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn explain_under_a_profile_says_when_code_generation_refuses_a_valid_mapping() {
    // The space counts only `toLocal` buffers against local memory; code generation also keeps
    // what a work group's maps compute together there: conv's C=L0 under A_0=W0 needs 144 bytes
    // (36 f32 of a work group's results), more than a 16-byte profile has. `emit` refuses it,
    // and so does `explain` under that profile; without one it is valid.
    let dir = common::scratch("space", "tiny");
    let profile = std::fs::read_to_string(root().join("ir/profiles/pocl-cpu.toml")).unwrap();
    let tiny = profile.replace("local_mem_bytes = 524288", "local_mem_bytes = 16").replace("\"pocl-cpu\"", "\"tiny\"");
    let path = dir.join("tiny.toml");
    std::fs::write(&path, tiny).unwrap();
    let (m, target) = ("A_0=W0,A_1=S,B=S,C=L0", path.to_str().unwrap());
    explain("examples/conv.lift", m, &[]).exits(0);
    let refused = explain("examples/conv.lift", m, &["--target", target]).exits(1);
    assert!(
        refused.stderr.contains("code generation refuses this mapping at these sizes (profile `tiny`)")
            && refused.stderr.contains("144 bytes of local memory per work group; the target allows 16"),
        "{}",
        refused.stderr
    );
    let emitted =
        mapsat(&["emit", "examples/conv.lift", "--mapping", m, "--profile", target, "-o", dir.to_str().unwrap()]);
    assert!(emitted.exits(1).stderr.contains("144 bytes of local memory"));
    // A mapping that keeps nothing in local memory is valid under it.
    explain("examples/conv.lift", "A_0=G0,A_1=S,B=S,C=S", &["--target", target]).exits(0);
    // A profile's grid limit: the default work group fits it where a larger group does.
    let grid = std::fs::read_to_string(&path)
        .unwrap()
        .replace("local_mem_bytes = 16", "local_mem_bytes = 16\nmax_groups = [1, 1, 1]");
    std::fs::write(&path, grid).unwrap();
    // conv's 8 x 8 outputs fit in one group of 8 x 8 work items (the default work group takes
    // them); 8,193 rows of one value do not, in groups of at most 4,096.
    let m = "A_0=G0,A_1=G1,B=S,C=S";
    explain("examples/conv.lift", m, &["--target", target]).exits(0);
    let file = dir.join("rows.lift");
    std::fs::write(&file, "size N = 8193\ndef rows(x: [f32]N) = map@A(fun(v => v + 1.0), x)\n").unwrap();
    let rows = file.to_str().unwrap();
    // The space refuses it first (its device limits hold the grid too).
    let refused = explain(rows, "A=G0", &["--target", target]).exits(1);
    let why = "more than 1 work groups of 4096 work items, the most tiny launches in dimension 0";
    assert!(refused.stderr.contains(why), "{}", refused.stderr);
    let emitted = mapsat(&["emit", rows, "--mapping", "A=G0", "--profile", target, "-o", dir.to_str().unwrap()]);
    assert!(emitted.exits(1).stderr.contains(why));
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
    // Bounded: 2^64 - 1 draws ran until killed (a tester's finding).
    mapsat(&["space", LISTING1, "--random-baseline", "18446744073709551615"]).exits(2);
}

#[test]
fn rejections_list_every_violation() {
    // `invalid: N violated constraint(s)` on stderr, then exactly N violations, nothing on stdout.
    for mapping in [M1, M2, M3, M5, "A=V,B=V,C=V,D=V,E=V"] {
        violations(LISTING1, mapping, &[]);
    }
    violations(CONV, "A_0=S,A_1=S,B=S,C=S", &[]);
}

#[test]
fn loose_mappings_read_the_same() {
    // Codes are case-insensitive and spaces around the parts are allowed: the same output.
    let m4 = explain(LISTING1, M4, &[]).exits(0);
    let loose = explain(LISTING1, " A = w0 , B=l0, C=s,D=L0,E=S ", &[]).exits(0);
    assert_eq!(loose.stdout, m4.stdout);
}

#[test]
fn json_is_the_text_output() {
    // The JSON output says what the text output says: maps, layout maps, exact count, and the
    // constraint instances per family (the file tests check the text output's values).
    for (file, flags) in [(LISTING1, &[][..]), (LISTING1, &["--target", "pocl-cpu"][..]), (CONV, &["--no-fusion"][..])]
    {
        let mut args = vec![file];
        args.extend_from_slice(flags);
        let text = mapsat(&[&["space"][..], &args].concat()).exits(0).stdout;
        let json = mapsat(&[&["space"][..], &args, &["--json"]].concat()).exits(0).json();
        let maps = text.lines().find_map(|l| l.strip_prefix("maps: ")).expect("maps");
        assert_eq!(strings(&json["maps"]).join(" "), maps);
        let layout = text.lines().find_map(|l| l.strip_prefix("layout maps (views, not mapped): ")).unwrap_or("");
        assert_eq!(strings(&json["layout_maps"]).join(" "), layout);
        let count = text.lines().find_map(|l| l.strip_prefix("valid mappings: ")).expect("count");
        assert_eq!(json["count_exact"], true);
        assert_eq!(count.split_once(" (").map(|c| c.0), Some(json["count"].to_string().as_str()));
        // `    N  K (name)` per family.
        let families: serde_json::Map<String, serde_json::Value> = text
            .lines()
            .skip_while(|l| !l.starts_with("constraint instances"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .map(|l| {
                let (n, family) = l.trim().split_once("  ").expect("N  FAMILY");
                let name = family.split_once(" (").expect("K (name)").1.strip_suffix(')').expect("(name)");
                (name.to_string(), serde_json::json!(n.parse::<u64>().expect("a count")))
            })
            .collect();
        assert!(!families.is_empty());
        assert_eq!(json["families"], serde_json::Value::Object(families), "{file} {flags:?}");
    }
}

#[test]
fn missing_file_is_rejected() {
    let missing = mapsat(&["space", "no/such/file.lift"]).exits(1);
    assert!(missing.stderr.contains("cannot read no/such/file.lift"), "{}", missing.stderr);
}

#[test]
fn space_suite_programs_are_the_examples() {
    // tests/filetests/space/ checks the examples' spaces on copies of their programs.
    for name in ["listing1", "conv", "sum"] {
        let read = |path: String| {
            let text = std::fs::read_to_string(root().join(&path)).unwrap_or_else(|e| panic!("{path}: {e}"));
            mapsat_ir::parse(&text).unwrap_or_else(|e| panic!("{path}: {e:?}"))
        };
        let example = read(format!("examples/{name}.lift"));
        let copy = read(format!("tests/filetests/space/{name}.lift"));
        assert!(example == copy, "tests/filetests/space/{name}.lift is not examples/{name}.lift's program");
    }
}

/// The space at lengths of 2^40: local-size candidates are the divisors up to the device's
/// limit (trying every number up to the length once never ended).
#[test]
fn space_at_huge_lengths_ends() {
    let sizes = "n=1099511627776,s0=1099511627776,s1=1099511627776";
    let run = mapsat(&["space", "examples/listing3.lift", "--size", sizes]).exits(0);
    assert!(run.stdout.contains("valid mappings: 28 ("), "{}", run.stdout);
}

/// `--canonical` counts the mappings of the search with symmetry breaking, one per renaming
/// class: the same number as the count up to renaming by canonicalising (14 of Listing 1's 42),
/// and samples only canonical mappings (dimensions numbered in order of first use), each valid.
#[test]
fn canonical_counts_one_mapping_per_class() {
    let out = mapsat(&["space", LISTING1, "--json", "--canonical", "--sample", "100"]).exits(0).json();
    assert_eq!(out["count"], serde_json::json!(LISTING1_COUNT));
    assert_eq!(out["count_up_to_dimension_renaming"], serde_json::json!(14));
    assert_eq!(out["count_canonical"], serde_json::json!(14));
    assert_eq!(out["count_canonical_exact"], serde_json::json!(true));
    assert_eq!(out["dimensions_interchangeable"], serde_json::json!(true));
    let samples = strings(&out["samples"]);
    assert_eq!(samples.len(), 14, "{samples:?}");
    for m in &samples {
        // Listing 1's mappings use one dimension: canonical means dimension 0.
        assert!(!m.contains('1') && !m.contains('2'), "{m}");
        explain(LISTING1, m, &[]).exits(0);
    }
    let text = mapsat(&["space", LISTING1, "--canonical"]).exits(0).stdout;
    assert!(
        text.contains("canonical mappings (symmetry breaking in the search, one per renaming class): 14"),
        "{text}"
    );
    let cuda = mapsat(&["space", LISTING1, "--canonical", "--target", "h100"]).exits(0).stdout;
    assert!(cuda.contains("renaming is not a symmetry"), "{cuda}");
}

/// A composition of 1,999 maps (the parser takes chains of up to 2,000 terms): the space has
/// all of them, the outermost included (the analysis stopped at depth 2,000 and left it out
/// without a word, so that no mapping could run). Chains nested in lambdas beyond the
/// analysis's depth are refused with a message, not analysed in part.
#[test]
fn a_chain_of_1999_maps_has_all_its_maps_and_a_deeper_program_is_refused() {
    let dir = std::env::temp_dir().join(format!("mapsat-space-chain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let chain = |v: &str, f: &str, n: usize| vec![format!("map(fun({v} => {f}))"); n].join(" o ");
    let long = dir.join("chain.lift");
    let src = format!("size N = 8\ndef chain(x: [f32]N) = {} $ x\n", chain("a", "a + 1.0", 1999));
    std::fs::write(&long, src).unwrap();
    let all_s = (1..=1999).map(|k| format!("m{k}=S")).collect::<Vec<_>>().join(",");
    let run = explain(long.to_str().unwrap(), &all_s, &[]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let deep = dir.join("deep.lift");
    let src = format!(
        "size N = 4, M = 2, L = 2\ndef f(x: [[[f32]N]M]L) = {} $ map(fun(r => {} $ map(fun(q => {} $ q), r)), x)\n",
        chain("b", "b", 1990),
        chain("c", "c", 1990),
        chain("d", "d * 2.0", 1990)
    );
    std::fs::write(&deep, src).unwrap();
    let run = mapsat(&["space", deep.to_str().unwrap()]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("too deep to analyse"), "{}", run.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `explain` says what every valid mapping needs: a barrier after a map read only by a
/// reduction (it named an empty list of readers), and the local sizes, code generation's
/// default where the space has none to choose (the line was left out).
#[test]
fn explain_names_barriers_and_local_sizes_of_every_valid_mapping() {
    let dir = common::scratch("space", "explain-lines");
    let file = dir.join("h.lift");
    std::fs::write(
        &file,
        "size N = 97, B = 5\ndef h(xs: [f32]N, lo: [f32]B) : [f32]B =\n  map@A(fun(b => reduce(add, 0.0, map@B(fun(x => x * b), xs))), lo)\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let out = explain(f, "A=W0,B=L0", &[]).exits(0);
    assert!(out.stdout.contains("needs a barrier after map B: other work items read what it writes"), "{}", out.stdout);
    let gemv = dir.join("g.lift");
    let text = "size N = 9, K = 3\ndef g(w: [[f32]K]N, x: [f32]K) : [f32]N =\n  map@A(fun(r => reduce(fun(acc, p => acc + p.0 * p.1), 0.0, zip(r, x))), w)\n";
    std::fs::write(&gemv, text).unwrap();
    let out = explain(gemv.to_str().unwrap(), "A=G0", &[]).exits(0);
    assert!(out.stdout.contains("  local sizes: code generation's default"), "{}", out.stdout);
}

/// The local sizes `explain` proposes without a profile run on a device (`run --local` checks
/// them against the device's space): M4's loops B and D have 8 and 16 iterations, and 16
/// threads run each in one round; the space once asked a work group to divide every `mapLcl`
/// loop, and `run` refused 16 (a tester), until the space asked it only of loops with a barrier.
#[test]
fn proposed_local_sizes_run_on_a_device() {
    let run = explain(LISTING1, M4, &[]).exits(0);
    let proposed =
        run.stdout.lines().find_map(|l| l.strip_prefix("  local sizes (a valid choice): ")).expect("local sizes");
    assert_eq!(proposed, "[16, 1, 1]", "{}", run.stdout);
    if common::opencl() {
        let run = mapsat(&["run", LISTING1, "--mapping", M4, "--local", "16,1,1", "--check", "--runs", "1"]).exits(0);
        assert!(run.stdout.contains("check: ok"), "{}", run.stdout);
    }
}

/// A work group given by hand need not be one of the values the space searches (divisors of
/// the maps' lengths, powers of two): 7 threads for M4's loops of 8 and 16 run right; it was
/// refused "(its mapLcl loops must be divisible by it)" (a tester). One above the longest
/// loop is refused, naming the rule.
#[test]
fn a_work_group_given_by_hand_need_not_be_a_searched_value() {
    let dir = common::scratch("space", "local-by-hand");
    let d = dir.to_str().unwrap();
    mapsat(&["emit", LISTING1, "--mapping", M4, "--local", "7,1,1", "-o", d]).exits(0);
    let out = mapsat(&["emit", LISTING1, "--mapping", M4, "--local", "17,1,1", "-o", d]).exits(1);
    assert!(
        out.stderr.contains("local size ls0 is 1, or at most the length of the longest mapLcl(0) loop"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("the space proposes [16, 1, 1]"), "{}", out.stderr);
    if common::opencl() {
        let run = mapsat(&["run", LISTING1, "--mapping", M4, "--local", "7,1,1", "--check", "--runs", "1"]).exits(0);
        assert!(run.stdout.contains("check: ok"), "{}", run.stdout);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
