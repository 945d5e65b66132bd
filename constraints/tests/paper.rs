//! The paper's examples: Listing 1 with the mappings M1–M6 of Table 1, Listing 3's legal and
//! illegal mappings, and per-family counts on the direct convolution.

use mapsat_constraints::{Code, Explanation, Family, Options, Space};

const LISTING1: &str = "
size I = 4, J = 8, K = 8
def listing1(input: [[[f32]K]J]I) =
  map@A(fun(plane =>
    let buf = toLocal(map@B(fun(row => map@C(fun(x => x * 2.0 + 1.0), row)), plane)) in
    map@D(fun(col => map@E(fun(x => x * x), col)), transpose(buf))), input)
";

const LISTING3: &str = "
size n = 64, s0 = 16, s1 = 4
def f(X: [f32]n, y: f32, z: f32) =
  join o map@A(map@B(fun(a => a + z)) o join o map@C(fun(c => toLocal(map@D(fun(a => a * y), c)))) o split(s1)) o split(s0) $ X
";

const CONV: &str = "
size inH = 8, inW = 8, inChs = 4, outChs = 6, kerH = 3, kerW = 3
def conv(inp: [[[f32]inChs]inW]inH, ks: [[[[f32]inChs]kerW]kerH]outChs) =
  mapND2@A(fun(win => map@B(fun(k => reduce(add, 0.0, map@C(fun(p => p.0 * p.1), joinND3(zipND3(win, k))))), ks)),
    slideND2(kerH, 1, kerW, 1, padND2(1, 1, 0.0, inp)))
";

fn space(src: &str, options: Options) -> Space {
    let p = mapsat_ir::parse(src).expect("parses");
    mapsat_ir::check::check(&p).expect("checks");
    Space::generate(&p, options).expect("generates")
}

fn explain(s: &Space, mapping: &str) -> Explanation {
    let m = s.parse_mapping(mapping).expect("mapping parses");
    let e = s.explain(&m).expect("explains");
    // Z3 agrees with evaluation on full assignments.
    assert_eq!(s.is_valid(&m).unwrap(), e.valid, "{mapping}");
    e
}

fn families(e: &Explanation) -> Vec<Family> {
    e.violated.iter().map(|c| c.family).collect()
}

#[test]
fn listing1_tree() {
    let s = space(LISTING1, Options::default());
    assert_eq!(s.labels(), ["A", "B", "C", "D", "E"]);
    let a = s.analysis();
    let chains: Vec<Vec<String>> =
        a.chains().iter().map(|c| c.iter().map(|&m| a.maps[m].label.clone()).collect()).collect();
    assert_eq!(chains, [vec!["A", "B", "C"], vec!["A", "D", "E"]]);
    let perfect: Vec<&str> = a.maps.iter().filter(|m| m.perfectly_nested).map(|m| m.label.as_str()).collect();
    assert_eq!(perfect, ["C", "E"]);
}

