//! The constraint analysis and code generation classify maps alike (both through
//! `Prim::is_layout`): every map the analysis calls a layout map (`Space::layout_maps`, given no
//! mapping) is lowered as a view, and every map it calls concrete (a variable of the space) is
//! lowered as a loop. A disagreement would mean mappings the solver accepts that fail to lower,
//! or loops nobody mapped.
//!
//! Programs: `examples/*.lift`, each with mappings sampled by the solver (applied, then lowered
//! with the local size the solver chose), and `tests/filetests/kernels/*.lift`, which are
//! mapped already. `Kernel::maps` says how each map was lowered.

use mapsat_codegen::kir::MapLowering;
use mapsat_constraints::{Code, Error as SpaceError, Options, Space};
use std::path::Path;

fn programs(dir: &str) -> Vec<(String, mapsat_ir::Program)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("read dir").flatten().map(|e| e.path()).collect();
    files.sort();
    files
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "lift"))
        .map(|f| {
            let name = f.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
            let text = std::fs::read_to_string(&f).expect("read");
            let p = mapsat_ir::parse(&text).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            (name, p)
        })
        .collect()
}

/// Disagreements between `space` and how `kernel` lowered the maps; `fused` lists the labels a
/// mapping fused into their outer map (gone from the program).
fn disagreements(space: &Space, kernel: &mapsat_codegen::Kernel, fused: &[&str]) -> Vec<String> {
    let how =
        |label: &str| -> Vec<MapLowering> { kernel.maps.iter().filter(|(l, _)| l == label).map(|(_, h)| *h).collect() };
    let mut out = Vec::new();
    for label in space.layout_maps() {
        let h = how(label);
        if h.is_empty() || h.iter().any(|h| *h != MapLowering::View) {
            out.push(format!("layout map {label} lowered as {h:?}"));
        }
    }
    for label in space.labels() {
        let h = how(label);
        if fused.contains(&label.as_str()) {
            if !h.is_empty() {
                out.push(format!("fused map {label} lowered as {h:?}"));
            }
        } else if h.is_empty() || h.iter().any(|h| !matches!(h, MapLowering::Loop(_))) {
            out.push(format!("concrete map {label} lowered as {h:?}"));
        }
    }
    out
}

#[test]
fn examples_under_sampled_mappings() {
    let mut failures = Vec::new();
    let (mut checked, mut layout_maps) = (0, 0);
    for (name, p) in programs("examples") {
        let space = match Space::generate(&p, Options::default()) {
            Ok(s) => s,
            Err(SpaceError::NoMaps) => continue,
            Err(e) => panic!("{name}: {e}"),
        };
        for m in space.sample(6, 12).expect("sample") {
            let shown = space.show(&m).to_string();
            let q = space.apply(&p, &m).unwrap_or_else(|e| panic!("{name} {shown}: {e}"));
            let e = space.explain(&m).expect("explain");
            let local = if space.local_size_count() > 0 { e.local_sizes } else { None };
            let opts = mapsat_codegen::Options { local, ..Default::default() };
            let kernel = match mapsat_codegen::lower(&q, &opts) {
                Ok(k) => k,
                Err(e) => {
                    failures.push(format!("{name} {shown}: does not lower: {e}"));
                    continue;
                }
            };
            let fused: Vec<&str> = space
                .labels()
                .iter()
                .zip(&m.codes)
                .filter(|(_, c)| **c == Code::Fused)
                .map(|(l, _)| l.as_str())
                .collect();
            checked += 1;
            layout_maps += space.layout_maps().len();
            failures.extend(disagreements(&space, &kernel, &fused).into_iter().map(|d| format!("{name} {shown}: {d}")));
        }
    }
    assert!(checked > 0 && layout_maps > 0, "{checked} kernels, {layout_maps} layout maps");
    assert!(failures.is_empty(), "{} disagreements:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn mapped_file_tests() {
    let mut failures = Vec::new();
    let (mut checked, mut layout_maps) = (0, 0);
    for (name, p) in programs("tests/filetests/kernels") {
        let space = match Space::generate(&p, Options::default()) {
            Ok(s) => s,
            Err(SpaceError::NoMaps) => continue,
            Err(e) => panic!("{name}: {e}"),
        };
        let kernel = mapsat_codegen::lower(&p, &Default::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        checked += 1;
        layout_maps += space.layout_maps().len();
        failures.extend(disagreements(&space, &kernel, &[]).into_iter().map(|d| format!("{name}: {d}")));
    }
    assert!(checked > 0 && layout_maps > 0, "{checked} kernels, {layout_maps} layout maps");
    assert!(failures.is_empty(), "{} disagreements:\n{}", failures.len(), failures.join("\n"));
}
