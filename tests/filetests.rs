//! The file tests: every `tests/filetests/<suite>/*.lift` is a program whose leading comment
//! lines say what to run on it and what to expect (cranelift's filetests, egglog's file tests).
//! The syntax, the suites and how to re-bless are described in `docs/testing.md`; in short:
//!
//! ```text
//! // Prose: what this file is about.
//! // test: explain --mapping A=W0,B=L0,C=S,D=L0,E=V
//! // exit: 1
//! // error: invalid: 1 violated constraint(s)
//! // error: [9 (vectorization)] maps E:
//! // test: emit
//! // test: run --size N=1024 --local 32
//! size N = 64
//! def f(...) = ...
//! ```
//!
//! Each `// test: KIND ARGS` line is one test, named `SUITE::FILE::KIND` (with `:LINE` when a
//! file has several of a kind); the `exit:`, `error:`, `at:`, `expect:` and `not:` lines after it
//! are its expectations. `check`, `eval`, `space` and `explain` run the `mapsat` binary as
//! `mapsat KIND FILE ARGS`; `emit` calls `mapsat_codegen::emit` and compares with the blessed
//! kernels in `tests/out/{opencl,cuda}/FILE.{cl,cu}` (`MAPSAT_BLESS=1` rewrites them); `run`
//! calls `mapsat_tuner::measure::run` on the first OpenCL device and compares with the
//! interpreter (skipped with a message without a device, unless `MAPSAT_REQUIRE_OPENCL` is
//! set).

use libtest_mimic::{Arguments, Failed, Trial};
use mapsat_codegen::Dialect;
use mapsat_constraints::{readback, Options, Space};
use mapsat_ir::Sizes;
use mapsat_tuner::measure::{self, DeviceSpec, RunConfig};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The repository root: paths in the tests and in the CLI's messages are relative to it.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Where the suites live.
const SUITES: &str = "tests/filetests";
/// Where the blessed kernels live: `tests/out/<backend>/<file>.<ext>`.
const OUT: &str = "tests/out";
/// The backends `emit` writes for, by default both.
const DIALECTS: [Dialect; 2] = [Dialect::OpenCl, Dialect::Cuda];

/// What a `// test:` line runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `mapsat check FILE ARGS`.
    Check,
    /// `mapsat eval FILE ARGS`.
    Eval,
    /// `mapsat space FILE ARGS`.
    Space,
    /// `mapsat explain FILE ARGS`.
    Explain,
    /// The OpenCL and CUDA kernels, against `tests/out/`.
    Emit,
    /// The OpenCL kernel on a device, against the interpreter.
    Run,
}

impl Kind {
    const ALL: [Kind; 6] = [Kind::Check, Kind::Eval, Kind::Space, Kind::Explain, Kind::Emit, Kind::Run];