#[test]
fn listing1_table1() {
    let s = space(LISTING1, Options::default());
    // M1 (A=G0, the rest sequential): valid, as the paper says. Without work groups rule 2 is
    // vacuous in the paper; mapsat accepts the local buffer as each work item's own scratch space
    // (every access sequential, inside the mapGlb around the buffer; code generation gives each
    // work item its own slice). Only the fusion heuristic (rule 8, optional) objects to the
    // perfectly nested sequential pairs B/C and D/E: valid without it, and with them fused.
    let m1 = explain(&s, "A=G0,B=S,C=S,D=S,E=S");
    assert!(!m1.valid);
    assert!(families(&m1).iter().all(|f| *f == Family::SeqFusion), "{:?}", m1.violated);
    assert!(m1.barriers.is_empty());
    assert!(explain(&s, "A=G0,B=S,C=F,D=S,E=F").valid);
    let no_fusion = space(LISTING1, Options { fusion: false, ..Options::default() });
    assert!(explain(&no_fusion, "A=G0,B=S,C=S,D=S,E=S").valid);
    // Local memory shared by the threads of a mapGlb is out of scope (B parallel).
    let shared = explain(&no_fusion, "A=G0,B=G1,C=S,D=S,E=S");
    assert!(families(&shared).contains(&Family::LocalScope), "{:?}", shared.violated);

    // M2: cannot synchronize (and B, D touch local memory outside work groups).
    let m2 = explain(&s, "A=G1,B=G0,C=S,D=G0,E=S");
    assert!(!m2.valid);
    let sync: Vec<_> = m2.violated.iter().filter(|c| c.family == Family::Sync).collect();
    assert!(!sync.is_empty(), "{:?}", m2.violated);
    assert!(sync[0].text.contains("cannot synchronize"), "{}", sync[0].text);

    // M3: out-of-scope reads (local memory across work groups).
    let m3 = explain(&s, "A=S,B=W0,C=L0,D=W0,E=L0");
    assert!(!m3.valid);
    assert!(families(&m3).contains(&Family::LocalScope));
    assert!(m3.violated.iter().any(|c| c.text.contains("out-of-scope reads")));

    // M4: valid, with a barrier between the B/C nest and D.
    let m4 = explain(&s, "A=W0,B=L0,C=S,D=L0,E=S");
    assert!(m4.valid, "{:?}", m4.violated);
    assert_eq!(m4.barriers.len(), 1);
    assert_eq!(s.label(m4.barriers[0].writer), "B");
    assert!(s.labels_of(&m4.barriers[0].readers).contains(&"D"));

    // M5: E cannot be vectorized (its accesses are strided).
    let m5 = explain(&s, "A=W0,B=L0,C=S,D=L0,E=V");
    assert!(!m5.valid);
    assert_eq!(families(&m5), [Family::Vectorization]);
    assert!(s.labels_of(&m5.violated[0].maps) == ["E"]);

    // M6: valid, no barrier.
    let m6 = explain(&s, "A=W0,B=L0,C=V,D=S,E=L0");
    assert!(m6.valid, "{:?}", m6.violated);
    assert!(m6.barriers.is_empty());
}

#[test]
fn listing3_examples() {
    let s = space(LISTING3, Options::default());
    let mut labels = s.labels().to_vec();
    labels.sort();
    assert_eq!(labels, ["A", "B", "C", "D"]);
    let legal = explain(&s, "A=W0,B=L0,C=L0,D=S");
    assert!(legal.valid, "{:?}", legal.violated);
    let illegal = explain(&s, "A=G1,B=G0,C=G0,D=S");
    assert!(!illegal.valid);
    assert!(families(&illegal).contains(&Family::LocalScope));
    // The paper's example for rule 6.
    let e = explain(&s, "A=L0,B=W0,C=W0,D=S");
    assert!(families(&e).contains(&Family::LocalHierarchy));
}

#[test]
fn mapping_errors() {
    let s = space(LISTING3, Options::default());
    assert!(matches!(s.parse_mapping("A=W0,B=L0,C=L0"), Err(mapsat_constraints::Error::MissingMaps(_))));
    assert!(matches!(s.parse_mapping("A=W0,B=L0,C=L0,D=S,Q=S"), Err(mapsat_constraints::Error::UnknownMap { .. })));
    assert!(matches!(s.parse_mapping("A=W7,B=L0,C=L0,D=S"), Err(mapsat_constraints::Error::BadCode { .. })));
}

#[test]
fn wrong_length_mappings() {
    use mapsat_constraints::{Error, Mapping};
    let s = space(LISTING3, Options::default());
    for n in [0, 3, 5] {
        let m = Mapping { codes: vec![Code::Seq; n] };
        let wrong = |e: Error| matches!(e, Error::MappingLength { given, maps: 4 } if given == n);
        assert!(wrong(s.explain(&m).unwrap_err()), "explain, {n} codes");
        assert!(wrong(s.is_valid(&m).unwrap_err()), "is_valid, {n} codes");
        assert!(wrong(s.evaluate(&m).unwrap_err()), "evaluate, {n} codes");
        assert!(s.apply(&mapsat_ir::parse(LISTING3).unwrap(), &m).is_err(), "apply, {n} codes");
        // Shown without a panic.
        assert_eq!(s.show(&m).to_string().matches('=').count(), n);
    }
}

