//! Shared by the rewrite tests: programs compared with the interpreter.

#![allow(dead_code)]

use mapsat_ir::{interp, Program, Sizes};

/// Relative and absolute tolerance (reassociated float sums).
pub const TOL: f64 = 1e-4;

/// The examples of the repository, `(file name, program)`, in name order.
pub fn examples() -> Vec<(String, Program)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "lift"))
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            (f.file_name().unwrap().to_string_lossy().into_owned(), mapsat_ir::parse(&text).unwrap())
        })
        .collect()
}

/// Checks that `b` type-checks (symbolically and at `sizes`) and computes what `a` computes at `sizes`, on a few random inputs.
pub fn same_function(a: &Program, b: &Program, sizes: &Sizes) -> Result<(), String> {
    mapsat_ir::check::check(b).map_err(|e| format!("does not check symbolically: {e}\n{}", mapsat_ir::print(b)))?;
    let sizes = a.resolve_sizes(sizes).map_err(|e| e.to_string())?;
    // The variant's own new tile sizes at their defaults.
    let sizes = b.resolve_sizes(&sizes).map_err(|e| e.to_string())?;
    mapsat_ir::check::check_with_sizes(b, &sizes)
        .map_err(|e| format!("does not check: {e}\n{}", mapsat_ir::print(b)))?;
    for seed in 0..3 {
        let inputs = interp::random_inputs(a, &sizes, seed).map_err(|e| e.to_string())?;
        let want = interp::eval(a, &sizes, &inputs).map_err(|e| e.to_string())?;
        let got = interp::eval(b, &sizes, &inputs).map_err(|e| format!("eval: {e}\n{}", mapsat_ir::print(b)))?;
        if !got.allclose(&want, TOL, TOL) {
            return Err(format!("different results (seed {seed}) for\n{}", mapsat_ir::print(b)));
        }
    }
    Ok(())
}

/// Options that run only `rules`, for `iterations` iterations, and extract up to 64 variants.
pub fn only(rules: &[&str], iterations: usize) -> mapsat_rewrite::Options {
    mapsat_rewrite::Options {
        budget: mapsat_rewrite::Budget { iterations, ..mapsat_rewrite::Budget::default() },
        rules: Some(rules.iter().map(|r| r.to_string()).collect()),
        variants: 64,
        ..mapsat_rewrite::Options::default()
    }
}

/// `slide2d-tiling` alone for `iterations` iterations (split factors 2 and 4, 16 variants), and
/// the outcome, which holds no ill-typed term.
pub fn slide2d_alone(p: &Program, iterations: usize) -> mapsat_rewrite::Outcome {
    let opts = mapsat_rewrite::Options {
        split_factors: vec![2, 4],
        budget: mapsat_rewrite::Budget { iterations, ..mapsat_rewrite::Budget::default() },
        rules: Some(vec!["slide2d-tiling".to_string()]),
        variants: 16,
        ..mapsat_rewrite::Options::default()
    };
    let out = mapsat_rewrite::rewrite(p, &opts).unwrap();
    assert_eq!(out.rejected, 0, "ill-typed terms in the e-graph");
    out
}

/// `p`'s function in a canonical text up to renaming: no binder names or parameter annotations,
/// map labels renamed `L1`, `L2`, ... and size names `S1`, `S2`, ... in order of first
/// appearance in the printed definition, the function named `f`, white space removed. Two
/// programs with the same text are the same term up to renaming of labels and sizes.
pub fn up_to_renaming(p: &Program) -> String {
    let mut q = p.clone();
    q.name = "f".to_string();
    for n in &mut q.nodes {
        if let mapsat_ir::ast::Node::Lam(_, ann) = n {
            *ann = None;
        }
    }
    for m in &mut q.meta {
        *m = Default::default();
    }
    let text = mapsat_ir::print(&q);
    let def = &text[text.find("def ").expect("a definition")..];
    let sizes: std::collections::BTreeSet<&str> = p.sizes.iter().map(|s| s.name.as_str()).collect();
    let (mut labels, mut names) = (std::collections::BTreeMap::new(), std::collections::BTreeMap::new());
    let mut out = String::new();
    let mut chars = def.chars().filter(|c| !c.is_whitespace()).peekable();
    let mut after_at = false;
    while let Some(c) = chars.next() {
        if !(c.is_alphanumeric() || c == '_') {
            after_at = c == '@';
            out.push(c);
            continue;
        }
        let mut word = c.to_string();
        while let Some(&d) = chars.peek().filter(|d| d.is_alphanumeric() || **d == '_') {
            word.push(d);
            chars.next();
        }
        if after_at {
            let k = labels.len() + 1;
            out += labels.entry(word).or_insert_with(|| format!("L{k}"));
        } else if sizes.contains(word.as_str()) {
            let k = names.len() + 1;
            out += names.entry(word).or_insert_with(|| format!("S{k}"));
        } else {
            out += &word;
        }
        after_at = false;
    }
    out
}
