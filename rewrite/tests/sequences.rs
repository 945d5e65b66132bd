//! The macros are their primitive rules applied one by one. On matmul, `split-join`,
//! `eta-expand`, `split-join`, `map-fission` and `map-map-interchange` applied by hand (each
//! rule's own rewrite function on the class the step before made, its term merged with that
//! class) give the program `tile-map-map` gives; `split-join`, `eta-expand` and
//! `map-reduce-interchange` (after `reduce-map-fusion`, which exposes the dot product's zip) the
//! one `register-block` gives. The programs are compared printed.

mod common;

use egg::{Id, RecExpr};
use mapsat_ir::ast::Prim;
use mapsat_ir::{Program, Size};
use mapsat_rewrite::analysis::{LiftGraph, Meta};
use mapsat_rewrite::lang::Lift;
use mapsat_rewrite::rules::{fusion, interchange, reduce, split_join, Build, Ctx, Params, Rule};
use mapsat_rewrite::{convert, rewrite, Budget, Options};
use std::collections::BTreeMap;

/// Matrix multiplication (as in `tests/tiling_props.rs`).
const MATMUL: &str = "size M = 8, K = 4, N = 8\ndef mm(a: [[f32]K]M, b: [[f32]N]K) : [[f32]N]M =\n  map@A(fun(row => map@B(fun(col => reduce(add, 0.0, map@C(fun(p => p.0 * p.1), zip(row, col)))), transpose(b))), a)";

/// A program in an e-graph, rewritten by hand.
struct Hand {
    p: Program,
    eg: LiftGraph,
    params: Params,
    root: Id,
}

impl Hand {
    /// `src` in an e-graph, with the parameters `rewrite` gives the rules (new tile sizes `tA`,
    /// `tB`, ... by map label).
    fn new(src: &str) -> Hand {
        let p = mapsat_ir::parse(src).unwrap();
        let info = mapsat_ir::check::check(&p).unwrap();
        let mut sizes = p.resolve_sizes(&mapsat_ir::Sizes::new()).unwrap();
        let tiles = mapsat_rewrite::tiles::new_tile_sizes(&p, &info, &sizes, &mapsat_rewrite::SPLIT_FACTORS, &[]);
        for t in &tiles {
            sizes.insert(t.size.name.clone(), t.size.default.unwrap_or(1));
        }
        let meta = Meta { params: p.params.iter().map(|q| q.ty.clone()).collect(), sizes: sizes.clone() };
        let mut eg = LiftGraph::new(meta);
        let (root, _) = convert::add_program(&mut eg, &p, &info);
        let by_label = tiles.iter().filter(|t| t.reduction.is_none());
        let params = Params {
            sizes,
            factors: Vec::new(),
            tiles: by_label.map(|t| (t.label.clone(), Size::var(&t.size.name))).collect(),
            reduction_tiles: BTreeMap::new(),
            max_rank: 3,
            vector_width: None,
            root: None,
        };
        Hand { p, eg, params, root }
    }

    fn cx(&mut self) -> Ctx<'_> {
        self.eg.rebuild();
        Ctx::new(&self.eg, &self.params)
    }

    fn add(&mut self, b: &Build) -> Id {
        b.add(&mut self.eg)
    }

    /// `b`, a rule's right-hand side at class `c`, merged with it.
    fn step(&mut self, c: Id, b: &Build) -> Id {
        let id = self.add(b);
        self.eg.union(c, id);
        id
    }

    /// The one map of class `c` labelled `label`: `(f, xs)`.
    fn map(&mut self, c: Id, label: &str) -> (Id, Id) {
        let maps = self.cx().maps(c);
        let (_, f, xs) = maps.into_iter().find(|(l, ..)| l == label).unwrap();
        (f, xs)
    }

    /// `b` as a term (its classes as their smallest terms), which the e-graph holds in the
    /// input's class; printed as a program.
    fn print(&mut self, b: &Build) -> String {
        let mut e = RecExpr::default();
        let cx = self.cx();
        term(&cx, b, &mut e);
        assert_eq!(self.eg.lookup_expr(&e).map(|c| self.eg.find(c)), Some(self.eg.find(self.root)));
        let p = convert::to_program(&self.p, &convert::Term { expr: e, names: Vec::new() });
        mapsat_ir::print(&p)
    }
}