#[test]
fn space_accessors() {
    use mapsat_ir::ast::AddressSpace;
    let s = space(LISTING1, Options::default());
    let ids: Vec<_> = s.ids().collect();
    assert_eq!(s.labels_of(&ids), ["A", "B", "C", "D", "E"]);
    let id = |l: &str| s.id(l).expect(l);
    assert_eq!(s.id("Q"), None);
    assert!(ids.iter().enumerate().all(|(i, &m)| m.index() == i && s.label(m) == s.labels()[i]));
    assert_eq!(s.parent(id("A")), None);
    assert_eq!(s.parent(id("C")), Some(id("B")));
    assert_eq!(s.parent(id("D")), Some(id("A")));
    // F only for the perfectly nested C and E.
    assert!(!s.domain(id("B")).contains(&Code::Fused) && s.domain(id("C")).contains(&Code::Fused));
    assert_eq!(s.domain(id("E")).len(), Code::ALL.len());
    // B and C write the local buffer.
    assert_eq!(s.buffer_writers(AddressSpace::Local), [id("B"), id("C")]);
    assert_eq!(s.local_size_candidates().len(), s.local_size_count());
    assert!(s.constraints().iter().all(|c| c.maps.iter().all(|m| m.index() < s.len())));
    assert_eq!(s.constraints().len(), s.counts().iter().map(|(_, n)| n).sum::<usize>());
    let site = s.barriers().iter().find(|b| s.label(b.writer) == "B").expect("a barrier site after B");
    assert!(s.labels_of(&site.readers).contains(&"D"));
    assert!(s.options().fusion);
}

#[test]
fn conv_counts() {
    let s = space(CONV, Options::default());
    assert_eq!(s.labels(), ["A_0", "A_1", "B", "C"]);
    assert!(!s.layout_maps().is_empty());
    let counts = s.counts();
    let get = |f: Family| counts.iter().find(|(g, _)| *g == f).map(|(_, n)| *n).unwrap_or(0);
    // One chain (A_0, A_1, B, C): 6 nested pairs.
    assert_eq!(get(Family::Duplicate), 6 + 1);
    assert_eq!(get(Family::LocalHierarchy), 6);
    assert_eq!(get(Family::Exhaustive), 0);
    assert_eq!(get(Family::SeqFusion), 1);
    let first = s.first(1).unwrap();
    assert_eq!(first.len(), 1);
    assert!(s.explain(&first[0]).unwrap().valid);
}

#[test]
fn samples_are_distinct_and_valid() {
    let s = space(LISTING1, Options::default());
    let samples = s.sample(20, 7).unwrap();
    assert_eq!(samples.len(), 20);
    let set: std::collections::HashSet<_> = samples.iter().collect();
    assert_eq!(set.len(), 20);
    for m in &samples {
        assert!(s.explain(m).unwrap().valid, "{}", s.show(m));
    }
    // Spread: not all samples share the outer map's code.
    assert!(samples.iter().any(|m| m.codes[0] != samples[0].codes[0]));
    assert_eq!(s.sample(20, 7).unwrap(), samples, "deterministic for a seed");
}

#[test]
fn profile_limits() {
    let mali = mapsat_ir::profile::Profile::builtin("mali-g72-mp12").unwrap();
    let s = space(LISTING1, Options { profile: Some(mali), ..Options::default() });
    assert!(s.counts().iter().any(|(f, _)| *f == Family::DeviceLimits));
    let e = explain(&s, "A=W0,B=L0,C=S,D=L0,E=S");
    assert!(e.valid, "{:?}", e.violated);
    let ls = e.local_sizes.unwrap();
    assert!(8 % ls[0] == 0 && ls[1] == 1 && ls[2] == 1, "{ls:?}");
    let _ = Code::Seq;
}
