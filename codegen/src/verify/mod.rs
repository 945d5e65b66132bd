//! The kernel-IR verifier (cranelift's verifier, naga's validator in spirit): facts every kernel
//! the lowering and the clean-up passes produce must satisfy, checked independently of how they
//! were produced. [`crate::lower`] runs it after lowering and after the clean-up passes in debug
//! builds (so in every test); a failure there is a bug in the code generator, reported as an
//! internal [`crate::CodegenError`], never a panic.
//!
//! What is checked:
//!
//! - **Launch**: 1 to 3 dimensions; every global and local size positive, the local size dividing
//!   the global size; dimensions past the used ones of size 1.
//! - **Buffers**: every [`BufId`] (arguments, locals, declarations, places) in range; distinct
//!   buffer names; a by-value buffer is a scalar input. The kernel arguments are exactly the
//!   global buffers, [`Kernel::locals`] exactly the local ones, each listed once; exactly one
//!   buffer is the output.
//! - **Declarations**: only private buffers are declared, each before any use, in an enclosing
//!   scope (a loop body or a block), and not again while it is visible; only a single variable
//!   (no array) has an initial value.
//! - **Stores** go to writable buffers: not to an input, not to a by-value parameter.
//! - **Accesses**: a lane only of a private vector, within its width; an index that lies outside
//!   the buffer for every value of its loop variables (interval arithmetic over the loops'
//!   ranges, so only certain overflows) is refused, except in the arms of a `select` (where
//!   `pad` guards reads).
//! - **Loop variables**: every [`VarId`] in range, with distinct names (none a buffer's);
//!   every variable an index mentions bound by an enclosing loop; no loop rebinding the
//!   variable of an enclosing one.
//! - **Loops**: sequential and vector loops have stride 1 and are real loops; a parallel loop
//!   uses a dimension of the launch, its stride is the number of threads (or groups) in that
//!   dimension, and its trips ([`Trips`]) follow from the stride and the extent.
//! - **Index widths** (a separate check, [`verify_widths`], once [`crate::width`] has chosen
//!   them): no loop variable or part of an index that C computes as a 32-bit `int` can leave
//!   32 bits.
//! - **Barriers**: no barrier slot is left ([`Stmt::BarrierSlot`]), and no barrier lies inside a
//!   loop over global or local ids whose trip count differs between the threads of a work
//!   group (at most one index per thread, or an extent the stride does not divide).

use crate::index::{Index, Ranges};
use crate::kir::*;
use crate::visit::{walk_expr, Visit};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

mod widths;

pub use widths::verify_widths;

/// One problem in a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifierError {
    /// Where: `kernel`, `launch`, or the path of the statement
    /// (`body / [2] / loop i_x (mapGlb(0)@A) / [0]`).
    pub location: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for VerifierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

/// Every problem found in a kernel (at least one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifierErrors(pub Vec<VerifierError>);

impl fmt::Display for VerifierErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for VerifierErrors {}

/// Checks a kernel (see the module documentation): `Ok` or every problem found.
pub fn verify(k: &Kernel) -> Result<(), VerifierErrors> {
    let mut v = Verifier {
        k,
        errors: Vec::new(),
        path: vec!["body".into()],
        bound: Vec::new(),
        ranges: Ranges::default(),
        scopes: vec![BTreeSet::new()],
        divergent: Vec::new(),
        guarded: 0,
    };
    v.launch();
    v.buffers();
    v.vars();
    v.visit_stmts(&k.body);
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(VerifierErrors(v.errors))
    }
}

struct Verifier<'k> {
    k: &'k Kernel,
    errors: Vec<VerifierError>,
    /// The statement being checked, as a path from the body.
    path: Vec<String>,
    /// Variables of the enclosing loops, outermost first.
    bound: Vec<VarId>,
    /// Their ranges.
    ranges: Ranges,
    /// Private buffers declared in each enclosing scope, outermost first.
    scopes: Vec<BTreeSet<BufId>>,
    /// Enclosing loops whose trip count differs between the threads of a work group.
    divergent: Vec<String>,
    /// Depth of `select` arms around the expression being checked.
    guarded: usize,
}