    fn name(self) -> &'static str {
        match self {
            Kind::Check => "check",
            Kind::Eval => "eval",
            Kind::Space => "space",
            Kind::Explain => "explain",
            Kind::Emit => "emit",
            Kind::Run => "run",
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// One `// test:` line and the expectations that follow it.
#[derive(Clone, Debug)]
struct Test {
    kind: Kind,
    args: Vec<String>,
    /// The line of `// test:` (1-based), for messages.
    line: usize,
    /// `exit: N`: the exit code (default 1 with an `error:` or `at:`, else 0).
    exit: Option<i32>,
    /// `error: TEXT`: found in stderr (or the library's error), in this order.
    errors: Vec<String>,
    /// `at: LINE:COL`: the message points there (`FILE:LINE:COL` and a caret).
    at: Option<String>,
    /// `expect: TEXT`: found in stdout, in this order.
    expects: Vec<String>,
    /// `not: TEXT`: found neither in stdout nor in stderr.
    nots: Vec<String>,
}

/// A file of a suite.
#[derive(Clone, Debug)]
struct File {
    suite: String,
    /// The file name without `.lift`: the name of the test and of its blessed kernels.
    stem: String,
    /// The path from the repository root, as the CLI is given it.
    rel: String,
    text: String,
    tests: Vec<Test>,
}

const KEYS: [&str; 6] = ["test", "exit", "error", "at", "expect", "not"];

/// Reads the header: the leading `//` lines. A line `// KEY: VALUE` with a key of [`KEYS`] is a
/// directive (one space after the colon is dropped, the rest kept as written); other comment
/// lines are prose, except a `KEY:` close to a directive's name (or the retired `run:`), which is
/// refused as a likely typo.
fn parse_header(text: &str) -> Result<Vec<Test>, String> {
    let mut tests: Vec<Test> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(comment) = line.strip_prefix("//") else { break };
        let comment = comment.strip_prefix(' ').unwrap_or(comment);
        let Some((key, value)) = comment.split_once(':') else { continue };
        if !KEYS.contains(&key) {
            let word = key.len() > 2 && key.chars().all(|c| c.is_ascii_lowercase());
            if key == "run" || (word && KEYS.iter().any(|k| edit_distance(k, key) <= 2)) {
                return Err(format!("line {}: unknown directive `{key}:` (known: {})", i + 1, KEYS.join(", ")));
            }
            continue;
        }
        let value = value.strip_prefix(' ').unwrap_or(value).trim_end().to_string();
        if key == "test" {
            let mut words = split_args(&value).map_err(|e| format!("line {}: {e}", i + 1))?.into_iter();
            let kind = words.next().ok_or_else(|| format!("line {}: `test:` without a kind", i + 1))?;
            let kind = Kind::parse(&kind).ok_or_else(|| {
                let known: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
                format!("line {}: unknown test kind `{kind}` (known: {})", i + 1, known.join(", "))
            })?;
            tests.push(Test {
                kind,
                args: words.collect(),
                line: i + 1,
                exit: None,
                errors: Vec::new(),
                at: None,
                expects: Vec::new(),
                nots: Vec::new(),
            });
            continue;
        }
        let Some(t) = tests.last_mut() else {
            return Err(format!("line {}: `{key}:` before any `test:` line", i + 1));
        };
        match key {
            "exit" => t.exit = Some(value.parse().map_err(|_| format!("line {}: bad exit code `{value}`", i + 1))?),
            "error" => t.errors.push(value),
            "at" => t.at = Some(value),
            "expect" => t.expects.push(value),
            "not" => t.nots.push(value),
            _ => unreachable!("a key of KEYS"),
        }
    }
    if tests.is_empty() {
        return Err("no `// test:` line at the top of the file".to_string());
    }
    Ok(tests)
}

/// Levenshtein distance, to catch misspelt directives.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != cb)).min(row[j] + 1).min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Splits a command line at spaces; double quotes keep spaces in an argument.
fn split_args(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    let mut quoted = false;
    for c in s.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                cur.get_or_insert_with(String::new);
            }
            c if c.is_whitespace() && !quoted => out.extend(cur.take()),
            c => cur.get_or_insert_with(String::new).push(c),
        }
    }
    if quoted {
        return Err(format!("unbalanced `\"` in `{s}`"));
    }
    out.extend(cur);
    Ok(out)
}

/// Every `.lift` file of every suite, sorted; a file whose header does not parse is kept as an
/// error, reported by its test.
fn files() -> Vec<Result<File, (String, String)>> {
    let mut out = Vec::new();
    let mut suites: Vec<PathBuf> = std::fs::read_dir(root().join(SUITES))
        .expect(SUITES)
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    suites.sort();
    for dir in suites {
        let suite = dir.file_name().and_then(|s| s.to_str()).expect("a UTF-8 suite name").to_string();
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("a suite")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "lift"))
            .collect();
        paths.sort();
        for path in paths {
            let stem = path.file_stem().and_then(|s| s.to_str()).expect("a UTF-8 file name").to_string();
            let rel = format!("{SUITES}/{suite}/{stem}.lift");
            let text = std::fs::read_to_string(&path).expect("a readable file");
            out.push(match parse_header(&text) {
                Ok(tests) => Ok(File { suite: suite.clone(), stem, rel, text, tests }),
                Err(e) => Err((format!("{suite}::{stem}"), format!("{rel}: {e}"))),
            });
        }
    }
    out
}