/// Adds `b` to `e`, its classes as their smallest terms.
fn term(cx: &Ctx, b: &Build, e: &mut RecExpr<Lift>) -> Id {
    match b {
        Build::Class(c) => mapsat_rewrite::binders::append(e, &cx.repr(*c)),
        Build::Expr(x) => mapsat_rewrite::binders::append(e, x),
        Build::Node(n, cs) => {
            let ids: Vec<Id> = cs.iter().map(|c| term(cx, c, e)).collect();
            let mut k = 0;
            e.add(egg::Language::map_children(n.clone(), |_| {
                k += 1;
                ids[k - 1]
            }))
        }
    }
}

/// The variants `rules` give `MATMUL` in `iterations`, printed as [`Hand::print`] prints (binder
/// names and declared tile sizes left out).
fn macro_variants(rules: &[&str], iterations: usize) -> Vec<String> {
    let p = mapsat_ir::parse(MATMUL).unwrap();
    let out = rewrite(&p, &common::only(rules, iterations)).unwrap();
    let printed = |v: &mapsat_rewrite::Variant| {
        let info = mapsat_ir::check::check(&v.program).unwrap();
        let mut t = convert::to_term(&v.program, &info);
        t.names = Vec::new();
        mapsat_ir::print(&convert::to_program(&p, &t))
    };
    out.variants.iter().map(printed).collect()
}