impl Verifier<'_> {
    fn error_at(&mut self, location: &str, message: String) {
        self.errors.push(VerifierError { location: location.to_string(), message });
    }

    fn error(&mut self, message: String) {
        self.errors.push(VerifierError { location: self.path.join(" / "), message });
    }

    fn launch(&mut self) {
        let l = &self.k.launch;
        if !(1..=3).contains(&l.dims) {
            self.error_at("launch", format!("{} dimensions (1 to 3)", l.dims));
        }
        for d in 0..3 {
            let (g, s) = (l.global[d], l.local[d]);
            if g < 1 || s < 1 {
                self.error_at("launch", format!("dimension {d}: global size {g}, local size {s} (must be positive)"));
            } else if g % s != 0 {
                self.error_at("launch", format!("dimension {d}: local size {s} does not divide global size {g}"));
            } else if d as u32 >= l.dims && (g, s) != (1, 1) {
                self.error_at("launch", format!("dimension {d} is unused but has global size {g}, local size {s}"));
            }
        }
    }

    fn buffers(&mut self) {
        let k = self.k;
        let n = k.buffers.len();
        let mut names = BTreeMap::new();
        for (i, b) in k.buffers.iter().enumerate() {
            if let Some(j) = names.insert(b.name.as_str(), i) {
                self.error_at("kernel", format!("buffers {j} and {i} are both named `{}`", b.name));
            }
            if b.width == 0 || b.dims.iter().any(|&d| d < 0) {
                self.error_at("kernel", format!("buffer `{}` has width {} and lengths {:?}", b.name, b.width, b.dims));
            }
            if b.by_value && (b.role != Role::Input || !b.dims.is_empty() || b.space != Space::Global) {
                self.error_at("kernel", format!("buffer `{}` is passed by value but is no scalar input", b.name));
            }
        }
        let outputs = k.buffers.iter().filter(|b| b.role == Role::Output).count();
        if outputs != 1 {
            self.error_at("kernel", format!("{outputs} output buffers (one expected)"));
        }
        for (list, space, what) in [(&k.args, Space::Global, "kernel argument"), (&k.locals, Space::Local, "local")] {
            let mut seen = BTreeSet::new();
            for &b in list.iter() {
                if b.0 >= n {
                    self.error_at("kernel", format!("{what} {} is no buffer ({n} buffers)", b.0));
                } else if !seen.insert(b) {
                    self.error_at("kernel", format!("buffer `{}` is listed twice as a {what}", k.buf(b).name));
                } else if k.buf(b).space != space {
                    self.error_at("kernel", format!("{what} `{}` is in {:?} memory", k.buf(b).name, k.buf(b).space));
                }
            }
            for (i, b) in k.buffers.iter().enumerate() {
                if b.space == space && !seen.contains(&BufId(i)) {
                    self.error_at("kernel", format!("{:?} buffer `{}` is not listed as a {what}", space, b.name));
                }
            }
        }
    }

    fn vars(&mut self) {
        let k = self.k;
        let buffers: BTreeSet<&str> = k.buffers.iter().map(|b| b.name.as_str()).collect();
        let mut names = BTreeSet::new();
        for name in &k.vars {
            if !names.insert(name.as_str()) {
                self.error_at("kernel", format!("two loop variables are named `{name}`"));
            }
        }
        for v in k.loop_vars() {
            let name = k.var_name(v);
            if v.index() < k.vars.len() && buffers.contains(name.as_ref()) {
                self.error_at("kernel", format!("loop variable `{name}` has the name of a buffer"));
            }
        }
    }

    fn scoped(&mut self, stmts: &[Stmt]) {
        self.scopes.push(BTreeSet::new());
        self.visit_stmts(stmts);
        self.scopes.pop();
    }

    /// Checks a statement and what it contains (the walk's order, with the facts of the
    /// enclosing loops and scopes kept on the way).
    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Comment(_) => {}
            Stmt::BarrierSlot(slot) => self.error(format!("barrier slot {} left unresolved", slot.0)),
            Stmt::Decl(b, init) => self.decl(*b, init.as_ref()),
            Stmt::Store(p, e) => {
                self.place(p, true);
                self.visit_expr(e);
            }
            Stmt::Block(b) => self.scoped(b),
            Stmt::Barrier { .. } => {
                if let Some(l) = self.divergent.first().cloned() {
                    self.error(format!(
                        "barrier inside `{l}`, whose trip count differs between the threads of a work group"
                    ));
                }
            }
            Stmt::Loop { var, kind, extent, stride, trips, origin, body } => {
                self.path.push(format!("loop {} ({origin})", self.k.var_name(*var)));
                self.loop_shape(*kind, *extent, *stride, *trips);
                if var.index() >= self.k.vars.len() {
                    self.error(format!("loop variable {var} is not in the kernel's table"));
                }
                if self.bound.contains(var) {
                    self.error(format!("loop variable `{}` is bound by an enclosing loop", self.k.var_name(*var)));
                }
                let divergent = matches!(kind, LoopKind::Global(_) | LoopKind::Local(_))
                    && (*trips == Trips::AtMostOne || (*trips == Trips::Loop && *stride > 0 && extent % stride != 0));
                if divergent {
                    self.divergent.push(origin.clone());
                }
                self.bound.push(*var);
                self.ranges.set(*var, 0, extent - 1);
                self.scoped(body);
                self.bound.pop();
                if divergent {
                    self.divergent.pop();
                }
                self.path.pop();
            }
        }
    }

    /// The stride and trips of a loop agree with its kind and the launch shape.
    fn loop_shape(&mut self, kind: LoopKind, extent: i64, stride: i64, trips: Trips) {
        let l = &self.k.launch;
        if extent < 0 {
            self.error(format!("extent {extent}"));
        }
        let threads = match kind {
            LoopKind::Seq | LoopKind::Vec => {
                if stride != 1 || trips != Trips::Loop {
                    self.error(format!("a sequential loop with stride {stride} and trips {trips:?}"));
                }
                return;
            }
            LoopKind::Global(d) | LoopKind::Group(d) | LoopKind::Local(d) if d as u32 >= l.dims.min(3) => {
                self.error(format!("dimension {d} of a launch with {} dimensions", l.dims));
                return;
            }
            LoopKind::Global(d) => l.global[d as usize],
            LoopKind::Group(d) => l.global[d as usize] / l.local[d as usize].max(1),
            LoopKind::Local(d) => l.local[d as usize],
        };
        if stride != threads {
            self.error(format!("stride {stride} over {threads} threads (or groups) in its dimension"));
        }
        let expected = match stride.cmp(&extent) {
            std::cmp::Ordering::Equal => Trips::One,
            std::cmp::Ordering::Greater => Trips::AtMostOne,
            std::cmp::Ordering::Less => Trips::Loop,
        };
        if trips != expected {
            self.error(format!("trips {trips:?} for extent {extent} and stride {stride} ({expected:?} expected)"));
        }
    }

    fn visible(&self, b: BufId) -> bool {
        self.scopes.iter().any(|s| s.contains(&b))
    }

    fn decl(&mut self, b: BufId, init: Option<&Expr>) {
        if let Some(e) = init {
            self.visit_expr(e);
        }
        let Some(buf) = self.k.buffers.get(b.0) else {
            self.error(format!("declaration of buffer {}, which does not exist", b.0));
            return;
        };
        if buf.space != Space::Private || buf.by_value {
            self.error(format!("declaration of `{}`, which is not a private buffer", buf.name));
        }
        if init.is_some() && !buf.dims.is_empty() {
            self.error(format!("initial value for the array `{}`", buf.name));
        }
        if self.visible(b) {
            self.error(format!("`{}` is declared again where it is visible", buf.name));
        }
        if let Some(s) = self.scopes.last_mut() {
            s.insert(b);
        }
    }

    fn place(&mut self, p: &Place, write: bool) {
        let Some(buf) = self.k.buffers.get(p.buf.0) else {
            self.error(format!("access to buffer {}, which does not exist", p.buf.0));
            return;
        };
        if write && (buf.role == Role::Input || buf.by_value) {
            self.error(format!("store into the input `{}`", buf.name));
        }
        if buf.space == Space::Private && !self.visible(p.buf) {
            self.error(format!("`{}` is used where it is not declared", buf.name));
        }
        if p.width == 0 {
            self.error(format!("access of width 0 to `{}`", buf.name));
        }
        match p.lane {
            Some(_) if buf.scalar_layout() => self.error(format!("a lane of `{}`, which is not private", buf.name)),
            Some(l) if l >= buf.width => self.error(format!("lane {l} of `{}` (width {})", buf.name, buf.width)),
            _ => {}
        }
        self.index(&p.index);
        // Global and local buffers are indexed in scalars, private ones in elements.
        let (len, width) = if buf.scalar_layout() { (buf.scalars(), p.width as i64) } else { (buf.elems(), 1) };
        let (lo, hi) = self.ranges.of(&p.index);
        if self.guarded == 0 && self.unbound(&p.index).is_empty() && (hi < 0 || lo.saturating_add(width) > len) {
            self.error(format!("`{}` accessed at {lo}..={hi} (width {width}), outside its {len} places", buf.name));
        }
    }

    /// The variables of an index that no enclosing loop binds.
    fn unbound(&self, i: &Index) -> Vec<VarId> {
        let mut vars = BTreeSet::new();
        i.vars(&mut vars);
        vars.into_iter().filter(|v| !self.bound.contains(v)).collect()
    }

    fn index(&mut self, i: &Index) {
        for v in self.unbound(i) {
            let shown = i.render(&crate::index::Spelling::plain(&self.k.vars));
            self.error(format!("index {shown} uses `{}`, which no enclosing loop binds", self.k.var_name(v)));
        }
    }
}

