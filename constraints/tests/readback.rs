//! One truth for validity, from the other side: every mapping the space accepts, applied to the
//! program (`Space::apply`, fusion included), is a hand-mapped program whose mapping, read back
//! from its map kinds, the space of the program it maps accepts too (but for the space's
//! preferences, `Family::is_preference`, which a fused map may break by design). `mapsat
//! emit`/`run` check hand-mapped programs this way, so a tuned kernel (`mapsat tune` writes the
//! mapped `.lift`) is never refused by the check that let it be built.

use mapsat_constraints::{readback, Options, Space};

const SAMPLES: usize = 100;

/// The examples and the tiled convolution with 103 maps.
fn examples() -> Vec<(String, String)> {
    let dirs =
        [concat!(env!("CARGO_MANIFEST_DIR"), "/../examples"), concat!(env!("CARGO_MANIFEST_DIR"), "/tests/programs")];
    let mut out: Vec<(String, String)> = dirs
        .iter()
        .flat_map(|d| std::fs::read_dir(d).expect("program folder"))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "lift"))
        .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).expect("read")))
        .collect();
    out.sort();
    out
}

#[test]
fn applied_mappings_read_back_as_valid() {
    let mut checked = 0;
    for (name, text) in examples() {
        let p = mapsat_ir::parse(&text).expect("parses");
        if readback::is_hand_mapped(&p) {
            continue;
        }
        let space = match Space::generate(&p, Options::default()) {
            Err(mapsat_constraints::Error::NoMaps) => continue,
            s => s.expect("space"),
        };
        for m in space.sample(SAMPLES, 7).expect("samples") {
            let q = space.apply(&p, &m).expect("applies");
            let back = Space::generate(&readback::unmapped(&q), Options::default())
                .unwrap_or_else(|e| panic!("{name} {}: the mapped program's space: {e}", space.show(&m)));
            let w = back.written_mapping(&q).unwrap_or_else(|e| panic!("{name} {}: {e}", space.show(&m)));
            let e = back.explain(&w).expect("explains");
            let refused: Vec<String> = e
                .violated
                .iter()
                .filter(|c| !c.family.is_preference())
                .map(|c| format!("[{}] {}", c.family, c.text))
                .collect();
            assert!(
                refused.is_empty(),
                "{name}: {} applied reads back as {}, refused:\n{}",
                space.show(&m),
                back.show(&w),
                refused.join("\n")
            );
            checked += 1;
        }
    }
    assert!(checked > 300, "only {checked} mappings checked");
}