/// Is `needle`, then each next one, found in `hay` after the previous one? The first one not
/// found, otherwise.
fn find_in_order<'a>(hay: &str, needles: &'a [String]) -> Option<&'a str> {
    let mut from = 0;
    for n in needles {
        match hay[from..].find(n.as_str()) {
            Some(i) => from += i + n.len(),
            None => return Some(n),
        }
    }
    None
}

/// `check`, `eval`, `space`, `explain`: the binary, its exit code and its output.
fn run_cli(file: &File, t: &Test) -> Result<(), String> {
    let mut args = vec![t.kind.name().to_string(), file.rel.clone()];
    args.extend(t.args.iter().cloned());
    let out = Command::new(env!("CARGO_BIN_EXE_mapsat"))
        .args(&args)
        .current_dir(root())
        .output()
        .map_err(|e| format!("cannot run mapsat: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let fails = !t.errors.is_empty() || t.at.is_some();
    let exit = t.exit.unwrap_or(if fails { 1 } else { 0 });
    let mut problems = Vec::new();
    if out.status.code() != Some(exit) {
        problems.push(format!("exit code {:?}, expected {exit}", out.status.code()));
    }
    if stderr.contains("panicked") {
        problems.push("panicked".to_string());
    }
    if out.status.success() && !stderr.is_empty() {
        problems.push("a successful command writes nothing to stderr".to_string());
    }
    if !out.status.success() && !stdout.is_empty() {
        problems.push("a failing command writes nothing to stdout".to_string());
    }
    if let Some(e) = find_in_order(&stderr, &t.errors) {
        problems.push(format!("stderr does not have `{e}` (after the `error:` lines before it)"));
    }
    if let Some(at) = &t.at {
        if !stderr.contains(&format!("{}:{at}", file.rel)) {
            problems.push(format!("no `{}:{at}` location", file.rel));
        }
        if !stderr.contains('^') {
            problems.push("no caret".to_string());
        }
    }
    if let Some(e) = find_in_order(&stdout, &t.expects) {
        problems.push(format!("stdout does not have `{e}` (after the `expect:` lines before it)"));
    }
    for n in &t.nots {
        if stdout.contains(n.as_str()) || stderr.contains(n.as_str()) {
            problems.push(format!("the output has `{n}`"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}\n--- mapsat {}\n--- stdout:\n{stdout}--- stderr:\n{stderr}",
            problems.join("\n"),
            args.join(" ")
        ))
    }
}

/// The flags `emit` and `run` take, as the CLI spells them: `--size N=64[,M=8]` (repeatable),
/// `--local 64,4,1`, and for `emit` `--target opencl|cuda` (repeatable; both by default).
struct Flags {
    sizes: Sizes,
    local: Option<Vec<i64>>,
    targets: Vec<Dialect>,
}

fn flags(t: &Test) -> Result<Flags, String> {
    let mut f = Flags { sizes: Sizes::new(), local: None, targets: Vec::new() };
    let mut args = t.args.iter();
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("`{flag}` needs a value"))?;
        match flag.as_str() {
            "--size" => {
                for kv in value.split(',') {
                    let (k, v) = kv.split_once('=').ok_or_else(|| format!("`{kv}` is not NAME=VALUE"))?;
                    f.sizes.insert(k.trim(), v.trim().parse().map_err(|_| format!("bad size value in `{kv}`"))?);
                }
            }
            "--local" => {
                let v: Result<Vec<i64>, _> = value.split(',').map(|x| x.trim().parse()).collect();
                f.local = Some(v.map_err(|_| format!("bad local size `{value}`"))?);
            }
            "--target" if t.kind == Kind::Emit => {
                f.targets.push(Dialect::parse(value).ok_or_else(|| format!("unknown target `{value}`"))?)
            }
            _ => return Err(format!("unknown flag `{flag}` for `{}`", t.kind.name())),
        }
    }
    if f.targets.is_empty() {
        f.targets = DIALECTS.to_vec();
    }
    Ok(f)
}