impl Visit for Verifier<'_> {
    fn visit_stmts(&mut self, stmts: &[Stmt]) {
        for (i, s) in stmts.iter().enumerate() {
            self.path.push(format!("[{i}]"));
            self.visit_stmt(s);
            self.path.pop();
        }
    }

    fn visit_stmt(&mut self, s: &Stmt) {
        self.stmt(s);
    }

    fn visit_expr(&mut self, e: &Expr) {
        if let Expr::Select(c, a, b) = e {
            self.visit_expr(c);
            self.guarded += 1;
            self.visit_expr(a);
            self.visit_expr(b);
            self.guarded -= 1;
        } else {
            walk_expr(self, e);
        }
    }

    fn visit_place(&mut self, p: &Place) {
        self.place(p, false);
    }

    fn visit_index(&mut self, i: &Index) {
        self.index(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mapsat_ir::ast::{BinOp, Lit};
    use mapsat_ir::ScalarKind;

    const X: BufId = BufId(0);
    const OUT: BufId = BufId(1);
    const I: VarId = VarId(0);

    fn buffer(name: &str, space: Space, role: Role, dims: Vec<i64>) -> Buffer {
        let param = (role == Role::Input).then_some(0);
        Buffer { name: name.into(), space, role, kind: ScalarKind::F32, width: 1, dims, param, by_value: false }
    }

    fn load(b: BufId, index: Index) -> Expr {
        Expr::Load(Place { buf: b, index, width: 1, lane: None })
    }

    fn store(b: BufId, index: Index, e: Expr) -> Stmt {
        Stmt::Store(Place { buf: b, index, width: 1, lane: None }, e)
    }

    fn global_loop(extent: i64, stride: i64, trips: Trips, body: Vec<Stmt>) -> Stmt {
        Stmt::Loop { var: I, kind: LoopKind::Global(0), extent, stride, trips, origin: "mapGlb(0)@A".into(), body }
    }

    /// `out[i] = x[i] * 2` over 64 elements, one per thread of a launch of 64 in groups of 16.
    fn kernel() -> Kernel {
        let body = store(OUT, Index::var(I), Expr::Bin(BinOp::Mul, Box::new(load(X, Index::var(I))), lit()));
        Kernel {
            name: "k".into(),
            buffers: vec![
                buffer("x", Space::Global, Role::Input, vec![64]),
                buffer("out", Space::Global, Role::Output, vec![64]),
            ],
            args: vec![X, OUT],
            locals: vec![],
            body: vec![global_loop(64, 64, Trips::One, vec![body])],
            vars: vec!["i".into()],
            wide_vars: Default::default(),
            maps: vec![("A".into(), MapLowering::Loop(LoopKind::Global(0)))],
            launch: Launch { dims: 1, global: [64, 1, 1], local: [16, 1, 1] },
            flops: 64,
            sizes: Default::default(),
        }
    }

    fn lit() -> Box<Expr> {
        Box::new(Expr::Lit(Lit::F32(2.0f32.to_bits())))
    }

    /// The messages of the errors in `k`.
    fn errors(k: &Kernel) -> Vec<String> {
        match verify(k) {
            Ok(()) => Vec::new(),
            Err(e) => e.0.iter().map(|e| e.to_string()).collect(),
        }
    }

    fn assert_rejected(k: &Kernel, what: &str) {
        let errs = errors(k);
        assert!(errs.iter().any(|e| e.contains(what)), "expected `{what}` among {errs:?}");
    }

    #[test]
    fn a_well_formed_kernel_passes() {
        assert_eq!(errors(&kernel()), Vec::<String>::new());
    }

    #[test]
    fn buffer_handles_in_range() {
        let mut k = kernel();
        k.body = vec![global_loop(64, 64, Trips::One, vec![store(BufId(7), Index::var(I), *lit())])];
        assert_rejected(&k, "access to buffer 7, which does not exist");
        let mut k = kernel();
        k.args.push(BufId(9));
        assert_rejected(&k, "kernel argument 9 is no buffer");
    }

    #[test]
    fn variables_bound_by_an_enclosing_loop() {
        let mut k = kernel();
        k.body.push(store(OUT, Index::var(I), *lit()));
        assert_rejected(&k, "body / [1]: index i uses `i`, which no enclosing loop binds");
        let mut k = kernel();
        let inner = global_loop(64, 64, Trips::One, vec![]);
        k.body = vec![global_loop(64, 64, Trips::One, vec![inner])];
        assert_rejected(&k, "loop variable `i` is bound by an enclosing loop");
    }

    #[test]
    fn stores_only_into_writable_buffers() {
        let mut k = kernel();
        k.body = vec![global_loop(64, 64, Trips::One, vec![store(X, Index::var(I), *lit())])];
        assert_rejected(&k, "store into the input `x`");
    }

    #[test]
    fn local_buffers_are_listed() {
        let mut k = kernel();
        k.buffers.push(buffer("sh", Space::Local, Role::Temp, vec![16]));
        assert_rejected(&k, "Local buffer `sh` is not listed as a local");
        k.locals.push(BufId(2));
        assert_eq!(errors(&k), Vec::<String>::new());
        k.locals.push(OUT);
        assert_rejected(&k, "local `out` is in Global memory");
    }

    #[test]
    fn private_buffers_declared_before_use() {
        let mut k = kernel();
        k.buffers.push(buffer("acc", Space::Private, Role::Temp, vec![]));
        let acc = BufId(2);
        let body = vec![store(acc, Index::constant(0), *lit()), Stmt::Decl(acc, None)];
        k.body = vec![global_loop(64, 64, Trips::One, body)];
        assert_rejected(&k, "`acc` is used where it is not declared");
        let body = vec![Stmt::Decl(acc, None), store(acc, Index::constant(0), *lit())];
        k.body = vec![global_loop(64, 64, Trips::One, body)];
        assert_eq!(errors(&k), Vec::<String>::new());
        // Out of its scope after the loop.
        k.body.push(store(OUT, Index::constant(0), load(acc, Index::constant(0))));
        assert_rejected(&k, "`acc` is used where it is not declared");
    }

    #[test]
    fn launch_shape_is_consistent() {
        let mut k = kernel();
        k.launch.local = [24, 1, 1];
        assert_rejected(&k, "local size 24 does not divide global size 64");
        let mut k = kernel();
        k.launch.dims = 0;
        assert_rejected(&k, "0 dimensions (1 to 3)");
        let mut k = kernel();
        k.launch.global[2] = 4;
        assert_rejected(&k, "dimension 2 is unused");
    }

    #[test]
    fn loops_agree_with_the_launch() {
        let mut k = kernel();
        k.body = vec![global_loop(64, 32, Trips::One, vec![])];
        assert_rejected(&k, "stride 32 over 64 threads");
        let mut k = kernel();
        k.body = vec![global_loop(100, 64, Trips::One, vec![])];
        assert_rejected(&k, "trips One for extent 100 and stride 64 (Loop expected)");
    }

    #[test]
    fn no_barrier_in_a_divergent_loop() {
        let barrier = Stmt::Barrier { global: false, reason: "test".into() };
        let mut k = kernel();
        k.body = vec![global_loop(100, 64, Trips::Loop, vec![barrier.clone()])];
        assert_rejected(&k, "barrier inside `mapGlb(0)@A`");
        k.body = vec![global_loop(128, 64, Trips::Loop, vec![barrier])];
        assert_eq!(errors(&k), Vec::<String>::new());
        k.body.push(Stmt::BarrierSlot(SlotId(3)));
        assert_rejected(&k, "barrier slot 3 left unresolved");
    }

    #[test]
    fn certain_overflows_are_refused() {
        let mut k = kernel();
        let body = vec![store(OUT, Index::var(I).plus(64), *lit())];
        k.body = vec![global_loop(64, 64, Trips::One, body)];
        assert_rejected(&k, "`out` accessed at 64..=127 (width 1), outside its 64 places");
        // In the arm of a select (a `pad` guard) the read may lie outside.
        let guarded = Expr::Select(
            Box::new(Expr::InRange(Index::var(I), 0, 64)),
            Box::new(load(X, Index::var(I).plus(64))),
            lit(),
        );
        k.body = vec![global_loop(64, 64, Trips::One, vec![store(OUT, Index::var(I), guarded)])];
        assert_eq!(errors(&k), Vec::<String>::new());
    }

    #[test]
    fn lowered_kernels_pass() {
        let p = mapsat_ir::parse(
            "size N = 64\ndef f(x: [f32]N) = join(mapWrg@W(0, fun(r => mapLcl@L(0, fun(v => v * 2.0), toLocal(mapLcl@C(0, fun(v => v), r)))), split(16, x)))",
        )
        .expect("parse");
        let k = crate::lower(&p, &crate::Options::default()).expect("lower");
        assert_eq!(errors(&k), Vec::<String>::new());
        assert!(k.body.iter().any(|s| matches!(s, Stmt::Loop { .. })));
    }
}
