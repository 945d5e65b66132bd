//! A program of several kernels from Python, as the command line handles one
//! ([`mapsat::stages`]): sampled, explained and tuned kernel by kernel, with a mapping of the
//! whole program (`A=G0,B=S,C=G0`) cut into each kernel's part.

use mapsat::constraints::Space;
use serde_json::{json, Map, Value};

/// `msg`, said to be about the kernel of stage `name` when the program has several.
pub(crate) fn named(several: bool, name: &str, msg: String) -> String {
    match several {
        true => format!("in the kernel of stage `{name}`: {msg}"),
        false => msg,
    }
}

/// Up to `n` mappings of the whole program from each kernel's samples `per`: the `i`-th
/// takes each kernel's `i`-th sample (its first again when it has fewer). None when a kernel
/// has no valid mapping.
pub(crate) fn combine(per: &[Vec<String>], n: usize) -> Vec<String> {
    if per.iter().any(Vec::is_empty) {
        return Vec::new();
    }
    let most = per.iter().map(Vec::len).max().unwrap_or(0).min(n);
    (0..most)
        .map(|i| {
            let parts = per.iter().map(|v| v[i % v.len()].as_str()).filter(|m| !m.is_empty());
            parts.collect::<Vec<_>>().join(",")
        })
        .collect()
}

/// The constraints `mapping` violates in the kernels' `spaces` (see `PyProgram::spaces`),
/// each said to be about its kernel when there are several.
pub(crate) fn explain(spaces: &[(String, Option<Space>)], mapping: &str) -> Result<Vec<String>, String> {
    let several = spaces.len() > 1;
    let parts = match several {
        false => vec![mapping.to_string()],
        true => {
            let labels: Vec<Vec<String>> = spaces
                .iter()
                .map(|(_, s)| s.iter().flat_map(|s| s.labels().iter().chain(s.layout_maps())).cloned().collect())
                .collect();
            mapsat::stages::split_mapping(mapping, &labels).map_err(|e| e.to_string())?
        }
    };
    let mut out = Vec::new();
    for ((name, space), part) in spaces.iter().zip(&parts) {
        let Some(space) = space else { continue };
        let m = space.parse_mapping(part).map_err(|e| named(several, name, e.to_string()))?;
        let e = space.explain(&m).map_err(|e| named(several, name, e.to_string()))?;
        out.extend(e.violated.iter().map(|c| named(several, name, mapsat::mapping::describe(space, c))));
    }
    Ok(out)
}

/// The summary of a tune of a program of several kernels, from each kernel's (`kernels`, in
/// launch order): the best sequence (each kernel's best: the mapping of the whole program,
/// each kernel's work group by name, the tunable sizes), its time (the sum of the kernels')
/// and GFLOP/s; `best` is null when a kernel has no correct candidate.
pub(crate) fn tuned(program: &str, sizes: &mapsat::ir::Sizes, kernels: Vec<Value>) -> Value {
    let bests: Option<Vec<&Value>> = kernels.iter().map(|k| k.get("best").filter(|b| !b.is_null())).collect();
    let best = bests.as_ref().map(|bests| {
        let mapping: Vec<&str> = bests.iter().filter_map(|b| b["mapping"].as_str()).filter(|m| !m.is_empty()).collect();
        let mut local = Map::new();
        let mut tuning = Map::new();
        for (k, b) in kernels.iter().zip(bests) {
            local.insert(k["program"].as_str().unwrap_or_default().to_string(), b["local"].clone());
            tuning.extend(b["tuning"].as_object().cloned().unwrap_or_default());
        }
        json!({ "mapping": mapping.join(","), "local": local, "tuning": tuning })
    });
    let number = |k: &Value, f: &str| k[f].as_f64().unwrap_or(0.0);
    let ms: f64 = kernels.iter().map(|k| number(k, "best_ms")).sum();
    // GFLOP/s times ms: MFLOP.
    let mflop: f64 = kernels.iter().map(|k| number(k, "best_gflops") * number(k, "best_ms")).sum();
    let sizes: Map<String, Value> = sizes.iter().map(|(k, v)| (k.to_string(), v.into())).collect();
    json!({
        "program": program,
        "sizes": sizes,
        "best": best,
        "best_ms": if best.is_some() { ms } else { 0.0 },
        "best_gflops": if best.is_some() && ms > 0.0 { mflop / ms } else { 0.0 },
        "kernels": kernels,
    })
}