fn bless() -> bool {
    std::env::var("MAPSAT_BLESS").is_ok_and(|v| v == "1")
}

/// One truth for validity: a hand-mapped program that code generation lowers has a mapping
/// (read back from its map kinds) that the space of the program it maps accepts, but for the
/// space's preferences (`Family::is_preference`: rules against idle or repeated threads).
fn space_accepts(p: &mapsat_ir::Program, sizes: &mapsat_ir::Sizes) -> Result<(), String> {
    let options = Options { sizes: sizes.clone(), ..Options::default() };
    let space = Space::generate(&readback::unmapped(p), options).map_err(|e| format!("space: {e}"))?;
    let m = space.written_mapping(p).map_err(|e| format!("read back: {e}"))?;
    let e = space.explain(&m).map_err(|e| format!("explain: {e}"))?;
    let refused: Vec<String> =
        e.violated.iter().filter(|c| !c.family.is_preference()).map(|c| format!("[{}] {}", c.family, c.text)).collect();
    match refused.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "code generation lowers {}, which the space refuses:\n  {}",
            space.show(&m),
            refused.join("\n  ")
        )),
    }
}

/// The blessed kernel of a file for a backend.
fn blessed_path(stem: &str, d: Dialect) -> PathBuf {
    root().join(OUT).join(d.name()).join(format!("{stem}.{}", d.extension()))
}