/// The printed program without white space.
fn flat(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

fn size(name: &str) -> Size {
    Size::var(name)
}

#[test]
fn tile_map_map_is_its_primitive_rules_one_by_one() {
    let mut h = Hand::new(MATMUL);
    let root = h.root;
    let (f, xs) = h.map(root, "A");
    // 1. split-join on map@A by tA.
    let s1 = split_join::split_join("A", Build::Class(f), Build::Class(xs), size("tA"));
    h.step(root, &s1);
    let tiles = s1.args()[0];
    let (tile_fn, row_tiles) = (tiles.args()[0], tiles.args()[1]);
    let (tiles_c, tile_fn, row_tiles_c) = (h.add(tiles), h.add(tile_fn), h.add(row_tiles));
    // 2. eta-expand that map: the row tile as a variable.
    let e2 = interchange::eta_expand(&h.cx(), "A", tile_fn, row_tiles_c, &BTreeMap::new()).unwrap();
    h.step(tiles_c, &e2);
    let rows = e2.args()[0].body().unwrap();
    let rows_c = h.add(rows);
    let row_tile = h.add(rows.args().last().unwrap());
    // 3. split-join on map@B by tB, under `row` (matmul's row function is closed: the same class).
    let row_body = h.cx().lambdas(f)[0];
    let (g, ys) = h.map(row_body, "B");
    let s3 = split_join::split_join("B", Build::Class(g), Build::Class(ys), size("tB"));
    h.step(row_body, &s3);
    let col_tiles = s3.args()[0];
    let (col_fn, col_split) = (h.add(col_tiles.args()[0]), h.add(col_tiles.args()[1]));
    let col_tiles_c = h.add(col_tiles);
    // 4. map-fission: the join out of the rows of a tile.
    let join = h.add(&Build::prim(Prim::Join));
    let f4 = fusion::map_fission(&h.cx(), "A_i", join, col_tiles_c, row_tile).unwrap();
    h.step(rows_c, &f4);
    let blocks_c = h.add(f4.args()[1]);
    // 5. map-map-interchange: the column tiles outside the rows of a tile.
    let i5 = interchange::map_map_interchange(&h.cx(), ("A_i_f", row_tile), ("B", col_fn, col_split)).unwrap();
    h.step(blocks_c, &i5);
    // The whole term: step 1's, with step 2's map, step 4's and step 5's put in place.
    let rows = Build::map("A_i", f4.args()[0].clone(), i5);
    let tiled = Build::call(Prim::Join, vec![Build::map("A", Build::lam(rows), row_tiles.clone())]);
    let by_hand = h.print(&tiled);
    assert!(flat(&by_hand).contains("map@A_i(join,transpose(map@B("), "{by_hand}");
    let variants = macro_variants(&["tile-map-map"], 1);
    assert!(variants.contains(&by_hand), "by hand:\n{by_hand}\nthe macro's:\n{}", variants.join("\n"));
}

#[test]
fn register_block_is_its_primitive_rules_one_by_one() {
    let mut h = Hand::new(MATMUL);
    let root = h.root;
    let (f, _) = h.map(root, "A");
    let row_body = h.cx().lambdas(f)[0];
    let (g, ys) = h.map(row_body, "B");
    // 0. reduce-map-fusion on the dot product (the rule's own search), which gives the form
    // `reduce(h, z, zip(row, col))` the interchange reads.
    let dot = h.cx().lambdas(g)[0];
    let fused = reduce::ReduceMapFusion.search(&h.cx(), dot);
    h.step(dot, &fused[0]);
    // 1. split-join on map@B by tB.
    let s1 = split_join::split_join("B", Build::Class(g), Build::Class(ys), size("tB"));
    h.step(row_body, &s1);
    let blocks = s1.args()[0];
    let (block_fn, block_split) = (blocks.args()[0], blocks.args()[1]);
    let (blocks_c, block_fn, block_split_c) = (h.add(blocks), h.add(block_fn), h.add(block_split));
    // 2. eta-expand that map, its function in the fused form.
    let cx = h.cx();
    let (_, forms) = interchange::column_reduction_forms(&cx, g).remove(0);
    let e2 = interchange::eta_expand(&cx, "B", block_fn, block_split_c, &forms).unwrap();
    h.step(blocks_c, &e2);
    let block = e2.args()[0].body().unwrap();
    let block_c = h.add(block);
    let (g1, blk) = h.map(block_c, "B_i");
    // 3. map-reduce-interchange on the block's columns.
    let cx = h.cx();
    let parts = interchange::column_reductions(&cx, g1)[0];
    let i3 = interchange::map_reduce_interchange(&cx, "B_i", parts, blk).unwrap();
    h.step(block_c, &i3);
    // The whole term: the row function's body is step 1's, with step 3's block function.
    let rows = Build::call(Prim::Join, vec![Build::map("B", Build::lam(i3), block_split.clone())]);
    let blocked = Build::map("A", Build::lam(rows), Build::Node(Lift::Param(0), vec![]));
    let by_hand = h.print(&blocked);
    assert!(flat(&by_hand).contains("map@B_i_z(fun("), "{by_hand}");
    let variants = macro_variants(&["reduce-map-fusion", "register-block"], 2);
    assert!(variants.contains(&by_hand), "by hand:\n{by_hand}\nthe macro's:\n{}", variants.join("\n"));
}

#[test]
fn the_report_counts_each_step_under_its_primitive_rule() {
    let p = mapsat_ir::parse(MATMUL).unwrap();
    let applied = |rules: &[&str], iterations: usize| {
        let opts = Options {
            budget: Budget { iterations, ..Budget::default() },
            rules: Some(rules.iter().map(|r| r.to_string()).collect()),
            ..Options::default()
        };
        rewrite(&p, &opts).unwrap().report.applied
    };
    let tiled = applied(&["tile-map-map"], 1);
    let want =
        [("tile-map-map", 1), ("split-join", 2), ("eta-expand", 1), ("map-fission", 1), ("map-map-interchange", 1)];
    assert_eq!(tiled, want.iter().map(|(k, v)| (k.to_string(), *v)).collect(), "{tiled:?}");
    let blocked = applied(&["reduce-map-fusion", "register-block"], 2);
    for step in ["register-block", "split-join", "eta-expand", "map-reduce-interchange"] {
        assert_eq!(blocked.get(step), Some(&1), "{step}: {blocked:?}");
    }
    let outer = applied(&["reduce-map-fusion", "outer-product"], 3);
    for step in mapsat_rewrite::rules::outer::OuterProduct.sequence().unwrap().steps() {
        assert_eq!(outer.get(*step), Some(&1), "{step}: {outer:?}");
    }
    assert_eq!(outer.get("outer-product"), Some(&1), "{outer:?}");
}