/// `emit`: the kernel and its manifest for each backend, emitted twice (deterministic), and
/// compared with (or, with `MAPSAT_BLESS=1`, written to) `tests/out/<backend>/`. With `error:`
/// lines, code generation must refuse the program with those messages instead.
fn run_emit(file: &File, t: &Test) -> Result<(), String> {
    let f = flags(t)?;
    let p = mapsat_ir::parse(&file.text).map_err(|e| format!("parse: {e:?}"))?;
    let opts = mapsat_codegen::Options { sizes: f.sizes, local: f.local, ..Default::default() };
    let mut stale = Vec::new();
    for d in f.targets {
        let emitted = mapsat_codegen::emit(&p, &opts, d);
        if !t.errors.is_empty() {
            let e = match emitted {
                Ok((src, _)) => return Err(format!("{}: accepted, expected an error:\n{src}", d.name())),
                Err(e) => e.to_string(),
            };
            if let Some(missing) = find_in_order(&e, &t.errors) {
                return Err(format!("{}: the error does not have `{missing}`: {e}", d.name()));
            }
            continue;
        }
        let (src, m) = emitted.map_err(|e| format!("{}: {e}", d.name()))?;
        let again = mapsat_codegen::emit(&p, &opts, d).map_err(|e| format!("{}: {e}", d.name()))?;
        if again.0 != src || again.1 != m {
            return Err(format!("{}: two emissions differ", d.name()));
        }
        let text = format!("{src}\n// manifest:\n// {}\n", m.to_json().replace('\n', "\n// "));
        let path = blessed_path(&file.stem, d);
        let old = std::fs::read_to_string(&path).ok();
        if old.as_deref() == Some(text.as_str()) {
            continue;
        }
        if bless() {
            std::fs::write(&path, &text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            eprintln!("blessed {}", path.display());
            continue;
        }
        let rel = path.strip_prefix(root()).unwrap_or(&path).display().to_string();
        stale.push(match old {
            None => format!("{rel} is missing"),
            Some(old) => {
                let (n, (was, now)) = old
                    .lines()
                    .chain(std::iter::repeat(""))
                    .zip(text.lines().chain(std::iter::repeat("")))
                    .enumerate()
                    .find(|(_, (a, b))| a != b)
                    .unwrap_or((0, ("", "")));
                format!("{rel} is stale, first at line {}:\n  blessed: {was}\n  now:     {now}", n + 1)
            }
        });
    }
    if t.errors.is_empty() {
        space_accepts(&p, &opts.sizes)?;
    }
    if stale.is_empty() {
        Ok(())
    } else {
        Err(format!("{}\n(re-bless with MAPSAT_BLESS=1 and review the diff)", stale.join("\n")))
    }
}

/// Is there an OpenCL device `opencl:0:0` (pocl in CI)? Without one the runs are skipped with a
/// message, unless `MAPSAT_REQUIRE_OPENCL` is set (CI sets it), which makes it a failure; as
/// `tuner/tests/common/mod.rs` does for the tuner's tests.
fn opencl_present() -> Result<bool, String> {
    static DEVICES: OnceLock<Vec<String>> = OnceLock::new();
    let devices = DEVICES.get_or_init(measure::list_devices);
    if devices.iter().any(|d| d.starts_with("opencl:0:0")) {
        return Ok(true);
    }
    if std::env::var("MAPSAT_REQUIRE_OPENCL").is_ok() {
        return Err(format!("no OpenCL device, and MAPSAT_REQUIRE_OPENCL is set: {devices:?}"));
    }
    eprintln!("device run skipped: no OpenCL device ({devices:?})");
    Ok(false)
}

/// `run`: the program at the given sizes on `opencl:0:0`, on random inputs (seed 42 + the
/// line's position among the file's `run` lines), checked against the interpreter.
fn run_device(file: &File, t: &Test, position: u64) -> Result<(), String> {
    if !t.errors.is_empty() || !t.expects.is_empty() || t.exit.is_some() {
        return Err("`run` takes no expectations: it compares with the interpreter".to_string());
    }
    let f = flags(t)?;
    let p = mapsat_ir::parse(&file.text).map_err(|e| format!("parse: {e:?}"))?;
    if !opencl_present()? {
        return Ok(());
    }
    let sizes = p.resolve_sizes(&f.sizes).map_err(|e| e.to_string())?;
    let inputs = mapsat_ir::interp::random_inputs(&p, &sizes, 42 + position).map_err(|e| e.to_string())?;
    let cfg = RunConfig { warmup: 0, runs: 1, ..RunConfig::default() };
    let r = measure::run(&p, &sizes, f.local.clone(), &inputs, DeviceSpec::OpenCl(0, 0), &cfg)
        .map_err(|e| format!("{sizes:?} local={:?}: {e}", f.local))?;
    let c = r.check.ok_or("the run was not checked")?;
    if !c.ok {
        return Err(format!(
            "{sizes:?} local={:?}: {} mismatches, first {:?}, max abs diff {}",
            f.local, c.mismatches, c.first_mismatch, c.max_abs_diff
        ));
    }
    Ok(())
}

fn run_test(file: &File, t: &Test, position: u64) -> Result<(), Failed> {
    let r = match t.kind {
        Kind::Check | Kind::Eval | Kind::Space | Kind::Explain => run_cli(file, t),
        Kind::Emit => run_emit(file, t),
        Kind::Run => run_device(file, t, position),
    };
    r.map_err(|e| Failed::from(format!("{}:{}: {}\n{e}", file.rel, t.line, t.kind.name())))
}

/// Checks across files: names of blessed kernels are unique, every blessed kernel belongs to an
/// `emit` test (with `MAPSAT_BLESS=1`, others are removed), and the suites are not empty.
fn check_suites(files: &[File]) -> Result<(), Failed> {
    let mut problems = String::new();
    let mut emitted = std::collections::BTreeMap::<PathBuf, &str>::new();
    for f in files {
        let emits: Vec<&Test> = f.tests.iter().filter(|t| t.kind == Kind::Emit).collect();
        if emits.len() > 1 {
            let _ = writeln!(problems, "{}: more than one `emit` line (they would share a blessed file)", f.rel);
        }
        for t in emits {
            for d in flags(t).map(|f| f.targets).unwrap_or_default() {
                if let Some(other) = emitted.insert(blessed_path(&f.stem, d), &f.rel) {
                    let _ = writeln!(problems, "{} and {other} both emit {}.{}", f.rel, f.stem, d.extension());
                }
            }
        }
    }
    for d in DIALECTS {
        let dir = root().join(OUT).join(d.name());
        for path in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?.flatten().map(|e| e.path())
        {
            if emitted.contains_key(&path) {
                continue;
            }
            let rel = path.strip_prefix(root()).unwrap_or(&path).display().to_string();
            if bless() {
                std::fs::remove_file(&path).map_err(|e| format!("cannot remove {rel}: {e}"))?;
                eprintln!("removed {rel}");
            } else {
                let _ = writeln!(problems, "{rel} belongs to no `emit` test (MAPSAT_BLESS=1 removes it)");
            }
        }
    }
    // Guards against a suite that silently stopped being read.
    let count = |suite: &str, kind: Kind| {
        files.iter().filter(|f| f.suite == suite).flat_map(|f| &f.tests).filter(|t| t.kind == kind).count()
    };
    for (suite, kind, at_least) in [
        ("errors", Kind::Check, 15),
        ("kernels", Kind::Emit, 10),
        ("kernels", Kind::Run, 10),
        ("space", Kind::Explain, 10),
    ] {
        let n = count(suite, kind);
        if n < at_least {
            let _ = writeln!(problems, "only {n} `{}` tests in {suite}/, expected at least {at_least}", kind.name());
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.into())
    }
}

fn main() {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    let mut good = Vec::new();
    for f in files() {
        match f {
            Ok(f) => good.push(f),
            Err((name, e)) => trials.push(Trial::test(format!("{name}::header"), move || Err(e.into()))),
        }
    }
    for f in &good {
        let mut runs = 0;
        for (i, t) in f.tests.iter().enumerate() {
            let same_kind = f.tests.iter().filter(|u| u.kind == t.kind).count();
            let mut name = format!("{}::{}::{}", f.suite, f.stem, t.kind.name());
            if same_kind > 1 {
                let _ = write!(name, ":{}", t.line);
            }
            let position = runs;
            runs += (t.kind == Kind::Run) as u64;
            let (file, i) = (f.clone(), i);
            trials.push(Trial::test(name, move || run_test(&file, &file.tests[i], position)));
        }
    }
    trials.push(Trial::test("harness", self_check));
    trials.push(Trial::test("suites", move || check_suites(&good)));
    libtest_mimic::run(&args, trials).exit();
}

/// The runner's own reading of headers and arguments.
fn self_check() -> Result<(), Failed> {
    let tests = parse_header(
        "// Prose, and a colon: here.\n// test: explain --mapping \" A = w0 , B=S\"\n// exit: 2\n// error: a\n\
         // error:   b\n//\n// test: space\n// expect: x\n// not: y\nsize N = 4\n// test: run\n",
    )?;
    assert_eq!(tests.len(), 2);
    assert_eq!((tests[0].kind, tests[0].line, tests[0].exit), (Kind::Explain, 2, Some(2)));
    assert_eq!(tests[0].args, ["--mapping", " A = w0 , B=S"]);
    assert_eq!(tests[0].errors, ["a", "  b"]);
    assert_eq!(
        (tests[1].kind, &tests[1].expects, &tests[1].nots),
        (Kind::Space, &vec!["x".to_string()], &vec!["y".to_string()])
    );
    assert!(parse_header("// exit: 1\n// test: check\n").is_err_and(|e| e.contains("before any `test:`")));
    assert!(parse_header("// test: frobnicate\n").is_err_and(|e| e.contains("unknown test kind")));
    assert!(parse_header("// tset: check\n").is_err_and(|e| e.contains("unknown directive")));
    assert!(parse_header("size N = 4\n// test: check\n").is_err_and(|e| e.contains("no `// test:` line")));
    assert!(parse_header("// run: N=4\n").is_err_and(|e| e.contains("unknown directive")));
    assert!(parse_header("// Note: prose.\n// mapping: prose too.\n// test: check\n").is_ok());
    assert!(split_args("a \"b").is_err());
    assert_eq!(find_in_order("one two three", &["one".into(), "three".into()]), None);
    assert_eq!(find_in_order("one two three", &["three".into(), "two".into()]), Some("two"));
    Ok(())
}
